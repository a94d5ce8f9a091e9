package fault

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// procState is the state letter of /proc/<pid>/stat (R, S, T, Z...).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return "gone"
	}
	s := string(b)
	rest := s[strings.LastIndexByte(s, ')')+2:]
	return rest[:1]
}

func waitState(t *testing.T, pid int, want string) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		if procState(t, pid) == want {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("pid %d state %s, want %s", pid, procState(t, pid), want)
}

func TestProcessKillPauseRestart(t *testing.T) {
	p := NewProcess(ProcessSpec{Name: "sleep", Path: "sleep", Args: []string{"300"}, StopTimeout: time.Second})
	t.Cleanup(func() { p.Kill() })
	if p.Running() || p.Pid() != 0 {
		t.Fatal("running before start")
	}
	if err := p.Start(false); err != nil {
		t.Fatal(err)
	}
	if err := p.Start(false); err == nil {
		t.Fatal("second start of a running process accepted")
	}
	pid := p.Pid()
	if !p.Running() || pid == 0 {
		t.Fatal("not running after start")
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "T")
	if !p.Paused() || !p.Running() {
		t.Error("a paused process must count as running and paused")
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	waitState(t, pid, "S")
	if p.Paused() {
		t.Error("still paused after resume")
	}
	// Kill works on a paused process too.
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	if p.Running() || procState(t, pid) != "gone" {
		t.Fatalf("pid %d still there (%s)", pid, procState(t, pid))
	}
	exited, err := p.Exited()
	if !exited || err == nil || !strings.Contains(err.Error(), "killed") {
		t.Errorf("exit = %v, %v; want killed", exited, err)
	}
	if err := p.Kill(); err == nil {
		t.Error("killing a dead process succeeded")
	}
	if err := p.Start(false); err != nil {
		t.Fatal(err)
	}
	if p.Pid() == pid || p.Starts() != 2 {
		t.Errorf("restart: pid %d (was %d), starts %d", p.Pid(), pid, p.Starts())
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Error("running after stop")
	}
}

func TestProcessStopsAPausedProcess(t *testing.T) {
	p := NewProcess(ProcessSpec{Name: "sleep", Path: "sleep", Args: []string{"300"}, StopTimeout: 2 * time.Second})
	t.Cleanup(func() { p.Kill() })
	if err := p.Start(false); err != nil {
		t.Fatal(err)
	}
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	if p.Running() {
		t.Fatal("still running")
	}
	if _, err := p.Exited(); err == nil || !strings.Contains(err.Error(), "terminated") {
		t.Errorf("exit %v after %v: want SIGTERM to have worked", err, time.Since(start))
	}
}

func TestProcessFreshArgsEnvAndLog(t *testing.T) {
	dir := t.TempDir()
	log := filepath.Join(dir, "node.log")
	p := NewProcess(ProcessSpec{Name: "sh", Path: "sh", Args: []string{"-c", `echo "args:$0 $1 env:$CHAOS_X"`},
		FreshArgs: []string{"--fresh"}, Env: []string{"CHAOS_X=42"}, LogPath: log, DataDir: dir})
	for _, fresh := range []bool{false, true} {
		if err := p.Start(fresh); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for p.Running() && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
	}
	b, _ := os.ReadFile(log)
	out := string(b)
	for _, want := range []string{"args:--fresh  env:42", "(fresh true)", "(fresh false)"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
	if strings.Count(out, "env:42") != 2 {
		t.Errorf("log not appended across starts:\n%s", out)
	}
	if p.DataDir() != dir {
		t.Errorf("DataDir %q", p.DataDir())
	}
}

func TestProcessFaultsOnAnEchoServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	p := startEcho(t, echoSpec(t, "echo", addr, nil))
	if !echoes(addr, time.Second) {
		t.Fatal("echo server does not echo")
	}
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	// Paused: connections are accepted by the kernel but nothing answers.
	if err := p.Pause(); err != nil {
		t.Fatal(err)
	}
	waitState(t, p.Pid(), "T")
	if echoes(addr, 300*time.Millisecond) {
		t.Error("a paused server echoed")
	}
	if err := p.Resume(); err != nil {
		t.Fatal(err)
	}
	if !echoes(addr, 2*time.Second) {
		t.Error("no echo after resume")
	}

	// Killed: established connections break, new ones are refused.
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	if _, err := c.Read(make([]byte, 1)); err == nil {
		t.Error("connection survived kill -9")
	} else if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Error("connection neither closed nor reset after kill -9")
	}
	if echoes(addr, 300*time.Millisecond) {
		t.Error("a killed server echoed")
	}
	if err := p.Start(false); err != nil {
		t.Fatal(err)
	}
	waitCount(t, p.Spec().LogPath, "ready", 2)
	if !echoes(addr, 2*time.Second) {
		t.Error("no echo after restart")
	}
}
