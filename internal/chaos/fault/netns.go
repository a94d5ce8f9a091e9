package fault

import (
	"bytes"
	"cmp"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Netns is a private network for the nodes of one run:
//
//	node ns i:  lo, eth0 = 10.a.b.(i+1)/24 ─┐ veth
//	hub ns:     bridge br0 ── v0, v1, ..., host
//	runner ns:  icx<id> = 10.a.b.254/24 ────┘ veth (the clients' side)
//
// Each node process runs inside its namespace (Wrap) and listens on its
// own IP. Partitions are a ruleset of the hub's bridge (nftables family
// bridge, forward hook): `ip saddr A ip daddr B drop` per blocked
// direction, so packets vanish in the middle of the network like on a real
// switch and the endpoints see silence. Isolation sets the node's port on
// the bridge down. Nothing is installed in the runner's namespace except
// the one veth end and its address.
type Netns struct {
	id     string
	subnet string // "10.a.b"
	hub    string
	nodes  []string
	rootIf string

	mu       sync.Mutex
	blocked  map[[2]int]bool
	isolated map[int]bool
	closed   bool
}

// netnsPrefix starts every namespace name; the creating process id follows
// so SweepNetns can find leftovers of dead runners.
const netnsPrefix = "iggochaos-"

// NetnsAvailable reports why network namespaces cannot be used here (nil
// when they can): they need root, `ip` and `nft`.
func NetnsAvailable() error {
	if os.Geteuid() != 0 {
		return errors.New("fault: network namespaces need root")
	}
	for _, tool := range []string{"ip", "nft"} {
		if _, err := exec.LookPath(tool); err != nil {
			return fmt.Errorf("fault: network namespaces need %q: %w", tool, err)
		}
	}
	return nil
}

func ipCmd(stdin string, args ...string) error {
	cmd := exec.Command(args[0], args[1:]...)
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("fault: %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return nil
}

// NewNetns builds the network for n nodes. On error everything created so
// far is removed.
func NewNetns(n int) (_ *Netns, err error) {
	if err := NetnsAvailable(); err != nil {
		return nil, err
	}
	if n < 1 || n > 250 {
		return nil, fmt.Errorf("fault: netns for %d nodes (1..250)", n)
	}
	SweepNetns()
	var raw [3]byte
	if _, err := rand.Read(raw[:]); err != nil {
		return nil, err
	}
	id := hex.EncodeToString(raw[:])
	subnet, err := freeSubnet()
	if err != nil {
		return nil, err
	}
	base := fmt.Sprintf("%s%d-%s-", netnsPrefix, os.Getpid(), id)
	t := &Netns{id: id, subnet: subnet, hub: base + "hub", rootIf: "icx" + id,
		blocked: map[[2]int]bool{}, isolated: map[int]bool{}}
	for i := 0; i < n; i++ {
		t.nodes = append(t.nodes, fmt.Sprintf("%sn%d", base, i))
	}
	defer func() {
		if err != nil {
			t.Close()
		}
	}()
	steps := [][]string{
		{"ip", "netns", "add", t.hub},
		{"ip", "-n", t.hub, "link", "set", "lo", "up"},
		{"ip", "-n", t.hub, "link", "add", "br0", "type", "bridge"},
		{"ip", "-n", t.hub, "link", "set", "br0", "up"},
	}
	for i, ns := range t.nodes {
		steps = append(steps,
			[]string{"ip", "netns", "add", ns},
			[]string{"ip", "-n", ns, "link", "set", "lo", "up"},
			[]string{"ip", "-n", t.hub, "link", "add", t.port(i), "type", "veth", "peer", "name", "eth0", "netns", ns},
			[]string{"ip", "-n", t.hub, "link", "set", t.port(i), "master", "br0", "up"},
			[]string{"ip", "-n", ns, "addr", "add", t.NodeIP(i) + "/24", "dev", "eth0"},
			[]string{"ip", "-n", ns, "link", "set", "eth0", "up"},
		)
	}
	steps = append(steps,
		[]string{"ip", "link", "add", t.rootIf, "type", "veth", "peer", "name", "host", "netns", t.hub},
		[]string{"ip", "-n", t.hub, "link", "set", "host", "master", "br0", "up"},
		[]string{"ip", "addr", "add", t.HostIP() + "/24", "dev", t.rootIf},
		[]string{"ip", "link", "set", t.rootIf, "up"},
	)
	for _, s := range steps {
		if err := ipCmd("", s...); err != nil {
			return nil, err
		}
	}
	if err := t.applyRules(); err != nil {
		return nil, err
	}
	return t, nil
}

// freeSubnet picks a 10.a.b.0/24 that no address or route here uses.
func freeSubnet() (string, error) {
	out, err := exec.Command("ip", "-4", "-o", "addr").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("fault: ip addr: %w: %s", err, out)
	}
	routes, err := exec.Command("ip", "-4", "route").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("fault: ip route: %w: %s", err, routes)
	}
	used := string(out) + string(routes)
	for i := 0; i < 64; i++ {
		var b [2]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", err
		}
		s := fmt.Sprintf("10.%d.%d", 100+int(b[0])%150, b[1])
		if !strings.Contains(used, s+".") {
			return s, nil
		}
	}
	return "", errors.New("fault: no free 10.x.y.0/24 subnet")
}

func (t *Netns) port(i int) string { return "v" + strconv.Itoa(i) }

// NodeIP is node i's address.
func (t *Netns) NodeIP(i int) string { return fmt.Sprintf("%s.%d", t.subnet, i+1) }

// HostIP is the clients' address (the runner's end).
func (t *Netns) HostIP() string { return t.subnet + ".254" }

// Namespace is node i's namespace name.
func (t *Netns) Namespace(i int) string { return t.nodes[i] }

// Namespaces lists every namespace of the network, hub first.
func (t *Netns) Namespaces() []string { return append([]string{t.hub}, t.nodes...) }

// Wrap is the command prefix that runs a program inside node i's
// namespace.
func (t *Netns) Wrap(i int) []string { return []string{"ip", "netns", "exec", t.nodes[i]} }

func (t *Netns) ip(i int) (string, error) {
	switch {
	case i == Client:
		return t.HostIP(), nil
	case i >= 0 && i < len(t.nodes):
		return t.NodeIP(i), nil
	}
	return "", fmt.Errorf("fault: no node %d in a %d-node network", i, len(t.nodes))
}

// Block implements Network.
func (t *Netns) Block(from, to int) error {
	if _, err := t.ip(from); err != nil {
		return err
	}
	if _, err := t.ip(to); err != nil {
		return err
	}
	if from == to {
		return fmt.Errorf("fault: block %d -> %d: same endpoint", from, to)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("fault: network closed")
	}
	t.blocked[[2]int{from, to}] = true
	return t.applyRulesLocked()
}

// Isolate implements Network: node i's port on the bridge goes down.
func (t *Netns) Isolate(i int) error {
	if i < 0 || i >= len(t.nodes) {
		return fmt.Errorf("fault: isolate: no node %d", i)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("fault: network closed")
	}
	if err := ipCmd("", "ip", "-n", t.hub, "link", "set", t.port(i), "down"); err != nil {
		return err
	}
	t.isolated[i] = true
	return nil
}

// Heal implements Network.
func (t *Netns) Heal() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return errors.New("fault: network closed")
	}
	var errs []error
	for _, i := range sortedInts(t.isolated) {
		if err := ipCmd("", "ip", "-n", t.hub, "link", "set", t.port(i), "up"); err != nil {
			errs = append(errs, err)
			continue
		}
		delete(t.isolated, i)
	}
	clear(t.blocked)
	errs = append(errs, t.applyRulesLocked())
	return errors.Join(errs...)
}

func (t *Netns) applyRules() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.applyRulesLocked()
}

// applyRulesLocked replaces the hub's ruleset atomically (one nft
// transaction: declare, delete, define).
func (t *Netns) applyRulesLocked() error {
	var sb strings.Builder
	sb.WriteString("table bridge iggochaos\ndelete table bridge iggochaos\n")
	sb.WriteString("table bridge iggochaos {\n  chain forward {\n    type filter hook forward priority 0; policy accept;\n")
	pairs := make([][2]int, 0, len(t.blocked))
	for p := range t.blocked {
		pairs = append(pairs, p)
	}
	slices.SortFunc(pairs, func(a, b [2]int) int { return cmp.Or(cmp.Compare(a[0], b[0]), cmp.Compare(a[1], b[1])) })
	for _, p := range pairs {
		from, _ := t.ip(p[0])
		to, _ := t.ip(p[1])
		fmt.Fprintf(&sb, "    ip saddr %s ip daddr %s drop\n", from, to)
	}
	sb.WriteString("  }\n}\n")
	return ipCmd(sb.String(), "ip", "netns", "exec", t.hub, "nft", "-f", "-")
}

// Close implements Network: deletes the namespaces (which removes their
// links, and with the hub the runner-side veth). Processes still running
// inside must be stopped first; their namespace disappears when they exit.
func (t *Netns) Close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil
	}
	t.closed = true
	var errs []error
	for _, ns := range append([]string{t.hub}, t.nodes...) {
		if err := ipCmd("", "ip", "netns", "del", ns); err != nil && !strings.Contains(err.Error(), "No such file") {
			errs = append(errs, err)
		}
	}
	if err := ipCmd("", "ip", "link", "del", t.rootIf); err != nil && !strings.Contains(err.Error(), "Cannot find device") {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// SweepNetns deletes namespaces left by runners that no longer exist
// (their names carry the creator's process id) and returns their names.
func SweepNetns() []string {
	out, err := exec.Command("ip", "netns", "list").Output()
	if err != nil {
		return nil
	}
	var swept []string
	for _, line := range strings.Split(string(out), "\n") {
		name, _, _ := strings.Cut(strings.TrimSpace(line), " ")
		rest, ok := strings.CutPrefix(name, netnsPrefix)
		if !ok {
			continue
		}
		pidStr, _, _ := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(pidStr)
		if err != nil || pid == os.Getpid() {
			continue
		}
		if _, err := os.Stat("/proc/" + pidStr); err == nil {
			continue // its runner lives
		}
		if ipCmd("", "ip", "netns", "del", name) == nil {
			swept = append(swept, name)
		}
	}
	return swept
}

func sortedInts(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
