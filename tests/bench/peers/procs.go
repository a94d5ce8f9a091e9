package peers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// stopTimeout is how long a process may take to exit after SIGTERM before
// it gets SIGKILL.
const stopTimeout = 30 * time.Second

// work is a run's directory: data of every server, their logs, and the
// pid file the Makefile's trap reads.
type work struct {
	dir string
	log io.Writer

	mu    sync.Mutex
	procs []*proc
}

// finish stops every process the run started and, unless keep, removes
// the work directory.
func (w *work) finish(keep bool) {
	w.stopAll()
	if !keep {
		_ = os.RemoveAll(w.dir)
	}
}

func newWork(dir string, log io.Writer) (*work, error) {
	if dir == "" {
		return nil, errors.New("peers: no work directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	if err := os.RemoveAll(abs); err != nil {
		return nil, fmt.Errorf("peers: clear work directory: %w", err)
	}
	if err := os.MkdirAll(abs, 0o755); err != nil {
		return nil, fmt.Errorf("peers: work directory: %w", err)
	}
	return &work{dir: abs, log: log}, nil
}

func (w *work) path(elem ...string) string { return filepath.Join(append([]string{w.dir}, elem...)...) }

// proc is a process this run started.
type proc struct {
	name string
	cmd  *exec.Cmd
	done chan struct{}
	err  error // after done
	log  string
}

// start runs bin with args and extra environment, its output in
// <work>/<name>.log, in a process group of its own.
func (w *work) start(name, bin string, args, env []string) (*proc, error) {
	logPath := w.path(name + ".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		f.Close()
		return nil, fmt.Errorf("start %s: %w", name, err)
	}
	p := &proc{name: name, cmd: cmd, done: make(chan struct{}), log: logPath}
	go func() {
		p.err = cmd.Wait()
		f.Close()
		close(p.done)
	}()
	w.mu.Lock()
	w.procs = append(w.procs, p)
	w.mu.Unlock()
	if err := w.appendPid(cmd.Process.Pid); err != nil {
		p.stop()
		return nil, err
	}
	return p, nil
}

func (w *work) appendPid(pid int) error {
	f, err := os.OpenFile(w.path("pids"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = fmt.Fprintln(f, pid)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func (p *proc) pid() int { return p.cmd.Process.Pid }

func (p *proc) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// stop sends SIGTERM and, after stopTimeout, SIGKILL; it returns once the
// process has exited.
func (p *proc) stop() {
	if p.exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopTimeout):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// tail is the last lines of the process's log, for error messages.
func (p *proc) tail(n int) string {
	b, err := os.ReadFile(p.log)
	if err != nil {
		return ""
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// stopAll stops every process still running, newest first.
func (w *work) stopAll() {
	w.mu.Lock()
	procs := append([]*proc(nil), w.procs...)
	w.mu.Unlock()
	for i := len(procs) - 1; i >= 0; i-- {
		procs[i].stop()
	}
}

// run runs bin to completion with its output appended to <work>/<name>.log;
// the error carries the log's tail.
func (w *work) run(ctx context.Context, name, bin string, args ...string) error {
	logPath := w.path(name + ".log")
	f, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	fmt.Fprintf(f, "$ %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGTERM) }
	cmd.WaitDelay = stopTimeout
	err = cmd.Run()
	f.Close()
	if err != nil {
		b, _ := os.ReadFile(logPath)
		lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
		if len(lines) > 15 {
			lines = lines[len(lines)-15:]
		}
		return fmt.Errorf("%s: %w\n%s", name, err, strings.Join(lines, "\n"))
	}
	return nil
}

// loadAvg1 is the 1-minute load average (-1 when /proc/loadavg is
// unreadable).
func loadAvg1() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return -1
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return -1
	}
	v, err := strconv.ParseFloat(f[0], 64)
	if err != nil {
		return -1
	}
	return v
}

// rssBytes is a process's VmRSS from /proc/<pid>/status.
func rssBytes(pid int) (uint64, error) {
	return procStatusKB(pid, "VmRSS:")
}

func procStatusKB(pid int, key string) (uint64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), key); ok {
			fs := strings.Fields(v)
			if len(fs) == 0 {
				break
			}
			kb, err := strconv.ParseUint(fs[0], 10, 64)
			if err != nil {
				return 0, err
			}
			return kb << 10, nil
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}

// rssSampler records the largest VmRSS of a process seen every 100 ms
// until stopped.
type rssSampler struct {
	stopc chan struct{}
	done  chan struct{}
	peak  uint64
}

func sampleRSS(pid int) *rssSampler {
	s := &rssSampler{stopc: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := rssBytes(pid); err == nil {
				s.peak = max(s.peak, v)
			}
			select {
			case <-s.stopc:
				return
			case <-t.C:
			}
		}
	}()
	return s
}

// stop ends sampling and returns the peak.
func (s *rssSampler) stop() uint64 {
	close(s.stopc)
	<-s.done
	return s.peak
}
