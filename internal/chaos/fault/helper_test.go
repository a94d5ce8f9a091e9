package fault

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// The test binary doubles as the dummy processes the injectors act on:
// with IGGO_CHAOS_HELPER set, TestMain runs that helper instead of tests.
//
//	echo     TCP echo server on $ADDR, and a UDP listener on the same
//	         address that prints "udp <payload>" per datagram; prints
//	         "ready" once listening
//	probe    dials $ADDR, sends a line, exits 0 if it is echoed within
//	         $TIMEOUT (default 1s), 1 otherwise
//	udpsend  sends $MSG to $ADDR over UDP
func TestMain(m *testing.M) {
	switch os.Getenv("IGGO_CHAOS_HELPER") {
	case "":
		os.Exit(m.Run())
	case "echo":
		helperEcho(os.Getenv("ADDR"))
	case "probe":
		os.Exit(helperProbe(os.Getenv("ADDR")))
	case "udpsend":
		c, err := net.Dial("udp", os.Getenv("ADDR"))
		if err != nil {
			os.Exit(2)
		}
		c.Write([]byte(os.Getenv("MSG")))
		c.Close()
		os.Exit(0)
	default:
		os.Exit(3)
	}
}

func helperEcho(addr string) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Println("listen:", err)
		os.Exit(2)
	}
	pc, err := net.ListenPacket("udp", ln.Addr().String())
	if err != nil {
		fmt.Println("listen udp:", err)
		os.Exit(2)
	}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, _, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			fmt.Printf("udp %s\n", buf[:n])
		}
	}()
	fmt.Println("ready", ln.Addr())
	for {
		c, err := ln.Accept()
		if err != nil {
			os.Exit(0)
		}
		go func() {
			defer c.Close()
			io.Copy(c, c)
		}()
	}
}

func helperProbe(addr string) int {
	timeout := time.Second
	if d, err := time.ParseDuration(os.Getenv("TIMEOUT")); err == nil {
		timeout = d
	}
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return 1
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("probe\n")); err != nil {
		return 1
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	if err != nil || line != "probe\n" {
		return 1
	}
	return 0
}

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// echoSpec is a process spec running the echo helper on addr.
func echoSpec(t *testing.T, name, addr string, wrap []string) ProcessSpec {
	return ProcessSpec{Name: name, Path: self(t), Env: []string{"IGGO_CHAOS_HELPER=echo", "ADDR=" + addr}, Wrap: wrap,
		LogPath: t.TempDir() + "/" + name + ".log", StopTimeout: time.Second}
}

// startEcho starts the echo helper and waits until addr answers (from this
// namespace, or through probeWrap).
func startEcho(t *testing.T, spec ProcessSpec) *Process {
	t.Helper()
	p := NewProcess(spec)
	if err := p.Start(false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Kill() })
	waitLog(t, spec.LogPath, "ready")
	return p
}

func waitLog(t *testing.T, path, want string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		b, _ := os.ReadFile(path)
		if strings.Contains(string(b), want) {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	b, _ := os.ReadFile(path)
	t.Fatalf("%s never showed %q:\n%s", path, want, b)
}

func waitCount(t *testing.T, path, want string, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for countLog(path, want) < n {
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(path)
			t.Fatalf("%s shows %q %d times, want %d:\n%s", path, want, countLog(path, want), n, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func countLog(path, want string) int {
	b, _ := os.ReadFile(path)
	return strings.Count(string(b), want)
}

// echoes reports whether a TCP echo through addr works from here.
func echoes(addr string, timeout time.Duration) bool {
	c, err := net.DialTimeout("tcp", addr, timeout)
	if err != nil {
		return false
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(timeout))
	if _, err := c.Write([]byte("x\n")); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	return err == nil && line == "x\n"
}

// probeFrom runs the probe helper with wrap (a namespace) and reports
// whether it got its echo.
func probeFrom(t *testing.T, wrap []string, addr string) bool {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	argv := append(append([]string(nil), wrap...), self(t))
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "IGGO_CHAOS_HELPER=probe", "ADDR="+addr, "TIMEOUT=700ms")
	return cmd.Run() == nil
}

// reaches is probeFrom for links that must work: a loaded machine can miss
// one probe's deadline (spawning the helper in a namespace included), so it
// tries up to four times. Links that must be cut use probeFrom once.
func reaches(t *testing.T, wrap []string, addr string) bool {
	t.Helper()
	for try := 0; try < 4; try++ {
		if probeFrom(t, wrap, addr) {
			return true
		}
		time.Sleep(250 * time.Millisecond)
	}
	return false
}

func udpFrom(t *testing.T, wrap []string, addr, msg string) {
	t.Helper()
	argv := append(append([]string(nil), wrap...), self(t))
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), "IGGO_CHAOS_HELPER=udpsend", "ADDR="+addr, "MSG="+msg)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("udpsend: %v %s", err, out)
	}
}
