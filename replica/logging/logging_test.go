package logging

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
)

func TestParseLevels(t *testing.T) {
	cases := []struct {
		spec string
		want map[string]zapcore.Level
	}{
		{"info", map[string]zapcore.Level{"": zapcore.InfoLevel, "replica": zapcore.InfoLevel}},
		{"TRACE", map[string]zapcore.Level{"x": zapcore.DebugLevel}},
		{"off", map[string]zapcore.Level{"replica.conn": Off}},
		{"warn,replica=debug", map[string]zapcore.Level{
			"": zapcore.WarnLevel, "server": zapcore.WarnLevel, "replica": zapcore.DebugLevel,
			"replica.conn": zapcore.DebugLevel, "replicas": zapcore.WarnLevel}},
		{"replica=error,replica.plane=debug,info", map[string]zapcore.Level{
			"replica": zapcore.ErrorLevel, "replica.plane": zapcore.DebugLevel,
			"replica.plane.x": zapcore.DebugLevel, "replica.planet": zapcore.ErrorLevel, "server": zapcore.InfoLevel}},
		{"error, server::shard = warn", map[string]zapcore.Level{"server.shard": zapcore.WarnLevel, "server": zapcore.ErrorLevel}},
		{"replica=debug,replica=error", map[string]zapcore.Level{"replica": zapcore.ErrorLevel}},
		{"replica.conn=none", map[string]zapcore.Level{"replica.conn": Off, "replica": zapcore.InfoLevel}},
	}
	for _, c := range cases {
		l, err := ParseLevels(c.spec)
		if err != nil {
			t.Errorf("%q: %v", c.spec, err)
			continue
		}
		for name, want := range c.want {
			if got := l.For(name); got != want {
				t.Errorf("%q: For(%q) = %v, want %v", c.spec, name, got, want)
			}
		}
	}
	for _, bad := range []string{"", "loud", "=debug", "replica=loud", "replica=debug,chatty"} {
		if _, err := ParseLevels(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}

func readJSONLines(t *testing.T, path string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []map[string]any
	for _, line := range bytes.Split(bytes.TrimSpace(b), []byte("\n")) {
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

// TestPerTargetLevels logs from several named loggers at every level and
// checks which lines reach stdout and the file.
func TestPerTargetLevels(t *testing.T) {
	dir := t.TempDir()
	var stdout bytes.Buffer
	l, err := New(Options{Level: "warn,replica.conn=debug,replica.plane=off", Dir: dir, Stdout: &stdout})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"server", "replica", "replica.conn", "replica.plane"} {
		lg := l.Named(name)
		lg.Debug("debug from " + name)
		lg.Info("info from " + name)
		lg.Warn("warn from " + name)
	}
	l.Named("replica").Named("conn").With().Debug("debug from nested replica.conn")
	l.Close()
	want := []string{
		"warn from server", "warn from replica",
		"debug from replica.conn", "info from replica.conn", "warn from replica.conn",
		"debug from nested replica.conn",
	}
	var got []string
	for _, m := range readJSONLines(t, filepath.Join(dir, FileName)) {
		got = append(got, m["msg"].(string))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("file lines %q, want %q", got, want)
	}
	for _, w := range want {
		if !strings.Contains(stdout.String(), w) {
			t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
		}
	}
	for _, never := range []string{"info from server\n", "debug from replica\n", "info from replica\n", "replica.plane"} {
		if strings.Contains(stdout.String(), never) {
			t.Errorf("stdout has %q:\n%s", never, stdout.String())
		}
	}
}

func writeAged(t *testing.T, path string, size int, age time.Duration, now time.Time) {
	t.Helper()
	if err := os.WriteFile(path, bytes.Repeat([]byte("x"), size), 0o644); err != nil {
		t.Fatal(err)
	}
	at := now.Add(-age)
	if err := os.Chtimes(path, at, at); err != nil {
		t.Fatal(err)
	}
}

func names(t *testing.T, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// TestCleanupRetentionAndTotal: rotated files older than retention go,
// then the oldest while the rest exceed max_total_size; the active file
// and unrelated files stay whatever their age.
func TestCleanupRetentionAndTotal(t *testing.T) {
	now := time.Now()
	day := 24 * time.Hour
	cases := []struct {
		name  string
		opts  FileOptions
		files map[string]time.Duration // suffix → age, 100 bytes each
		want  []string
	}{
		{"retention only", FileOptions{Retention: 7 * day},
			map[string]time.Duration{"1": time.Hour, "2": 3 * day, "3": 8 * day, "4": 30 * day},
			[]string{FileName, FileName + ".1", FileName + ".2", "other.log"}},
		{"retention off", FileOptions{},
			map[string]time.Duration{"1": time.Hour, "2": 300 * day},
			[]string{FileName, FileName + ".1", FileName + ".2", "other.log"}},
		{"total only", FileOptions{MaxTotal: 250},
			map[string]time.Duration{"1": time.Hour, "2": 2 * time.Hour, "3": 3 * time.Hour},
			[]string{FileName, FileName + ".1", FileName + ".2", "other.log"}},
		{"both", FileOptions{Retention: day, MaxTotal: 150},
			map[string]time.Duration{"1": time.Hour, "2": 2 * time.Hour, "3": 2 * day},
			[]string{FileName, FileName + ".1", "other.log"}},
	}
	for _, c := range cases {
		dir := t.TempDir()
		writeAged(t, filepath.Join(dir, FileName), 100, 90*day, now)
		writeAged(t, filepath.Join(dir, "other.log"), 100, 90*day, now)
		for suffix, age := range c.files {
			writeAged(t, filepath.Join(dir, FileName+"."+suffix), 100, age, now)
		}
		f, err := OpenFile(filepath.Join(dir, FileName), c.opts)
		if err != nil {
			t.Fatal(err)
		}
		f.Cleanup(now)
		_ = f.Close()
		if got := names(t, dir); !slices.Equal(got, c.want) {
			t.Errorf("%s: left %q, want %q", c.name, got, c.want)
		}
	}
}

// TestRotation: writes past max_file_size rotate the file, the newest
// rotated copy is .1, and max_total_size bounds the rotated copies.
func TestRotation(t *testing.T) {
	dir := t.TempDir()
	f, err := OpenFile(filepath.Join(dir, FileName), FileOptions{MaxSize: 100, MaxTotal: 200})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 10; i++ {
		if _, err := f.Write([]byte(strings.Repeat(string(rune('a'+i)), 60) + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	_ = f.Close()
	if got, want := names(t, dir), []string{FileName, FileName + ".1", FileName + ".2", FileName + ".3"}; !slices.Equal(got, want) {
		t.Fatalf("files %q, want %q", got, want)
	}
	for suffix, letter := range map[string]string{"": "j", ".1": "i", ".2": "h", ".3": "g"} {
		b, _ := os.ReadFile(filepath.Join(dir, FileName+suffix))
		if !strings.HasPrefix(string(b), letter) {
			t.Errorf("%s%s holds %q, want the %s line", FileName, suffix, b, letter)
		}
	}
}

// TestCleanupPassRuns: with a check interval the logger's own pass deletes
// an expired rotated file without any rotation.
func TestCleanupPassRuns(t *testing.T) {
	dir := t.TempDir()
	now := time.Now()
	old := filepath.Join(dir, FileName+".1")
	fresh := filepath.Join(dir, FileName+".2")
	writeAged(t, old, 10, 48*time.Hour, now)
	writeAged(t, fresh, 10, time.Minute, now)
	var stdout bytes.Buffer
	l, err := New(Options{Level: "info", Dir: dir, Stdout: &stdout,
		File: FileOptions{Retention: time.Hour}, CheckInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := os.Stat(old); os.IsNotExist(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the cleanup pass did not delete the expired rotated file within 30 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Fatalf("the fresh rotated file is gone: %v", err)
	}
	l.Close()
	found := false
	for _, m := range readJSONLines(t, filepath.Join(dir, FileName)) {
		if m["msg"] == "rotated log files deleted" && m["logger"] == "logging" {
			found = true
		}
	}
	if !found {
		t.Error("no log line names the deleted files")
	}
}
