package version

import (
	"runtime/debug"
	"testing"
)

func TestFromBuildInfo(t *testing.T) {
	savedDate, savedCommit := buildDate, commit
	defer func() { buildDate, commit = savedDate, savedCommit }()
	for _, c := range []struct {
		name      string
		bi        *debug.BuildInfo
		ok        bool
		buildDate string
		commit    string
		want      string
	}{
		{"no build info", nil, false, "", "", Version + " (commit unknown, built unknown, go1.26.0)"},
		{"no vcs stamp", &debug.BuildInfo{GoVersion: "go1.26.0"}, true, "", "", Version + " (commit unknown, built unknown, go1.26.0)"},
		{"linked commit, no stamp (a git worktree)", &debug.BuildInfo{GoVersion: "go1.26.0"}, true, "2026-12-01T10:00:00Z", "89abcdef0123-dirty",
			Version + " (commit 89abcdef0123-dirty, built 2026-12-01T10:00:00Z, go1.26.0)"},
		{"stamped", &debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{
			{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
			{Key: "vcs.time", Value: "2026-12-01T09:00:00Z"}, {Key: "vcs.modified", Value: "false"}}}, true,
			"2026-12-01T10:00:00Z", "89abcdef0123", Version + " (commit 0123456789ab of 2026-12-01T09:00:00Z, built 2026-12-01T10:00:00Z, go1.26.0)"},
		{"dirty tree", &debug.BuildInfo{GoVersion: "go1.26.0", Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: "abc"}, {Key: "vcs.modified", Value: "true"}}}, true,
			"", "", Version + " (commit abc-dirty, built unknown, go1.26.0)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			buildDate, commit = c.buildDate, c.commit
			in := fromBuildInfo(c.bi, c.ok)
			in.Go = map[bool]string{true: in.Go, false: "go1.26.0"}[c.ok && c.bi != nil]
			if got := in.String(); got != c.want {
				t.Fatalf("got  %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestLine(t *testing.T) {
	got := Line("iggo-server")
	want := "iggo-server " + Get().format("0.11")
	if got != want || got[len(got)-len("; protocol 0.11)"):] != "; protocol 0.11)" {
		t.Fatalf("Line = %q", got)
	}
}
