// Package localcluster is `iggo cluster up|start|status|down`: a local
// cluster of background iggo-server processes for development and
// benchmarks.
//
// `up` lays out a directory (default ./local_cluster):
//
//	cluster.toml      the configuration every node shares: [cluster] enabled,
//	                  its name, auth on, and the [[cluster.nodes]] roster
//	secret            the pre-shared key (0600), generated once and reused, so
//	                  `up` after `down` restarts the same cluster on its data;
//	                  it reaches the servers as IGGY_CLUSTER_AUTH_SHARED_SECRET
//	                  and is never written into cluster.toml
//	state.json        what is running: server binary and arguments, nodes, pids
//	node-<i>/data     node i's data directory (IGGY_PATH)
//	node-<i>/server.log  node i's stdout and stderr
//
// Node i listens for clients on 127.0.0.1:(base+i), on the replica plane at
// base+1000+i, for gossip at base+2000+i and serves the HTTP API at
// base+3000+i (base 8090: 8090.., 9090.., 10090.., 11090..), with the web
// console (http.web_ui) at /ui/ on it. The processes run in their own session,
// so they outlive the command. A one-node "cluster" runs with clustering off
// (the same code path with a quorum of one).
//
// `up` on a directory whose cluster still has running nodes starts only
// the nodes that are down (a crashed node after a whole-cluster restart),
// with the layout, binary and arguments state.json recorded; `start NODE`
// does the same for one node. Both wait until the node answers a ping.
//
// `status` reads state.json and asks every node, in parallel and each
// within --timeout: whether its process is alive, whether it answers a
// ping (no login needed), and what it reports about itself in its own
// cluster metadata (role, health, and whom it sees as leader; this needs a
// login, which needs a metadata quorum). It says when fewer nodes answer
// than a quorum needs, and exits 3 unless every node runs, answers and
// reports its role. `down` stops every process (SIGTERM, SIGKILL after
// --timeout) and removes state.json; with --purge it removes the whole
// directory.
package localcluster

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/cmd/iggo/internal/cli"
	"github.com/iggo/iggo/internal/pki"
	"github.com/iggo/iggo/wire"
)

// Defaults.
const (
	DefaultDir      = "local_cluster"
	DefaultBasePort = 8090
	DefaultName     = "iggo-local"
	// Port offsets from the base port of node 0.
	ReplicaPortOffset = 1000
	GossipPortOffset  = 2000
	HTTPPortOffset    = 3000
	// MaxNodes bounds --nodes (the wire roster's limit is 64; a local
	// cluster of more than 9 is of no use on one machine).
	MaxNodes   = 9
	stateFile  = "state.json"
	secretFile = "secret"
	configFile = "cluster.toml"
)

// Root credentials the nodes create on first start.
const (
	RootUsername = "iggy"
	RootPassword = "iggy"
)

// State is state.json.
type State struct {
	Name   string `json:"name"`
	Server string `json:"server"`
	// Args are the extra iggo-server arguments (--server-arg) every node
	// runs with, reused when a node is started again.
	Args    []string    `json:"server_args,omitempty"`
	Dir     string      `json:"dir"`
	Started time.Time   `json:"started"`
	Nodes   []NodeState `json:"nodes"`
}

// NodeState is one node of State.
type NodeState struct {
	ID          int    `json:"id"`
	Name        string `json:"name"`
	IP          string `json:"ip"`
	TCPPort     int    `json:"tcp_port"`
	ReplicaPort int    `json:"replica_port"`
	GossipPort  int    `json:"gossip_port"`
	HTTPPort    int    `json:"http_port"`
	PID         int    `json:"pid"`
	DataDir     string `json:"data_dir"`
	Log         string `json:"log"`
	// CAFile, CertFile and KeyFile are set when the cluster serves TLS
	// (up --tls): the CA clients trust and the node's certificate.
	CAFile   string `json:"tls_ca_file,omitempty"`
	CertFile string `json:"tls_cert_file,omitempty"`
	KeyFile  string `json:"tls_key_file,omitempty"`
}

// Addr is the node's client address.
func (n NodeState) Addr() string { return net.JoinHostPort(n.IP, strconv.Itoa(n.TCPPort)) }

// ConsoleURL is the node's web console (http.web_ui, on its HTTP port).
func (n NodeState) ConsoleURL() string {
	return "http://" + net.JoinHostPort(n.IP, strconv.Itoa(n.HTTPPort)) + "/ui/"
}

// Extensions returns the up, start, status and down subcommands of
// `iggo cluster`.
func Extensions() []cli.Extension {
	return []cli.Extension{
		{Parent: "cluster", New: upCmd},
		{Parent: "cluster", New: certsCmd},
		{Parent: "cluster", New: startCmd},
		{Parent: "cluster", New: statusCmd},
		{Parent: "cluster", New: downCmd},
	}
}

// ReadState loads dir/state.json.
func ReadState(dir string) (*State, error) {
	b, err := os.ReadFile(filepath.Join(dir, stateFile))
	if err != nil {
		return nil, err
	}
	var s State
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, stateFile), err)
	}
	return &s, nil
}

func writeState(dir string, s *State) error {
	b, err := json.MarshalIndent(s, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(dir, stateFile+".tmp")
	if err := os.WriteFile(tmp, append(b, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(dir, stateFile))
}

// Alive reports whether node n of st runs: its recorded pid is a live
// process (not a zombie) started as that node, with this cluster's
// configuration file and the node's replica id on its command line. A pid
// the system reused for another program, or for a server of another
// cluster, is not taken for the node (Down would signal it).
func (st *State) Alive(n NodeState) bool {
	return nodeProcess(n.PID, filepath.Join(st.Dir, configFile), n.ID, st.Server)
}

// nodeProcess reports whether pid is a live process started by startNode
// with configuration file config and replica id id from server.
func nodeProcess(pid int, config string, id int, server string) bool {
	if pid <= 0 {
		return false
	}
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return false
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err == nil {
		// pid (comm) S ...: state Z is a zombie.
		if i := strings.LastIndexByte(string(stat), ')'); i > 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
			return false
		}
	}
	cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return !errors.Is(err, os.ErrNotExist) // no /proc: trust kill(0)
	}
	if len(cmdline) == 0 {
		// A process still in execve has no command line yet: the kernel
		// sets it once it has mapped the new image, after the parent's
		// exec.Cmd.Start has returned, and that takes milliseconds when
		// the binary is not in the page cache. Its executable is the new
		// one already. (A kernel thread, or a process exiting whose memory
		// is gone, has neither.)
		exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
		if err != nil {
			return false
		}
		if resolved, err := filepath.EvalSymlinks(server); err == nil {
			server = resolved
		}
		return exe == server
	}
	args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
	return hasArg(args, "--config", config) && hasArg(args, "--replica-id", strconv.Itoa(id))
}

// hasArg reports whether args hold flag followed by value.
func hasArg(args []string, flag, value string) bool {
	for i := 0; i+1 < len(args); i++ {
		if args[i] == flag && args[i+1] == value {
			return true
		}
	}
	return false
}

// gone reports whether pid has exited: no such process, or a zombie (or
// dead) one awaiting its reaper. Unlike Alive it does not look at the
// command line, which a process tearing down loses before it has exited.
func gone(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil && !errors.Is(err, syscall.EPERM) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return errors.Is(err, os.ErrNotExist)
	}
	i := strings.LastIndexByte(string(stat), ')')
	return i > 0 && i+2 < len(stat) && (stat[i+2] == 'Z' || stat[i+2] == 'X')
}

func localErr(format string, args ...any) error {
	return &cli.LocalError{Err: fmt.Errorf(format, args...)}
}

// findServer locates iggo-server: --server, else next to this executable,
// else on PATH.
func findServer(flag string) (string, error) {
	if flag != "" {
		p, err := filepath.Abs(flag)
		if err != nil {
			return "", err
		}
		if _, err := os.Stat(p); err != nil {
			return "", localErr("--server %s: %v", flag, err)
		}
		return p, nil
	}
	if exe, err := os.Executable(); err == nil {
		p := filepath.Join(filepath.Dir(exe), "iggo-server")
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if p, err := exec.LookPath("iggo-server"); err == nil {
		return filepath.Abs(p)
	}
	return "", localErr("iggo-server not found next to iggo or on PATH; build it (make build) or pass --server")
}

// secret returns dir/secret, creating it on first use.
func secret(dir string) (string, error) {
	p := filepath.Join(dir, secretFile)
	if b, err := os.ReadFile(p); err == nil {
		s := strings.TrimSpace(string(b))
		if len(s) < 32 {
			return "", localErr("%s holds %d bytes; the cluster key needs at least 32", p, len(s))
		}
		return s, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	var b [24]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	s := hex.EncodeToString(b[:])
	return s, os.WriteFile(p, []byte(s+"\n"), 0o600)
}

// Config renders cluster.toml for nodes (clustering off for one node).
func Config(name string, nodes []NodeState) string {
	var sb strings.Builder
	sb.WriteString("# Generated by `iggo cluster up`; shared by every node. Each node's data\n")
	sb.WriteString("# path and client address come from IGGY_PATH and IGGY_TCP_ADDRESS, the key\n")
	sb.WriteString("# from IGGY_CLUSTER_AUTH_SHARED_SECRET (see the file `secret`).\n\n")
	sb.WriteString("[sharding]\npin_cores = false\n\n")
	sb.WriteString("# The web console at http://<ip>:<http port>/ui/ on every node.\n[http]\nweb_ui = true\n\n")
	if len(nodes) == 1 {
		fmt.Fprintf(&sb, "[cluster]\nenabled = false\nname = %q\n", name)
		return sb.String()
	}
	fmt.Fprintf(&sb, "[cluster]\nenabled = true\nname = %q\n\n[cluster.auth]\nenabled = true\n", name)
	for _, n := range nodes {
		fmt.Fprintf(&sb, "\n[[cluster.nodes]]\nname = %q\nip = %q\nreplica_id = %d\nports = { tcp = %d, tcp_replica = %d, gossip = %d, http = %d }\n",
			n.Name, n.IP, n.ID, n.TCPPort, n.ReplicaPort, n.GossipPort, n.HTTPPort)
	}
	return sb.String()
}

func portFree(ip string, port int, udp bool) error {
	addr := net.JoinHostPort(ip, strconv.Itoa(port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	ln.Close()
	if udp {
		pc, err := net.ListenPacket("udp", addr)
		if err != nil {
			return err
		}
		pc.Close()
	}
	return nil
}

type upOptions struct {
	nodes    int
	dir      string
	basePort int
	server   string
	name     string
	fresh    bool
	wait     time.Duration
	args     []string
	tls      bool
	changed  func(flag string) bool
}

func upCmd(env *cli.Env) *cobra.Command {
	var o upOptions
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Start a local cluster of background iggo-server processes",
		Long: `Start a local cluster: N iggo-server processes on 127.0.0.1, node i serving
clients on base-port+i (replica plane base-port+1000+i, gossip base-port+2000+i),
each with its own data directory under --dir. The processes keep running after
this command returns; stop them with 'iggo cluster down'. Running 'up' again
on the same directory restarts the same cluster on its data; while some of its
nodes still run, it starts only the nodes that are down (with the layout,
binary and server arguments recorded when the cluster was started).`,
		Example: `  iggo cluster up --nodes 3
  iggo cluster up --nodes 3 --dir /tmp/c1 --base-port 18090
  iggo cluster up --tls       # then: iggo --tcp-tls-enabled --tls-ca-file local_cluster/certs/ca.pem ...
  iggo cluster up             # after a node crashed: restarts just that node
  iggo --tcp-server-address 127.0.0.1:8090 -u iggy -p iggy stream list`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.changed = cmd.Flags().Changed
			return up(cmd.Context(), env, o)
		},
	}
	f := cmd.Flags()
	f.IntVar(&o.nodes, "nodes", 3, "number of nodes (1..9)")
	f.StringVar(&o.dir, "dir", DefaultDir, "directory for the configuration, state, data and logs")
	f.IntVar(&o.basePort, "base-port", DefaultBasePort, "client port of node 0")
	f.StringVar(&o.server, "server", "", "iggo-server binary (default: next to iggo, else on PATH)")
	f.StringVar(&o.name, "name", DefaultName, "cluster name (fixed at first start of the data)")
	f.BoolVar(&o.fresh, "fresh", false, "wipe every node's data before starting")
	f.DurationVar(&o.wait, "wait", 90*time.Second, "how long to wait for every node to serve")
	f.StringArrayVar(&o.args, "server-arg", nil, "extra iggo-server argument (repeatable)")
	f.BoolVar(&o.tls, "tls", false, "serve clients over TLS: generate a CA and a certificate per node under <dir>/certs (kept across runs)")
	return cmd
}

func up(ctx context.Context, env *cli.Env, o upOptions) error {
	if o.nodes < 1 || o.nodes > MaxNodes {
		return cli.Usagef("--nodes must be 1..%d, got %d", MaxNodes, o.nodes)
	}
	if o.basePort < 1 || o.basePort+HTTPPortOffset+o.nodes-1 > 65535 {
		return cli.Usagef("--base-port %d leaves no room for %d nodes (http ports end at base+%d)", o.basePort, o.nodes, HTTPPortOffset+o.nodes-1)
	}
	if o.wait <= 0 {
		return cli.Usagef("--wait must be positive")
	}
	dir, err := filepath.Abs(o.dir)
	if err != nil {
		return localErr("%v", err)
	}
	if old, err := ReadState(dir); err == nil {
		for _, n := range old.Nodes {
			if old.Alive(n) {
				return upRunning(ctx, env, o, old)
			}
		}
	}
	server, err := findServer(o.server)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return localErr("%v", err)
	}
	key, err := secret(dir)
	if err != nil {
		return err
	}
	st := &State{Name: o.name, Server: server, Args: o.args, Dir: dir, Started: time.Now().UTC().Truncate(time.Second)}
	for i := 0; i < o.nodes; i++ {
		nd := filepath.Join(dir, fmt.Sprintf("node-%d", i))
		n := NodeState{ID: i, Name: fmt.Sprintf("node-%d", i), IP: "127.0.0.1", TCPPort: o.basePort + i,
			ReplicaPort: o.basePort + ReplicaPortOffset + i, GossipPort: o.basePort + GossipPortOffset + i,
			HTTPPort: o.basePort + HTTPPortOffset + i,
			DataDir:  filepath.Join(nd, "data"), Log: filepath.Join(nd, "server.log")}
		if err := portsFree(n, o.nodes); err != nil {
			return err
		}
		if o.fresh {
			if err := os.RemoveAll(n.DataDir); err != nil {
				return localErr("%v", err)
			}
		}
		if err := os.MkdirAll(nd, 0o755); err != nil {
			return localErr("%v", err)
		}
		st.Nodes = append(st.Nodes, n)
	}
	if o.tls {
		if err := issueCerts(dir, st.Nodes); err != nil {
			return err
		}
	}
	cfgPath := filepath.Join(dir, configFile)
	if err := os.WriteFile(cfgPath, []byte(Config(o.name, st.Nodes)), 0o644); err != nil {
		return localErr("%v", err)
	}
	var procs []*os.Process
	stopAll := func() {
		for _, p := range procs {
			_ = p.Signal(syscall.SIGKILL)
			_, _ = p.Wait()
		}
	}
	for i := range st.Nodes {
		p, err := startNode(st, &st.Nodes[i], key)
		if err != nil {
			stopAll()
			return err
		}
		procs = append(procs, p)
	}
	// The processes are reaped by init once this command exits; until then
	// Wait would block, so liveness is checked through /proc.
	if err := writeState(dir, st); err != nil {
		stopAll()
		return localErr("%v", err)
	}
	env.Statusf("Starting %d node(s) of cluster %q in %s ...", o.nodes, o.name, dir)
	if err := waitServing(ctx, st, o.wait); err != nil {
		stopAll()
		_ = os.Remove(filepath.Join(dir, stateFile))
		return err
	}
	printUp(env.Out, st, o.dir, fmt.Sprintf("Started a %s in %s", clusterKind(st), st.Dir))
	return nil
}

// upRunning is `up` on a cluster some of whose nodes run: it starts the
// others with the recorded layout, binary and arguments.
func upRunning(ctx context.Context, env *cli.Env, o upOptions, st *State) error {
	var running []string
	for _, n := range st.Nodes {
		if st.Alive(n) {
			running = append(running, fmt.Sprintf("%s pid %d", n.Name, n.PID))
		}
	}
	switch {
	case o.fresh:
		return localErr("--fresh: the cluster in %s is running (%s); stop it first with `iggo cluster down --dir %s`",
			st.Dir, strings.Join(running, ", "), o.dir)
	case o.changed("nodes") && o.nodes != len(st.Nodes):
		return cli.Usagef("the cluster running in %s has %d nodes, not %d; stop it (`iggo cluster down`) to change its layout", st.Dir, len(st.Nodes), o.nodes)
	case o.changed("base-port") && o.basePort != st.Nodes[0].TCPPort:
		return cli.Usagef("the cluster running in %s has base port %d, not %d; stop it (`iggo cluster down`) to change its layout", st.Dir, st.Nodes[0].TCPPort, o.basePort)
	case o.changed("name") && o.name != st.Name:
		return cli.Usagef("the cluster running in %s is named %q, not %q", st.Dir, st.Name, o.name)
	}
	if o.changed("server") {
		server, err := findServer(o.server)
		if err != nil {
			return err
		}
		st.Server = server
	}
	if o.changed("server-arg") {
		st.Args = o.args
	}
	var down []int
	for i, n := range st.Nodes {
		if !st.Alive(n) {
			down = append(down, i)
		}
	}
	if len(down) == 0 {
		printUp(env.Out, st, o.dir, fmt.Sprintf("The %s in %s is already running", clusterKind(st), st.Dir))
		return nil
	}
	if err := restart(ctx, env, st, down, o.wait); err != nil {
		return err
	}
	var names []string
	for _, i := range down {
		names = append(names, st.Nodes[i].Name)
	}
	printUp(env.Out, st, o.dir, fmt.Sprintf("Restarted %s (%d of %d nodes were down) in %s", strings.Join(names, ", "), len(down), len(st.Nodes), st.Dir))
	return nil
}

func startCmd(env *cli.Env) *cobra.Command {
	var dir string
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "start NODE",
		Short: "Start one node of the local cluster started by 'iggo cluster up'",
		Long: `Start one node (by name, node-<i>, or replica id) of the local cluster in --dir,
with the layout, binary and server arguments recorded when the cluster was
started, and wait until it answers a ping. A node that is running already is
left alone.`,
		Example: `  iggo cluster start node-2
  iggo cluster start 2 --dir /tmp/c1`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error { return startOne(cmd.Context(), env, dir, args[0], wait) },
	}
	cmd.Flags().StringVar(&dir, "dir", DefaultDir, "the directory given to 'iggo cluster up'")
	cmd.Flags().DurationVar(&wait, "wait", 90*time.Second, "how long to wait for the node to answer a ping")
	return cmd
}

func startOne(ctx context.Context, env *cli.Env, dir, which string, wait time.Duration) error {
	if wait <= 0 {
		return cli.Usagef("--wait must be positive")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return localErr("%v", err)
	}
	st, err := ReadState(abs)
	if errors.Is(err, os.ErrNotExist) {
		return localErr("no local cluster in %s (start one with `iggo cluster up`)", dir)
	}
	if err != nil {
		return localErr("%v", err)
	}
	idx := -1
	for i, n := range st.Nodes {
		if n.Name == which || strconv.Itoa(n.ID) == which {
			idx = i
		}
	}
	if idx < 0 {
		var names []string
		for _, n := range st.Nodes {
			names = append(names, n.Name)
		}
		return cli.Usagef("no node %q in the cluster in %s (nodes: %s)", which, dir, strings.Join(names, ", "))
	}
	n := st.Nodes[idx]
	if st.Alive(n) {
		env.Statusf("%s is already running (pid %d)", n.Name, n.PID)
		return nil
	}
	if err := restart(ctx, env, st, []int{idx}, wait); err != nil {
		return err
	}
	env.Statusf("Started %s (pid %d) on %s; log %s", n.Name, st.Nodes[idx].PID, n.Addr(), n.Log)
	return nil
}

// restart starts the nodes at idx of st (none of them running), records
// their pids and waits until each answers a ping.
func restart(ctx context.Context, env *cli.Env, st *State, idx []int, wait time.Duration) error {
	if _, err := os.Stat(st.Server); err != nil {
		return localErr("the recorded server binary %s: %v; pass --server", st.Server, err)
	}
	key, err := secret(st.Dir)
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(st.Dir, configFile)); err != nil {
		return localErr("%s lacks %s: %v", st.Dir, configFile, err)
	}
	for _, i := range idx {
		if err := portsFree(st.Nodes[i], len(st.Nodes)); err != nil {
			return err
		}
	}
	var procs []*os.Process
	for _, i := range idx {
		p, err := startNode(st, &st.Nodes[i], key)
		if err != nil {
			for _, p := range procs {
				_ = p.Signal(syscall.SIGKILL)
				_, _ = p.Wait()
			}
			return err
		}
		procs = append(procs, p)
	}
	if err := writeState(st.Dir, st); err != nil {
		return localErr("%v", err)
	}
	env.Statusf("Starting %d node(s) of cluster %q in %s ...", len(idx), st.Name, st.Dir)
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	for _, i := range idx {
		if err := waitPing(ctx, st, st.Nodes[i], wait); err != nil {
			return err
		}
	}
	return nil
}

// portsFree checks node n's client port and, in a cluster of more than
// one node, its replica and gossip ports.
func portsFree(n NodeState, nodes int) error {
	for _, p := range []struct {
		what string
		port int
		udp  bool
	}{{"client", n.TCPPort, false}, {"http", n.HTTPPort, false}, {"replica", n.ReplicaPort, false}, {"gossip", n.GossipPort, true}} {
		if nodes == 1 && p.what != "client" && p.what != "http" {
			continue
		}
		if err := portFree(n.IP, p.port, p.udp); err != nil {
			return localErr("%s port %d of node %d is not free (%v); choose another --base-port", p.what, p.port, n.ID, err)
		}
	}
	return nil
}

// startNode starts node n of st in the background, appending its output
// to its log, and records its pid in n.
func startNode(st *State, n *NodeState, key string) (*os.Process, error) {
	logf, err := os.OpenFile(n.Log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, localErr("%v", err)
	}
	defer logf.Close()
	args := append([]string{"--config", filepath.Join(st.Dir, configFile), "--replica-id", strconv.Itoa(n.ID),
		"--with-default-root-credentials"}, st.Args...)
	c := exec.Command(st.Server, args...)
	if len(st.Nodes) == 1 {
		key = "" // clustering off: no replica plane to authenticate
	}
	c.Env = nodeEnv(n, key)
	c.Stdout, c.Stderr = logf, logf
	c.Dir = st.Dir
	c.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := c.Start(); err != nil {
		return nil, localErr("starting %s: %v", st.Server, err)
	}
	n.PID = c.Process.Pid
	return c.Process, nil
}

func nodeEnv(n *NodeState, key string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IGGY_") {
			env = append(env, kv)
		}
	}
	env = append(env, "IGGY_PATH="+n.DataDir, "IGGY_TCP_ADDRESS="+n.Addr(),
		"IGGY_HTTP_ADDRESS="+net.JoinHostPort(n.IP, strconv.Itoa(n.HTTPPort)))
	if n.CertFile != "" {
		env = append(env, "IGGY_TCP_TLS_ENABLED=true", "IGGY_TCP_TLS_SELF_SIGNED=false",
			"IGGY_TCP_TLS_CERT_FILE="+n.CertFile, "IGGY_TCP_TLS_KEY_FILE="+n.KeyFile)
	}
	if key != "" {
		env = append(env, "IGGY_CLUSTER_AUTH_SHARED_SECRET="+key)
	}
	return env
}

func nodeClient(ctx context.Context, n NodeState, user, pass string, timeout time.Duration) (*client.Client, error) {
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{n.Addr()}
	if n.CAFile != "" {
		tc, err := pki.ClientTLS(n.CAFile)
		if err != nil {
			return nil, localErr("%v", err)
		}
		cfg.TLS = tc
	}
	cfg.Username, cfg.Password = user, pass
	cfg.MaxRedirects = 0
	cfg.Reconnect.Enabled = false
	cfg.HeartbeatInterval = 0
	cfg.DialTimeout, cfg.RequestTimeout = min(2*time.Second, timeout), timeout
	return client.Dial(ctx, cfg)
}

// ping connects to n without logging in and pings it, returning the
// round trip.
func ping(ctx context.Context, n NodeState, timeout time.Duration) (time.Duration, error) {
	c, err := nodeClient(ctx, n, "", "", timeout)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	if err := c.Ping(ctx); err != nil {
		return 0, err
	}
	return time.Since(start), nil
}

// waitServing waits until every node accepts a login and a ping; a node
// that exits fails it with the tail of its log.
func waitServing(ctx context.Context, st *State, d time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	for _, n := range st.Nodes {
		var last error
		for {
			if !st.Alive(n) {
				return exited(n)
			}
			c, err := nodeClient(ctx, n, RootUsername, RootPassword, 10*time.Second)
			if err == nil {
				err = c.Ping(ctx)
				_ = c.Close()
				if err == nil {
					break
				}
			}
			last = err
			select {
			case <-ctx.Done():
				return &cli.LocalError{Err: fmt.Errorf("node %s (%s) not serving after %v (last error: %v); log %s:\n%s", n.Name, n.Addr(), d, last, n.Log, tail(n.Log, 15))}
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	return nil
}

// waitPing waits until n answers a ping (no login: a node restarted alone
// answers once it has recovered its storage, quorum or not).
func waitPing(ctx context.Context, st *State, n NodeState, d time.Duration) error {
	var last error
	for {
		if !st.Alive(n) {
			return exited(n)
		}
		if _, err := ping(ctx, n, 5*time.Second); err == nil {
			return nil
		} else {
			last = err
		}
		select {
		case <-ctx.Done():
			return &cli.LocalError{Err: fmt.Errorf("node %s (%s) does not answer a ping after %v (last error: %v); log %s:\n%s", n.Name, n.Addr(), d, last, n.Log, tail(n.Log, 15))}
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func exited(n NodeState) error {
	return &cli.LocalError{Err: fmt.Errorf("node %s exited during start; last lines of %s:\n%s", n.Name, n.Log, tail(n.Log, 15))}
}

func tail(path string, lines int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return err.Error()
	}
	l := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(l) > lines {
		l = l[len(l)-lines:]
	}
	return strings.Join(l, "\n")
}

func clusterKind(st *State) string {
	if len(st.Nodes) == 1 {
		return "single node (clustering off)"
	}
	return fmt.Sprintf("%d-node cluster %q", len(st.Nodes), st.Name)
}

func printUp(w io.Writer, st *State, dir, headline string) {
	fmt.Fprintln(w, headline)
	t := cli.Table{Header: []string{"Node", "Client address", "Replica address", "PID", "Log"}}
	for _, n := range st.Nodes {
		rep := net.JoinHostPort(n.IP, strconv.Itoa(n.ReplicaPort))
		if len(st.Nodes) == 1 {
			rep = "-"
		}
		t.Add(n.Name, n.Addr(), rep, strconv.Itoa(n.PID), n.Log)
	}
	_ = t.Render(w, cli.ListTable)
	fmt.Fprintf(w, "Root credentials: %s / %s\n", RootUsername, RootPassword)
	tlsFlags := ""
	if ca := st.Nodes[0].CAFile; ca != "" {
		tlsFlags = " --tcp-tls-enabled --tls-ca-file " + ca
	}
	fmt.Fprintf(w, "Connect:  iggo --tcp-server-address %s%s -u %s -p %s stream list\n", st.Nodes[0].Addr(), tlsFlags, RootUsername, RootPassword)
	fmt.Fprintf(w, "Console:  %s (log in as %s / %s)\n", st.Nodes[0].ConsoleURL(), RootUsername, RootPassword)
	if len(st.Nodes) > 1 {
		fmt.Fprintf(w, "          (every node serves it on its HTTP port, %d..%d)\n", st.Nodes[0].HTTPPort, st.Nodes[len(st.Nodes)-1].HTTPPort)
	}
	dirFlag := ""
	if dir != DefaultDir {
		dirFlag = " --dir " + dir
	}
	fmt.Fprintf(w, "Status:   iggo cluster status%s\nStop:     iggo cluster down%s [--purge]\n", dirFlag, dirFlag)
}

func statusCmd(env *cli.Env) *cobra.Command {
	var dir, mode string
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show the nodes of the local cluster started by 'iggo cluster up'",
		Long: `Show each node of the local cluster in --dir, asking every node itself (in
parallel, each within --timeout): whether its process runs, whether it answers
a ping (no login), and its role, its health and the leader as its own cluster
metadata reports them (that needs a login, as -u/-p or else iggy/iggy, and a
login needs a metadata quorum). Says when fewer nodes answer than a quorum
needs. Exits 0 only when every node runs, answers and reports its role;
otherwise 3, after printing what it found.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			m, err := cli.ParseListMode(mode)
			if err != nil {
				return cli.Usagef("%v", err)
			}
			return status(cmd.Context(), env, dir, m, timeout)
		},
	}
	cmd.Flags().StringVar(&dir, "dir", DefaultDir, "the directory given to 'iggo cluster up'")
	cmd.Flags().StringVarP(&mode, "list-mode", "l", "table", "table or list")
	cmd.Flags().DurationVar(&timeout, "timeout", 5*time.Second, "bound on each node's answer")
	return cmd
}

// nodeReport is what status learned about one node.
type nodeReport struct {
	alive  bool
	rtt    time.Duration
	ping   error
	md     *wire.ClusterMetadata
	mdErr  error
	self   *wire.ClusterNode // the node's own entry in its metadata
	leader string            // whom it names leader ("" none)
}

func status(ctx context.Context, env *cli.Env, dir string, mode cli.ListMode, timeout time.Duration) error {
	st, err := ReadState(dir)
	if errors.Is(err, os.ErrNotExist) {
		return localErr("no local cluster in %s (start one with `iggo cluster up`)", dir)
	}
	if err != nil {
		return localErr("%v", err)
	}
	user, pass := env.Global.Username, env.Global.Password
	if user == "" {
		user, pass = RootUsername, RootPassword
	}
	reps := make([]nodeReport, len(st.Nodes))
	var wg sync.WaitGroup
	for i, n := range st.Nodes {
		reps[i].alive = st.Alive(n)
		if !reps[i].alive {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &reps[i]
			cctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			if r.rtt, r.ping = ping(cctx, n, timeout); r.ping != nil {
				return
			}
			c, err := nodeClient(cctx, n, user, pass, timeout)
			if err == nil {
				var m wire.ClusterMetadata
				if m, err = c.GetClusterMetadata(cctx); err == nil {
					r.md = &m
				}
				_ = c.Close()
			}
			r.mdErr = err
			if r.md == nil {
				return
			}
			for j := range r.md.Nodes {
				m := &r.md.Nodes[j]
				if same(*m, n) {
					r.self = m
				}
				if m.Role == wire.RoleLeader {
					// Named as this directory names it (a single node
					// reports its configured roster name).
					r.leader = m.Name
					for _, o := range st.Nodes {
						if same(*m, o) {
							r.leader = o.Name
						}
					}
				}
			}
		}()
	}
	wg.Wait()

	if mode == cli.ListTable {
		fmt.Fprintf(env.Out, "Cluster %q in %s (%d nodes, started %s)\n", st.Name, st.Dir, len(st.Nodes), st.Started.Format(time.RFC3339))
	}
	t := cli.Table{Header: []string{"Node", "Address", "PID", "Process", "Ping", "Role", "Health", "Leader"}}
	answering := 0
	var notes, down, silent, noRole []string
	for i, n := range st.Nodes {
		r := reps[i]
		proc, pingText, role, health, leader := "running", "-", "-", "-", "-"
		switch {
		case !r.alive:
			proc = "not running"
			down = append(down, n.Name)
			notes = append(notes, n.Name+" is not running")
		case r.ping != nil:
			pingText = "no: " + oneLine(r.ping.Error())
			role, health, leader = "unknown", "unknown", "unknown"
			silent = append(silent, n.Name)
			notes = append(notes, fmt.Sprintf("%s runs but does not answer a ping (%s)", n.Name, oneLine(r.ping.Error())))
		default:
			answering++
			pingText = fmt.Sprintf("%.1f ms", float64(r.rtt.Microseconds())/1000)
			role, health, leader = "unknown", "unknown", "unknown"
			switch {
			case r.md == nil:
				noRole = append(noRole, n.Name)
				why := oneLine(r.mdErr.Error())
				if errors.Is(r.mdErr, context.DeadlineExceeded) {
					why = fmt.Sprintf("no answer within %v: no metadata quorum, or a view change in progress", timeout)
				}
				notes = append(notes, fmt.Sprintf("%s answers a ping but no login and GET_CLUSTER_METADATA (%s)", n.Name, why))
			case r.self == nil:
				noRole = append(noRole, n.Name)
				notes = append(notes, n.Name+"'s cluster metadata does not list it")
			default:
				role, health = roleText(r.self.Role), healthText(r.self.Status)
				leader = r.leader
				if leader == "" {
					leader = "none"
				}
			}
		}
		t.Add(n.Name, n.Addr(), strconv.Itoa(n.PID), proc, pingText, role, health, leader)
	}
	if err := t.Render(env.Out, mode); err != nil {
		return err
	}
	quorum := len(st.Nodes)/2 + 1
	var summary string
	if answering < quorum {
		summary = fmt.Sprintf("no quorum: %d of %d nodes answer, a quorum is %d", answering, len(st.Nodes), quorum)
	}
	if mode == cli.ListTable {
		fmt.Fprintln(env.Out, "Role, health and leader as each node reports them itself.")
		switch {
		case summary != "":
			fmt.Fprintf(env.Out, "No quorum: %d of %d nodes answer, a quorum is %d (without one nothing is written, and nobody can log in).\n",
				answering, len(st.Nodes), quorum)
		case len(st.Nodes) > 1:
			fmt.Fprintf(env.Out, "%d of %d nodes answer (a quorum is %d).\n", answering, len(st.Nodes), quorum)
		}
		for _, p := range notes {
			fmt.Fprintln(env.Out, "  "+p)
		}
	}
	if len(notes) == 0 {
		return nil
	}
	var parts []string
	if summary != "" {
		parts = append(parts, summary)
	}
	for _, c := range []struct {
		what  string
		nodes []string
	}{{"not running", down}, {"not answering", silent}, {"role unknown", noRole}} {
		if len(c.nodes) > 0 {
			parts = append(parts, c.what+": "+strings.Join(c.nodes, ", "))
		}
	}
	return &cli.ExitError{Msg: strings.Join(parts, "; "), Code: cli.ExitConnection}
}

// same reports whether a cluster metadata entry is local node n.
func same(m wire.ClusterNode, n NodeState) bool {
	return m.Name == n.Name || (int(m.TCPPort) == n.TCPPort && m.IP == n.IP)
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > 60 {
		s = s[:57] + "..."
	}
	return s
}

func roleText(r uint8) string {
	switch r {
	case wire.RoleLeader:
		return "leader"
	case wire.RoleFollower:
		return "follower"
	}
	return fmt.Sprintf("role %d", r)
}

func healthText(s uint8) string {
	switch s {
	case wire.NodeHealthy:
		return "healthy"
	case wire.NodeStarting:
		return "starting"
	case wire.NodeStopping:
		return "stopping"
	case wire.NodeUnreachable:
		return "unreachable"
	case wire.NodeMaintenance:
		return "maintenance"
	}
	return fmt.Sprintf("status %d", s)
}

func downCmd(env *cli.Env) *cobra.Command {
	var dir string
	var purge bool
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the local cluster started by 'iggo cluster up'",
		Long: `Stop every node of the local cluster in --dir: SIGTERM, then SIGKILL for any
node still running after --timeout. The data stays (a later 'up' continues
on it) unless --purge, which removes the whole directory.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return down(env, dir, purge, timeout) },
	}
	cmd.Flags().StringVar(&dir, "dir", DefaultDir, "the directory given to 'iggo cluster up'")
	cmd.Flags().BoolVar(&purge, "purge", false, "also remove the directory with all data and logs")
	cmd.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long each node may take to stop before SIGKILL")
	return cmd
}

// Down stops the cluster in dir (SIGTERM, SIGKILL after timeout) and
// returns the names of the nodes it stopped.
func Down(dir string, timeout time.Duration) ([]string, []string, error) {
	st, err := ReadState(dir)
	if err != nil {
		return nil, nil, err
	}
	var running []NodeState
	for _, n := range st.Nodes {
		if st.Alive(n) {
			_ = syscall.Kill(n.PID, syscall.SIGCONT) // a paused node cannot stop
			_ = syscall.Kill(n.PID, syscall.SIGTERM)
			running = append(running, n)
		}
	}
	var stopped, killed []string
	deadline := time.Now().Add(timeout)
	for _, n := range running {
		for !gone(n.PID) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !gone(n.PID) {
			_ = syscall.Kill(n.PID, syscall.SIGKILL)
			for end := time.Now().Add(10 * time.Second); !gone(n.PID) && time.Now().Before(end); {
				time.Sleep(20 * time.Millisecond)
			}
			killed = append(killed, n.Name)
			continue
		}
		stopped = append(stopped, n.Name)
	}
	return stopped, killed, os.Remove(filepath.Join(dir, stateFile))
}

func down(env *cli.Env, dir string, purge bool, timeout time.Duration) error {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return localErr("%v", err)
	}
	stopped, killed, err := Down(abs, timeout)
	switch {
	case errors.Is(err, os.ErrNotExist) && !purge:
		return localErr("no local cluster in %s", dir)
	case err != nil && !errors.Is(err, os.ErrNotExist):
		return localErr("%v", err)
	}
	if len(stopped) > 0 {
		env.Statusf("Stopped %s", strings.Join(stopped, ", "))
	}
	if len(killed) > 0 {
		env.Statusf("Killed %s (still running after %v)", strings.Join(killed, ", "), timeout)
	}
	if len(stopped)+len(killed) == 0 && err == nil {
		env.Statusf("No node was running")
	}
	if purge {
		// Only a directory that `up` laid out is removed.
		if _, err := os.Stat(filepath.Join(abs, configFile)); err != nil {
			return localErr("%s does not look like a local cluster directory (no %s); not removing it", dir, configFile)
		}
		if err := os.RemoveAll(abs); err != nil {
			return localErr("%v", err)
		}
		env.Statusf("Removed %s", abs)
	}
	return nil
}

// issueCerts gives every node a certificate for its ip and localhost,
// signed by the cluster's CA (<dir>/certs/ca.pem). The CA's key is not
// kept: a later --tls run on the directory issues a new CA and
// certificates.
func issueCerts(dir string, nodes []NodeState) error {
	cd := filepath.Join(dir, "certs")
	if err := os.MkdirAll(cd, 0o700); err != nil {
		return localErr("%v", err)
	}
	ca, err := pki.NewCA("iggo local cluster CA", 365*24*time.Hour)
	if err != nil {
		return localErr("generating the CA: %v", err)
	}
	caFile := filepath.Join(cd, "ca.pem")
	if err := ca.WriteCert(caFile); err != nil {
		return localErr("%v", err)
	}
	for i := range nodes {
		n := &nodes[i]
		n.CAFile, n.CertFile, n.KeyFile = caFile, filepath.Join(cd, n.Name+".pem"), filepath.Join(cd, n.Name+".key")
		if err := ca.Issue("iggo "+n.Name, 365*24*time.Hour, n.CertFile, n.KeyFile, n.IP, "localhost"); err != nil {
			return localErr("issuing %s's certificate: %v", n.Name, err)
		}
	}
	return nil
}

// certsCmd writes a CA and one server certificate for the given hosts, for
// clusters started elsewhere (the TLS compose demo mounts them).
func certsCmd(env *cli.Env) *cobra.Command {
	var dir string
	var hosts []string
	var days int
	cmd := &cobra.Command{
		Use:   "certs",
		Short: "Write a CA and a server certificate for TLS client transports",
		Long: `Write <dir>/ca.pem (the CA clients trust), <dir>/server.pem and <dir>/server.key
(a certificate for every --host, localhost and 127.0.0.1, signed by the CA) for
[tcp.tls] and [websocket.tls]. The CA's key is not kept.`,
		Example: `  iggo cluster certs --dir deploy/certs --host 172.29.0.11 --host 172.29.0.12 --host 172.29.0.13`,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if days < 1 {
				return cli.Usagef("--days must be positive")
			}
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return localErr("%v", err)
			}
			validity := time.Duration(days) * 24 * time.Hour
			ca, err := pki.NewCA("iggo CA", validity)
			if err != nil {
				return localErr("generating the CA: %v", err)
			}
			if err := ca.WriteCert(filepath.Join(dir, "ca.pem")); err != nil {
				return localErr("%v", err)
			}
			all := append([]string{"localhost", "127.0.0.1"}, hosts...)
			if err := ca.Issue("iggo server", validity, filepath.Join(dir, "server.pem"), filepath.Join(dir, "server.key"), all...); err != nil {
				return localErr("%v", err)
			}
			env.Statusf("Wrote %s/ca.pem, server.pem and server.key for %s", dir, strings.Join(all, ", "))
			return nil
		},
	}
	cmd.Flags().StringVar(&dir, "dir", "certs", "output directory")
	cmd.Flags().StringArrayVar(&hosts, "host", nil, "IP address or DNS name the certificate is for (repeatable)")
	cmd.Flags().IntVar(&days, "days", 365, "validity in days")
	return cmd
}
