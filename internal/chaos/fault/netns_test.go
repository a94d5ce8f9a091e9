package fault

import (
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"
)

func netnsList(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "netns", "list").CombinedOutput()
	if err != nil {
		t.Fatalf("ip netns list: %v %s", err, out)
	}
	return string(out)
}

func linkExists(name string) bool {
	return exec.Command("ip", "link", "show", name).Run() == nil
}

// TestNetnsPartitions runs an echo server in each of three node
// namespaces and checks what crosses the network under blocks, isolation
// and healing, from the runner's namespace and from node to node. Without
// root, ip or nft it checks that the namespaces refuse to start, which is
// when the runner falls back to the proxy.
func TestNetnsPartitions(t *testing.T) {
	if err := NetnsAvailable(); err != nil {
		if _, nerr := NewNetns(3); nerr == nil {
			t.Fatalf("NetnsAvailable says %v, yet NewNetns worked", err)
		}
		return
	}
	n, err := NewNetns(3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	const port = "7700"
	addr := func(i int) string { return net.JoinHostPort(n.NodeIP(i), port) }
	for i := 0; i < 3; i++ {
		startEcho(t, echoSpec(t, "echo"+string(rune('0'+i)), addr(i), n.Wrap(i)))
	}

	// Healthy: the runner reaches every node, and every node every other.
	for i := 0; i < 3; i++ {
		if !echoes(addr(i), 2*time.Second) {
			t.Fatalf("runner cannot reach node %d", i)
		}
	}
	if !reaches(t, n.Wrap(0), addr(1)) || !reaches(t, n.Wrap(2), addr(0)) {
		t.Fatal("nodes cannot reach each other")
	}

	// One-way block 0 -> 1 (direction is checked with datagrams in
	// TestNetnsOneWayDatagrams): TCP needs both ways, so 0 -> 1 and 1 -> 0
	// connections both fail.
	if err := n.Block(0, 1); err != nil {
		t.Fatal(err)
	}
	if probeFrom(t, n.Wrap(0), addr(1)) || probeFrom(t, n.Wrap(1), addr(0)) {
		t.Error("TCP between 0 and 1 works through a 0 -> 1 block")
	}
	if !reaches(t, n.Wrap(0), addr(2)) || !reaches(t, n.Wrap(2), addr(1)) {
		t.Error("a 0 -> 1 block cut other links")
	}
	if !echoes(addr(0), time.Second) || !echoes(addr(1), time.Second) {
		t.Error("a 0 -> 1 block cut the clients")
	}

	// Isolation: node 2 is gone for everyone, the others are fine.
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	if err := n.Isolate(2); err != nil {
		t.Fatal(err)
	}
	if echoes(addr(2), 500*time.Millisecond) {
		t.Error("runner reaches isolated node 2")
	}
	if probeFrom(t, n.Wrap(1), addr(2)) || probeFrom(t, n.Wrap(2), addr(1)) {
		t.Error("isolated node 2 talks to node 1")
	}
	if !reaches(t, n.Wrap(1), addr(0)) || !echoes(addr(0), time.Second) {
		t.Error("isolating node 2 cut others")
	}

	// Blocking the clients from a node.
	if err := n.Block(Client, 1); err != nil {
		t.Fatal(err)
	}
	if echoes(addr(1), 500*time.Millisecond) {
		t.Error("runner reaches node 1 through a client block")
	}

	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ {
		if !echoes(addr(i), 3*time.Second) {
			t.Errorf("after heal the runner cannot reach node %d", i)
		}
	}
	if !reaches(t, n.Wrap(0), addr(1)) || !reaches(t, n.Wrap(2), addr(1)) {
		t.Error("after heal nodes cannot reach each other")
	}
	if err := n.Block(0, 7); err == nil {
		t.Error("block to a node that does not exist accepted")
	}

	names := n.Namespaces()
	root := n.rootIf
	// Close with the helpers still running: their namespaces must go too.
	if err := n.Close(); err != nil {
		t.Fatal(err)
	}
	list := netnsList(t)
	for _, ns := range names {
		if strings.Contains(list, ns) {
			t.Errorf("namespace %s left behind", ns)
		}
	}
	if linkExists(root) {
		t.Errorf("runner-side veth %s left behind", root)
	}
	if err := n.Block(0, 1); err == nil {
		t.Error("block on a closed network accepted")
	}
}

// TestNetnsOneWayDatagrams checks direction precisely with UDP, which
// needs no answer.
func TestNetnsOneWayDatagrams(t *testing.T) {
	if NetnsAvailable() != nil {
		return // covered by TestNetnsPartitions' fallback assertion
	}
	n, err := NewNetns(2)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close() })
	const port = "7701"
	specs := []ProcessSpec{
		echoSpec(t, "u0", net.JoinHostPort(n.NodeIP(0), port), n.Wrap(0)),
		echoSpec(t, "u1", net.JoinHostPort(n.NodeIP(1), port), n.Wrap(1)),
	}
	for _, s := range specs {
		startEcho(t, s)
	}
	if err := n.Block(0, 1); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 3; i++ { // datagrams may race the listener; send a few
		udpFrom(t, n.Wrap(1), net.JoinHostPort(n.NodeIP(0), port), "one-to-zero")
		udpFrom(t, n.Wrap(0), net.JoinHostPort(n.NodeIP(1), port), "zero-to-one")
	}
	waitLog(t, specs[0].LogPath, "udp one-to-zero")
	time.Sleep(200 * time.Millisecond)
	if countLog(specs[1].LogPath, "zero-to-one") != 0 {
		t.Error("datagram crossed a 0 -> 1 block")
	}
	if err := n.Heal(); err != nil {
		t.Fatal(err)
	}
	udpFrom(t, n.Wrap(0), net.JoinHostPort(n.NodeIP(1), port), "zero-to-one")
	waitLog(t, specs[1].LogPath, "udp zero-to-one")
}

func TestSweepNetnsRemovesOrphans(t *testing.T) {
	if NetnsAvailable() != nil {
		if got := SweepNetns(); len(got) != 0 {
			t.Errorf("swept %v without namespace support", got)
		}
		return
	}
	// A namespace named after a process id that cannot exist.
	name := netnsPrefix + "999999999-dead-n0"
	if err := ipCmd("", "ip", "netns", "add", name); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ipCmd("", "ip", "netns", "del", name) })
	mine := netnsPrefix + "1-live-n0" // pid 1 is alive
	if err := ipCmd("", "ip", "netns", "add", mine); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ipCmd("", "ip", "netns", "del", mine) })
	swept := SweepNetns()
	list := netnsList(t)
	if strings.Contains(list, name) || !contains(swept, name) {
		t.Errorf("orphan %s not swept (swept %v)", name, swept)
	}
	if !strings.Contains(list, mine) {
		t.Errorf("namespace of a live process swept")
	}
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
