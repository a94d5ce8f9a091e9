package chaos

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/internal/chaos/fakenode"
	"github.com/iggo/iggo/internal/chaos/fault"
)

// FakeNodeEnv set to "1" makes any binary that links this package run the
// fake node (fakenode.Main with the process's arguments) instead of its
// main: the runner starts fake nodes by re-executing its own binary, which
// works from the iggo CLI, the iggo-chaos tool and test binaries alike.
const FakeNodeEnv = "IGGO_CHAOS_FAKENODE"

func init() {
	if os.Getenv(FakeNodeEnv) == "1" {
		os.Exit(fakenode.Main(os.Args[1:]))
	}
}

// Ports of a node inside its own network namespace.
const (
	netnsClientPort  = 8090
	netnsReplicaPort = 9090
	netnsGossipPort  = 10090
)

// clusterKey is the pre-shared key of the generated cluster configuration
// (cluster.auth; at least 32 bytes). It guards a test cluster on private
// addresses only.
const clusterKey = "iggo-chaos-cluster-key-0123456789abcdef"

// cluster is the system under test: node processes and their network.
type cluster struct {
	opts    Options
	workDir string
	procs   []*fault.Process
	nodes   []fault.Node
	// listen is where node i listens; addrs is where clients dial it.
	listen, replica, gossip []string
	addrs                   []string
	net                     fault.Network
	netKind                 string
}

func needsNetwork(o *Options) bool {
	for _, k := range o.Faults {
		if k.Network() {
			return true
		}
	}
	return false
}

// newCluster lays out the nodes and their network; it starts nothing.
func newCluster(o Options, workDir string) (_ *cluster, err error) {
	c := &cluster{opts: o, workDir: workDir}
	defer func() {
		if err != nil {
			c.close()
		}
	}()
	kind := o.Network
	if kind == NetworkAuto {
		switch {
		case !needsNetwork(&o):
			kind = NetworkNone
		case fault.NetnsAvailable() == nil:
			kind = NetworkNetns
		case o.Nodes == 1:
			kind = NetworkProxy
		default:
			return nil, fmt.Errorf("chaos: a %d-node cluster needs network namespaces: %v", o.Nodes, fault.NetnsAvailable())
		}
	}
	c.netKind = kind
	var nn *fault.Netns
	switch kind {
	case NetworkNetns:
		if nn, err = fault.NewNetns(o.Nodes); err != nil {
			return nil, err
		}
		c.net = nn
	case NetworkProxy:
		c.net = fault.NewProxy()
	}
	for i := 0; i < o.Nodes; i++ {
		if nn != nil {
			c.listen = append(c.listen, net.JoinHostPort(nn.NodeIP(i), strconv.Itoa(netnsClientPort)))
			c.replica = append(c.replica, net.JoinHostPort(nn.NodeIP(i), strconv.Itoa(netnsReplicaPort)))
			c.gossip = append(c.gossip, net.JoinHostPort(nn.NodeIP(i), strconv.Itoa(netnsGossipPort)))
		} else {
			var a [3]string
			for j := range a {
				if a[j], err = freeAddr(); err != nil {
					return nil, err
				}
			}
			c.listen, c.replica, c.gossip = append(c.listen, a[0]), append(c.replica, a[1]), append(c.gossip, a[2])
		}
	}
	for i := 0; i < o.Nodes; i++ {
		addr := c.listen[i]
		if p, ok := c.net.(*fault.Proxy); ok {
			if addr, err = p.Link(fault.Client, i, c.listen[i]); err != nil {
				return nil, err
			}
		}
		c.addrs = append(c.addrs, addr)
		spec, err := c.spec(i, nn)
		if err != nil {
			return nil, err
		}
		p := fault.NewProcess(spec)
		c.procs = append(c.procs, p)
		c.nodes = append(c.nodes, p)
	}
	return c, nil
}

func freeAddr() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer ln.Close()
	return ln.Addr().String(), nil
}

// spec is node i's command line: the fake node (this binary re-executed)
// or iggo-server with a generated configuration.
func (c *cluster) spec(i int, nn *fault.Netns) (fault.ProcessSpec, error) {
	o := c.opts
	dir := filepath.Join(c.workDir, fmt.Sprintf("node%d", i))
	data := filepath.Join(dir, "data")
	if err := os.MkdirAll(data, 0o755); err != nil {
		return fault.ProcessSpec{}, err
	}
	spec := fault.ProcessSpec{Name: fmt.Sprintf("node%d", i), DataDir: data, Dir: dir, LogPath: filepath.Join(dir, "node.log"),
		FreshArgs: []string{"--fresh"}}
	if nn != nil {
		spec.Wrap = nn.Wrap(i)
	}
	if o.Fake {
		exe, err := os.Executable()
		if err != nil {
			return spec, err
		}
		spec.Path = exe
		spec.Env = []string{FakeNodeEnv + "=1"}
		spec.Args = []string{"--addr", c.listen[i], "--data", data}
		if len(o.FakeBugs) > 0 {
			spec.Args = append(spec.Args, "--bug", strings.Join(o.FakeBugs, ","))
		}
		return spec, nil
	}
	cfgPath := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfgPath, []byte(c.serverConfig(i, data)), 0o644); err != nil {
		return spec, err
	}
	spec.Path = o.Server
	spec.Args = append([]string{"--config", cfgPath, "--replica-id", strconv.Itoa(i), "--with-default-root-credentials"}, o.ServerArgs...)
	return spec, nil
}

// serverConfig is node i's iggo-server configuration: its data directory
// and client listener, and with more than one node cluster mode: a test
// cluster name, the pre-shared replica key, short failure detection, and
// the roster (replica ids in node order) with every node's client, replica
// and gossip ports. The roster is identical in every node's file; the
// listener's host comes from [tcp].address, its port from the roster.
func (c *cluster) serverConfig(i int, data string) string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "path = %q\n\n", data)
	sb.WriteString("[sharding]\ncpu_allocation = 1\npin_cores = false\n\n")
	fmt.Fprintf(&sb, "[tcp]\nenabled = true\naddress = %q\n", c.listen[i])
	// The checker talks TCP only; nodes sharing a host must not race for
	// the default HTTP port.
	sb.WriteString("\n[http]\nenabled = false\n")
	if len(c.listen) == 1 {
		return sb.String()
	}
	// A heartbeat timeout at its floor (2 s) keeps view changes within a
	// fault's length.
	sb.WriteString("\n[cluster]\nenabled = true\nname = \"iggo-chaos\"\nheartbeat_timeout = \"2s\"\n")
	fmt.Fprintf(&sb, "\n[cluster.auth]\nenabled = true\nshared_secret = %q\n", clusterKey)
	for j := range c.listen {
		host, port, _ := net.SplitHostPort(c.listen[j])
		_, rport, _ := net.SplitHostPort(c.replica[j])
		_, gport, _ := net.SplitHostPort(c.gossip[j])
		fmt.Fprintf(&sb, "\n[[cluster.nodes]]\nname = \"chaos-node-%d\"\nip = %q\nreplica_id = %d\nports = { tcp = %s, tcp_replica = %s, gossip = %s }\n",
			j, host, j, port, rport, gport)
	}
	return sb.String()
}

// start starts node i (fresh: discarding its state) and waits until it
// serves.
func (c *cluster) start(ctx context.Context, i int, fresh bool) error {
	if err := c.nodes[i].Start(fresh); err != nil {
		return err
	}
	return c.waitReady(ctx, i)
}

// startAll starts the listed nodes together and waits until each serves:
// a cluster node serves a login only once a quorum of its peers runs, so
// they cannot be started one after another.
func (c *cluster) startAll(ctx context.Context, nodes []int) error {
	for _, i := range nodes {
		if err := c.nodes[i].Start(false); err != nil {
			return err
		}
	}
	var errs []error
	for _, i := range nodes {
		errs = append(errs, c.waitReady(ctx, i))
	}
	return errors.Join(errs...)
}

// waitReady waits until node i accepts a login and a ping.
func (c *cluster) waitReady(ctx context.Context, i int) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.BootTimeout)
	defer cancel()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{c.addrs[i]}
	cfg.Username, cfg.Password = c.opts.Username, c.opts.Password
	// Generous: a login hashes a password, which a busy machine (or a
	// node flooded by reconnecting clients) can make slow.
	cfg.DialTimeout, cfg.RequestTimeout = 2*time.Second, 10*time.Second
	cfg.Reconnect.Enabled = false
	cfg.HeartbeatInterval = 0
	cfg.MaxRedirects = 0
	var last error
	for {
		if exited, err := c.procs[i].Exited(); exited {
			return fmt.Errorf("chaos: node %d exited while booting (%v); log %s:\n%s", i, err, c.procs[i].Spec().LogPath, tail(c.procs[i].Spec().LogPath, 20))
		}
		cl, err := client.Dial(ctx, cfg)
		if err == nil {
			err = cl.Ping(ctx)
			cl.Close()
			if err == nil {
				return nil
			}
		}
		last = err
		select {
		case <-ctx.Done():
			return fmt.Errorf("chaos: node %d not serving after %v: %w (last error %v)", i, c.opts.BootTimeout, ctx.Err(), last)
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// tail returns the last n lines of a file.
func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	// A Go crash prints its reason above a long stack: show the reason and
	// the top of the stack rather than the bottom.
	for i := len(lines) - 1; i >= 0 && i >= len(lines)-2000; i-- {
		if strings.HasPrefix(lines[i], "panic:") || strings.HasPrefix(lines[i], "fatal error:") {
			end := min(len(lines), i+n+10)
			return strings.Join(lines[i:end], "\n")
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// close stops every node and tears the network down.
func (c *cluster) close() error {
	var errs []error
	for _, p := range c.procs {
		errs = append(errs, p.Stop())
	}
	if c.net != nil {
		errs = append(errs, c.net.Close())
	}
	return errors.Join(errs...)
}
