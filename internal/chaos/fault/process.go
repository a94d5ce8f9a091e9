package fault

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"
)

// ProcessSpec describes how to run one node as a local process.
type ProcessSpec struct {
	// Name labels the process in errors and logs.
	Name string
	Path string
	Args []string
	// FreshArgs are appended to Args when the node is started fresh.
	FreshArgs []string
	// Env is added to the runner's environment.
	Env []string
	// Dir is the working directory ("" inherits the runner's).
	Dir string
	// DataDir is the node's data directory (for wipes and corruption).
	DataDir string
	// Wrap prefixes the command line, for example `ip netns exec <ns>`
	// (which execs, so the process id stays the server's).
	Wrap []string
	// LogPath receives stdout and stderr, appended across restarts; ""
	// discards them.
	LogPath string
	// StopTimeout bounds a graceful stop (SIGTERM) before SIGKILL; 0 means
	// 5 s.
	StopTimeout time.Duration
}

// Process is a local node process. It runs in its own process group and
// dies with the runner (PDEATHSIG). Its methods are safe for concurrent
// use.
type Process struct {
	spec ProcessSpec

	mu      sync.Mutex
	cmd     *exec.Cmd
	done    chan struct{} // closed when the current process has exited
	exitErr error
	paused  bool
	starts  int
}

// NewProcess returns an unstarted process.
func NewProcess(spec ProcessSpec) *Process {
	if spec.StopTimeout <= 0 {
		spec.StopTimeout = 5 * time.Second
	}
	return &Process{spec: spec}
}

// Spec returns the process's spec.
func (p *Process) Spec() ProcessSpec { return p.spec }

// DataDir implements Node.
func (p *Process) DataDir() string { return p.spec.DataDir }

// Start implements Node.
func (p *Process) Start(fresh bool) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.runningLocked() {
		return fmt.Errorf("fault: start %s: already running (pid %d)", p.spec.Name, p.cmd.Process.Pid)
	}
	argv := append(append([]string(nil), p.spec.Wrap...), p.spec.Path)
	argv = append(argv, p.spec.Args...)
	if fresh {
		argv = append(argv, p.spec.FreshArgs...)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), p.spec.Env...)
	cmd.Dir = p.spec.Dir
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	var logf *os.File
	if p.spec.LogPath != "" {
		f, err := os.OpenFile(p.spec.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("fault: start %s: %w", p.spec.Name, err)
		}
		fmt.Fprintf(f, "=== %s start %d (fresh %v) at %s: %q\n", p.spec.Name, p.starts+1, fresh, time.Now().Format(time.RFC3339Nano), argv)
		cmd.Stdout, cmd.Stderr = f, f
		logf = f
	} else {
		cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	}
	if err := cmd.Start(); err != nil {
		if logf != nil {
			logf.Close()
		}
		return fmt.Errorf("fault: start %s: %w", p.spec.Name, err)
	}
	p.starts++
	p.cmd, p.done, p.exitErr, p.paused = cmd, make(chan struct{}), nil, false
	done := p.done
	go func() {
		err := cmd.Wait()
		if logf != nil {
			logf.Close()
		}
		p.mu.Lock()
		if p.cmd == cmd {
			p.exitErr = err
		}
		p.mu.Unlock()
		close(done)
	}()
	return nil
}

func (p *Process) runningLocked() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Running implements Node.
func (p *Process) Running() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.runningLocked()
}

// Pid is the current process id (0 when not running).
func (p *Process) Pid() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return 0
	}
	return p.cmd.Process.Pid
}

// Starts counts successful starts.
func (p *Process) Starts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.starts
}

// Exited reports whether the last started process has exited, and how.
func (p *Process) Exited() (bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil {
		return false, nil
	}
	select {
	case <-p.done:
		return true, p.exitErr
	default:
		return false, nil
	}
}

// signal sends sig to the process group of the running process.
func (p *Process) signal(sig syscall.Signal) (chan struct{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.runningLocked() {
		return nil, fmt.Errorf("fault: %v to %s: not running", sig, p.spec.Name)
	}
	pid := p.cmd.Process.Pid
	if err := syscall.Kill(-pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return nil, fmt.Errorf("fault: %v to %s (pid %d): %w", sig, p.spec.Name, pid, err)
	}
	switch sig {
	case syscall.SIGSTOP:
		p.paused = true
	case syscall.SIGCONT, syscall.SIGKILL:
		p.paused = false
	}
	return p.done, nil
}

// Kill implements Node: SIGKILL to the process group, then wait.
func (p *Process) Kill() error {
	done, err := p.signal(syscall.SIGKILL)
	if err != nil {
		return err
	}
	select {
	case <-done:
		return nil
	case <-time.After(30 * time.Second):
		return fmt.Errorf("fault: %s survived SIGKILL for 30 s", p.spec.Name)
	}
}

// Pause implements Node (SIGSTOP).
func (p *Process) Pause() error {
	_, err := p.signal(syscall.SIGSTOP)
	return err
}

// Resume implements Node (SIGCONT).
func (p *Process) Resume() error {
	_, err := p.signal(syscall.SIGCONT)
	return err
}

// Paused reports whether the process was paused and not resumed.
func (p *Process) Paused() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.paused && p.runningLocked()
}

// Stop ends the process gracefully: SIGCONT (a paused process cannot act
// on SIGTERM), SIGTERM, then SIGKILL after StopTimeout. Stopping a process
// that is not running is a no-op.
func (p *Process) Stop() error {
	if !p.Running() {
		return nil
	}
	if _, err := p.signal(syscall.SIGCONT); err != nil {
		return nil // exited meanwhile
	}
	done, err := p.signal(syscall.SIGTERM)
	if err != nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-time.After(p.spec.StopTimeout):
	}
	if err := p.Kill(); err != nil && p.Running() {
		return err
	}
	return nil
}
