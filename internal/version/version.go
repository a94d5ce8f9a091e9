// Package version is what iggo-server and iggo report as their version:
// the project version, the commit it was built from and when it was built.
//
// The commit comes from the Go toolchain's VCS stamp
// (runtime/debug.ReadBuildInfo: vcs.revision, vcs.time, vcs.modified),
// which `go build -buildvcs=true` records; the Makefile turns it on when
// the checkout is a git work tree. The toolchain does not stamp a linked
// git worktree (its .git is a file), so the Makefile also links the commit
// in (-X github.com/iggo/iggo/internal/version.commit=<12 hex>[-dirty]),
// used when there is no stamp, and the build date
// (-X github.com/iggo/iggo/internal/version.buildDate=<RFC 3339>). A binary
// built with neither reports "unknown" for what it lacks: a plain
// `go build`, `go test` or a build from a tarball still works.
package version

import (
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"

	"github.com/iggo/iggo/wire"
)

// Version is the project version: the Iggy server release iggo follows
// (0.9.0) with iggo's suffix. The login reply and GET_STATS report it too.
const Version = "0.9.0-iggo"

// buildDate and commit are set by the Makefile's link flags.
var buildDate, commit string

// Info is what a binary knows about its build.
type Info struct {
	Version string
	// Commit is the VCS revision (12 hex digits, "-dirty" when the tree had
	// uncommitted changes), or "unknown".
	Commit string
	// CommitTime is the revision's commit time (RFC 3339), or "".
	CommitTime string
	// BuildDate is when the binary was linked (RFC 3339), or "unknown".
	BuildDate string
	Go        string
}

var (
	once sync.Once
	info Info
)

// Get returns this binary's Info.
func Get() Info {
	once.Do(func() { info = fromBuildInfo(debug.ReadBuildInfo()) })
	return info
}

func fromBuildInfo(bi *debug.BuildInfo, ok bool) Info {
	in := Info{Version: Version, Commit: "unknown", BuildDate: "unknown", Go: runtime.Version()}
	if buildDate != "" {
		in.BuildDate = buildDate
	}
	if commit != "" {
		in.Commit = commit
	}
	if !ok || bi == nil {
		return in
	}
	if bi.GoVersion != "" {
		in.Go = bi.GoVersion
	}
	var rev string
	dirty := false
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			in.CommitTime = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if rev != "" {
		if len(rev) > 12 {
			rev = rev[:12]
		}
		if dirty {
			rev += "-dirty"
		}
		in.Commit = rev
	}
	return in
}

// String is the version both binaries print after their name:
// "0.9.0-iggo (commit 1a2b3c4d5e6f of 2026-12-01T09:00:00Z, built
// 2026-12-01T10:00:00Z, go1.26.0)".
func (in Info) String() string { return in.format("") }

func (in Info) format(protocol string) string {
	var b strings.Builder
	b.WriteString(in.Version)
	b.WriteString(" (commit ")
	b.WriteString(in.Commit)
	if in.Commit != "unknown" && in.CommitTime != "" {
		b.WriteString(" of " + in.CommitTime)
	}
	b.WriteString(", built " + in.BuildDate)
	b.WriteString(", " + in.Go)
	if protocol != "" {
		b.WriteString("; protocol " + protocol)
	}
	b.WriteString(")")
	return b.String()
}

// String is Get().String().
func String() string { return Get().String() }

// Line is what `<name> --version` prints (without the newline): the name,
// then the version, commit, build date and the wire protocol spoken
// (major.minor of wire.CurrentProtocol: "0.11").
func Line(name string) string {
	major, minor, _ := wire.CurrentProtocol.Parts()
	return name + " " + Get().format(strconv.FormatUint(uint64(major), 10)+"."+strconv.FormatUint(uint64(minor), 10))
}
