package fault

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

// CommandRunner runs a command and returns its combined output; tests
// substitute it to check what would be run.
type CommandRunner func(name string, args ...string) ([]byte, error)

func execRunner(name string, args ...string) ([]byte, error) {
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		return out, fmt.Errorf("fault: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return out, nil
}

// DockerNode is a node running as a container (a compose cluster). The
// data directory lives in the container, so wipes and corruption are not
// available; a fresh start is not either (the container's command is
// fixed by the compose file).
type DockerNode struct {
	Container string
	// Run executes the docker CLI; nil runs it for real.
	Run CommandRunner
}

func (d *DockerNode) run(args ...string) ([]byte, error) {
	r := d.Run
	if r == nil {
		r = execRunner
	}
	return r("docker", args...)
}

// Start implements Node.
func (d *DockerNode) Start(fresh bool) error {
	if fresh {
		return fmt.Errorf("%w: fresh start of container %s", ErrUnsupported, d.Container)
	}
	_, err := d.run("start", d.Container)
	return err
}

// Kill implements Node.
func (d *DockerNode) Kill() error {
	_, err := d.run("kill", "--signal", "KILL", d.Container)
	return err
}

// Pause implements Node (the cgroup freezer, like SIGSTOP).
func (d *DockerNode) Pause() error {
	_, err := d.run("pause", d.Container)
	return err
}

// Resume implements Node.
func (d *DockerNode) Resume() error {
	_, err := d.run("unpause", d.Container)
	return err
}

// Running implements Node.
func (d *DockerNode) Running() bool {
	out, err := d.run("inspect", "--format", "{{.State.Running}}", d.Container)
	return err == nil && strings.TrimSpace(string(out)) == "true"
}

// DataDir implements Node: not reachable from the host.
func (d *DockerNode) DataDir() string { return "" }

// DockerNetwork partitions the containers of one docker bridge network.
// Isolation disconnects a container from the network (and reconnects it
// with its address on Heal); one-way blocks are host iptables rules in the
// DOCKER-USER chain, which sees bridged container traffic, tagged with a
// comment so Heal removes exactly those.
type DockerNetwork struct {
	Network    string
	Containers []string
	// IPs are the containers' addresses on Network, by node index; the
	// clients' address (for blocks involving Client) is ClientIP.
	IPs      []string
	ClientIP string
	Run      CommandRunner

	mu       sync.Mutex
	blocked  [][2]int
	isolated []int
}

const dockerRuleTag = "iggo-chaos"

func (d *DockerNetwork) run(name string, args ...string) error {
	r := d.Run
	if r == nil {
		r = execRunner
	}
	_, err := r(name, args...)
	return err
}

func (d *DockerNetwork) ip(i int) (string, error) {
	switch {
	case i == Client && d.ClientIP != "":
		return d.ClientIP, nil
	case i >= 0 && i < len(d.IPs):
		return d.IPs[i], nil
	}
	return "", fmt.Errorf("fault: docker network: no address for node %d", i)
}

func (d *DockerNetwork) rule(op string, from, to string) []string {
	return []string{op, "DOCKER-USER", "-s", from, "-d", to, "-m", "comment", "--comment", dockerRuleTag, "-j", "DROP"}
}

// Block implements Network.
func (d *DockerNetwork) Block(from, to int) error {
	a, err := d.ip(from)
	if err != nil {
		return err
	}
	b, err := d.ip(to)
	if err != nil {
		return err
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.run("iptables", d.rule("-I", a, b)...); err != nil {
		return err
	}
	d.blocked = append(d.blocked, [2]int{from, to})
	return nil
}

// Isolate implements Network.
func (d *DockerNetwork) Isolate(i int) error {
	if i < 0 || i >= len(d.Containers) {
		return fmt.Errorf("fault: docker network: no container %d", i)
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if err := d.run("docker", "network", "disconnect", "--force", d.Network, d.Containers[i]); err != nil {
		return err
	}
	d.isolated = append(d.isolated, i)
	return nil
}

// Heal implements Network.
func (d *DockerNetwork) Heal() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var errs []error
	for _, i := range d.isolated {
		args := []string{"network", "connect"}
		if i < len(d.IPs) && d.IPs[i] != "" {
			args = append(args, "--ip", d.IPs[i])
		}
		errs = append(errs, d.run("docker", append(args, d.Network, d.Containers[i])...))
	}
	d.isolated = nil
	for _, p := range d.blocked {
		a, _ := d.ip(p[0])
		b, _ := d.ip(p[1])
		errs = append(errs, d.run("iptables", d.rule("-D", a, b)...))
	}
	d.blocked = nil
	return errors.Join(errs...)
}

// Close implements Network (heals; the network itself belongs to compose).
func (d *DockerNetwork) Close() error { return d.Heal() }
