package replica

import (
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/zeebo/xxh3"
	"go.uber.org/zap"

	"github.com/iggo/iggo/internal/version"
	"github.com/iggo/iggo/journal"
	"github.com/iggo/iggo/replica/audit"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/consensus"
	"github.com/iggo/iggo/replica/datadir"
	"github.com/iggo/iggo/replica/fdbudget"
	"github.com/iggo/iggo/replica/gossip"
	"github.com/iggo/iggo/replica/httpapi"
	"github.com/iggo/iggo/replica/intake"
	"github.com/iggo/iggo/replica/loginguard"
	"github.com/iggo/iggo/replica/longpoll"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/replica/plane"
	"github.com/iggo/iggo/replica/ratelog"
	"github.com/iggo/iggo/replica/transport"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/superblock"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// ServerVersion is what the login reply and GET_STATS report.
const ServerVersion = version.Version

// Default root credentials of --with-default-root-credentials.
const (
	DefaultRootUsername = "iggy"
	DefaultRootPassword = "iggy"
)

// Options configure a Node.
type Options struct {
	// Config is the validated configuration.
	Config *config.Config
	// ReplicaID selects this node's roster entry (0 for a single node).
	ReplicaID int
	// Fresh wipes the data directory before booting.
	Fresh bool
	// DefaultRootCredentials makes a first boot create root as iggy/iggy
	// unless IGGY_ROOT_USERNAME / IGGY_ROOT_PASSWORD say otherwise.
	DefaultRootCredentials bool
	// Environ is where IGGY_ROOT_USERNAME and IGGY_ROOT_PASSWORD are read
	// (KEY=value strings); nil means os.Environ().
	Environ []string
	// Logger receives everything the node logs; nil discards.
	Logger *zap.Logger
	// Transport carries replica-plane messages; nil is the single-node
	// transport, which has nowhere to send them, or in cluster mode the
	// replica plane (package plane).
	Transport Transport
	// ClientListener and ReplicaListener, when set, are adopted instead of
	// binding the client TCP address and tcp_replica (tests bind port 0
	// first and write the ports into the roster).
	ClientListener  net.Listener
	ReplicaListener net.Listener
	// HTTPListener, when set, is adopted instead of binding http.address
	// (with http.enabled).
	HTTPListener net.Listener
	// DataDir, when set, is the lock of Config.Path already taken
	// (LockDataDir); the node owns it from Start on and releases it in
	// Close. Nil: Start takes it.
	DataDir *datadir.Lock
}

// Transport is the replica plane seen from the consensus groups: every
// message a replica emits goes to Send. With one replica nothing is ever
// emitted; a cluster plugs a transport that frames the message and sends it
// to replica To, and delivers inbound frames to the owning shard.
type Transport interface {
	Send(group uint64, e vsr.Envelope)
}

type noTransport struct{}

func (noTransport) Send(uint64, vsr.Envelope) {}

// Node is one iggo server process: shards, consensus groups, storage and
// the client listener.
type Node struct {
	cfg  *config.Config
	opts Options
	log  *zap.Logger

	// Cluster mode (cluster.go): the replica plane, the roster size, this
	// node's roster entry and the published group roles.
	plane               *plane.Transport
	replicaCount        int
	member              config.ClusterNode
	roles               roleBoard
	forwardTimeoutTicks uint64
	// fresh: --fresh wiped a cluster node's disk. Groups it recreates
	// rejoin (vsr.Boot.Rejoin) until the metadata group caught up with the
	// commit point it learned when it first reached normal status
	// (freshTarget; shard 0 only).
	fresh       bool
	freshTarget uint64
	// installs counts checkpoints installed by state transfer.
	installs atomic.Uint64
	// metrics are the Prometheus instruments (package metrics); the HTTP
	// API serves them.
	metrics *metrics.Metrics
	// http is the HTTP API server on shard 0 once it serves (nil when
	// http.enabled is false); httpSrv the one bindHTTP built.
	http, httpSrv *httpapi.Server

	store     *metadata.Store
	rt        *shard.Runtime[*task]
	shards    []*shardLoop
	fss       []vfs.ShardFS
	transport Transport

	cluster     superblock.Uint128
	clusterID   vsr.Checksum
	incarnation uint64
	seed        uint64
	maxFrame    uint32
	// atRest encrypts sends at admission and decrypts polls
	// (encryption.enabled; atrest.go).
	atRest atRest
	// pollBufferMax bounds a poll's records so the reply frame stays under
	// the frame limit (header and 16-byte prefix included).
	pollBufferMax int
	admit         metadata.AdmitConfig
	// limitLog logs refused over-limit input, one line per limit per
	// interval.
	limitLog *ratelog.Logger
	// partSlots caps the partitions open at once (0: no cap, as a node
	// runs: partitions hold no descriptors of their own, vfs.Bounded
	// does); openParts counts them (pending.go). Tests set a cap to stand
	// for descriptors or memory running out.
	partSlots, openParts atomic.Int64
	// filesPerShard is each shard's storage descriptors (storageBudget).
	filesPerShard int

	dirLock *datadir.Lock
	ln      net.Listener
	// listeners are the client transports bound (listeners.go); ln is
	// the tcp one's socket.
	listeners []transport.Listener
	wsBound   string
	handoff   *shard.RoundRobin
	// Client intake (intake.go): admission, budgets and frame limits, the
	// login guard and the rate-limited client log.
	admission    *intake.Admission
	unauthBudget *intake.Budget
	limits       intake.Limits
	logins       *loginguard.Guard
	clientLog    *ratelog.Logger
	bound        string
	started      time.Time
	// The HTTP API's listeners (bindHTTP) and bound addresses.
	httpLn, metricsLn       net.Listener
	httpBound, metricsBound string
	// The QUIC endpoint's bound address (quic.go; its listener is one of
	// listeners).
	quicBound string

	clients clientRegistry
	// sessions: the consumer session reports (consumer_group_sessions.go).
	sessions sessionTracker
	audit    *audit.Log
	// waits parks polls that wait for messages (long_poll.*; conn_wait.go).
	waits     *longpoll.Hub
	waitMax   time.Duration
	partStats sync.Map // shard.Namespace → *partStats
	handOffs  sync.Map // handOffKey → handOffWait (consumer_group_rebalance.go)
	topicRR   sync.Map // topicKey → *atomic.Uint32 (balanced partitioning)

	// Gossip (cluster mode) and a test hook adjusting its configuration
	// before it starts.
	ci         *clusterInfo
	gossipTune func(*gossip.Config)

	stopping  atomic.Bool
	stop      chan struct{}
	bg        sync.WaitGroup
	closeOnce sync.Once
}

// New checks the options and prepares a node; Start boots it.
func New(opts Options) (*Node, error) {
	if opts.Config == nil {
		return nil, errors.New("replica: no config")
	}
	if err := opts.Config.Validate(); err != nil {
		return nil, err
	}
	var member config.ClusterNode
	replicas := 1
	if opts.Config.Cluster.Enabled {
		m, err := clusterMember(opts.Config, opts.ReplicaID)
		if err != nil {
			return nil, err
		}
		member, replicas = m, len(opts.Config.Cluster.Nodes)
		if replicas > vsr.ReplicasMax {
			return nil, fmt.Errorf("replica: cluster.nodes lists %d nodes, at most %d", replicas, vsr.ReplicasMax)
		}
	} else if opts.ReplicaID != 0 {
		return nil, fmt.Errorf("replica: --replica-id %d: a single node (cluster.enabled = false) is replica 0", opts.ReplicaID)
	}
	log := opts.Logger
	if log == nil {
		log = zap.NewNop()
	}
	// Logger names are the targets of logging.level directives (package
	// logging lists them).
	log = log.Named("replica")
	tr := opts.Transport
	if tr == nil {
		tr = noTransport{}
	}
	n := &Node{cfg: opts.Config, opts: opts, log: log, transport: tr, stop: make(chan struct{}),
		member: member, replicaCount: replicas}
	n.forwardTimeoutTicks = max(1, config.Ticks(opts.Config.Cluster.HeartbeatTimeout.Duration))
	n.maxFrame = uint32(opts.Config.MessageBus.MaxMessageSize.Bytes())
	n.pollBufferMax = int(n.maxFrame) - wire.HeaderSize - wire.PollReplyPrefixSize
	sum := xxh3.Hash128([]byte(opts.Config.Cluster.Name))
	n.cluster = superblock.Uint128{Hi: sum.Hi, Lo: sum.Lo}
	n.clusterID = vsrChecksum(sum)
	if n.clustered() {
		// The replica plane's id of cluster.name: frames, prepares and
		// superblocks all carry it, so a node refuses another cluster's
		// data and peers.
		id := plane.ClusterID(opts.Config.Cluster.Name)
		n.clusterID = id
		n.cluster = superblock.Uint128{Lo: binary.LittleEndian.Uint64(id[:8]), Hi: binary.LittleEndian.Uint64(id[8:])}
	}
	ar, err := newAtRest(opts.Config)
	if err != nil {
		return nil, err
	}
	n.atRest = ar
	n.audit = audit.New(audit.Config{PerSecond: opts.Config.Logging.AuditLinesPerSecond,
		ClientPerSecond: opts.Config.Logging.AuditClientLinesPerSecond}, log.Named("audit"))
	lp := opts.Config.LongPoll
	n.waits = longpoll.New(longpoll.Limits{Node: lp.WaitersMax, Conn: lp.WaitersPerConnection})
	n.waitMax = lp.MaxWait.Duration
	n.admit = metadata.DefaultAdmitConfig()
	n.admit.TopicDefaults.SegmentSizeMax = wire.MaxSegmentSize
	n.clients.init()
	n.clientLog = ratelog.New(log.Named("clients"), opts.Config.Logging.ClientEventsPerSecond)
	n.initIntake()
	n.limitLog = ratelog.NewEvery(n.log, ratelog.RefusalInterval)
	n.metrics = metrics.New(n)
	return n, nil
}

// Metrics returns the node's Prometheus instruments.
func (n *Node) Metrics() *metrics.Metrics { return n.metrics }

// storageBudget splits the descriptor limit (package fdbudget): what client
// sockets and the replica plane leave goes to the storage files, held per
// shard through a vfs.Bounded of filesPerShard descriptors; the node-wide
// partition cap is metadata.partitions_max.
func (n *Node) storageBudget() error {
	limit, err := fdbudget.Limit()
	if err != nil {
		return err
	}
	cpus, err := n.cfg.ShardCPUs()
	if err != nil {
		return err
	}
	peers := 0
	if n.clustered() {
		peers = len(n.cfg.Cluster.Nodes) - 1
	}
	// The connection cap in force (startIntake): message_bus.connections_max
	// resolved against the descriptor limit and descriptors_reserved.
	conns := n.admission.Config().ConnectionsMax
	b, err := fdbudget.Split(fdbudget.Inputs{Limit: limit, ConnectionsMax: &conns, Peers: peers,
		HandshakesMax: n.cfg.MessageBus.ReplicaHandshakesMax, HandshakesPerAddress: n.cfg.MessageBus.ReplicaHandshakesPerAddress,
		OpenFilesMax: uint64(max(n.cfg.Partition.OpenFilesMax, 0)), Shards: len(cpus)})
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	n.admit.PartitionsMax = uint32(min(max(n.cfg.Metadata.PartitionsMax, 0), math.MaxUint32))
	n.filesPerShard = int(min(b.PerShard, math.MaxInt32))
	n.log.Info("descriptors for storage files", zap.Uint64("open_files_max", b.Files), zap.Uint64("per_shard", b.PerShard),
		zap.Int("partitions_max", n.cfg.Metadata.PartitionsMax), zap.String("budget", b.String()))
	if b.Short {
		n.log.Warn("the descriptor limit leaves storage files too few descriptors; each shard gets the minimum and may run out (raise RLIMIT_NOFILE or lower message_bus.connections_max)",
			zap.Uint64("left", b.Left), zap.Uint64("per_shard", b.PerShard))
	}
	return nil
}

// Log returns the node's logger.
func (n *Node) Log() *zap.Logger { return n.log }

// Addr is the bound client address (after Start).
func (n *Node) Addr() string { return n.bound }

// HTTPAddr is the bound HTTP API address ("" when http.enabled is false).
func (n *Node) HTTPAddr() string { return n.httpBound }

// Store returns the published metadata (read-only views).
func (n *Node) Store() *metadata.Store { return n.store }

// Start boots the node: it takes the data directory's lock (unless
// Options.DataDir holds it already) and binds its listeners before it
// reads anything else there, then storage recovery, the metadata group and
// every partition group replayed from their journals, root bootstrap on a
// first boot, then the shards, and accepting. It returns once clients can
// connect. A failed Start releases what it took, the lock included.
func (n *Node) Start() (err error) {
	n.started = time.Now()
	n.incarnation = uint64(n.started.UnixMicro())
	// Consumer-group joins record where the member's connection lives.
	n.admit.Node, n.admit.Boot = uint8(n.opts.ReplicaID), n.incarnation
	// The descriptor limit is raised and the connection cap derived first:
	// the storage files get what the cap leaves.
	if err := n.startIntake(); err != nil {
		return err
	}
	if err := n.storageBudget(); err != nil {
		return err
	}
	var seed [8]byte
	_, _ = rand.Read(seed[:])
	n.seed = binary.LittleEndian.Uint64(seed[:])
	cfg := n.cfg
	n.dirLock = n.opts.DataDir
	if n.dirLock == nil {
		if n.dirLock, err = LockDataDir(cfg, n.opts.ReplicaID); err != nil {
			return err
		}
	}
	// stage says how far a failed start got, so it undoes exactly that.
	stage := 0
	const (
		bound = iota + 1
		storage
		running
	)
	defer func() {
		if err == nil {
			return
		}
		if stage >= running {
			n.stopGossip()
			_, _ = n.rt.Shutdown()
		}
		if stage >= storage {
			n.closeStorage()
		}
		if stage >= bound {
			if n.plane != nil {
				_ = n.plane.Close()
			}
			n.stopHTTP()
			n.closeClientListeners()
		}
		n.releaseDataDir()
	}()
	if err := n.bindListeners(); err != nil {
		return err
	}
	stage = bound
	osfs := vfs.NewOS()
	if n.opts.Fresh {
		// Only a node that held cluster data may have acknowledged ops its
		// peers count on; a first start with --fresh on an empty directory
		// is simply a new node (a whole new cluster may start that way).
		_, err := osfs.Stat(filepath.Join(cfg.Path, "metadata", "superblock"))
		n.fresh = n.clustered() && err == nil
		if err := datadir.Wipe(osfs, dataLayout(cfg)); err != nil {
			return fmt.Errorf("replica: %w", err)
		}
		n.log.Warn("--fresh: wiped the data directory (kept its lock file and logs)", zap.String("path", cfg.Path))
	}
	if err := n.checkKey(osfs); err != nil {
		return err
	}
	for _, d := range []string{cfg.Path, filepath.Join(cfg.Path, "metadata"), filepath.Join(cfg.Path, "streams"),
		filepath.Join(cfg.Path, "state")} {
		if err := vfs.MkdirAllSync(osfs, d, 0o755); err != nil {
			return fmt.Errorf("replica: creating %s: %w", d, err)
		}
	}
	// state/log is Iggy's legacy state file: created empty, never written.
	if _, err := osfs.Stat(filepath.Join(cfg.Path, "state", "log")); errors.Is(err, fs.ErrNotExist) {
		if err := vfs.WriteFileAtomic(osfs, filepath.Join(cfg.Path, "state", "log"), nil, 0o644); err != nil {
			return fmt.Errorf("replica: creating state/log: %w", err)
		}
	}
	cpus, err := cfg.ShardCPUs()
	if err != nil {
		return err
	}
	rt, err := shard.New[*task](cfg.Sharding.RuntimeConfig(cpus, n.log))
	if err != nil {
		return err
	}
	n.rt = rt
	fss, impl, err := vfs.OpenShards(n.log, rt.Shards(), vfs.Options{InlineWrites: true})
	if err != nil {
		return err
	}
	for i, f := range fss {
		fss[i] = vfs.NewBounded(f, n.filesPerShard)
	}
	n.fss = fss
	stage = storage
	n.log.Info("storage", zap.String("io", string(impl)), zap.Int("shards", rt.Shards()), zap.Ints("cpus", cpus))
	n.shards = make([]*shardLoop, rt.Shards())
	for i := range n.shards {
		n.shards[i] = newShardLoop(n, i, fss[i])
	}
	if n.clustered() {
		n.log.Info("cluster mode", zap.String("cluster", cfg.Cluster.Name), zap.Int("replica_id", n.opts.ReplicaID),
			zap.String("node", n.member.Name), zap.Int("replicas", n.replicaCount))
	}
	if err := n.bootMetadata(); err != nil {
		return err
	}
	if err := n.bootPartitions(); err != nil {
		return err
	}
	if err := rt.Start(func(i int) shard.Handler[*task] { return n.shards[i] }); err != nil {
		return err
	}
	stage = running
	if n.plane != nil {
		if err := n.plane.Start(); err != nil {
			return err
		}
	}
	n.startGossip()
	if err := n.serve(); err != nil {
		return err
	}
	if n.clustered() {
		if err := n.clusterBootstrap(); err != nil {
			// Close undoes everything, the lock included.
			_ = n.Close()
			stage = 0
			return err
		}
	}
	n.startBackground()
	n.startMemberEviction()
	n.startSessionReports()
	n.startHandoffs()
	n.log.Info("iggo server started", zap.String("tcp", n.bound), zap.String("http", n.httpBound), zap.String("path", cfg.Path),
		zap.String("version", ServerVersion))
	return nil
}

func (n *Node) baseVSRConfig(group uint64) vsr.Config {
	c := vsr.DefaultConfig()
	cl := n.cfg.Cluster
	c.Cluster = n.clusterID
	c.Group = group
	c.Replica, c.ReplicaCount = uint8(n.opts.ReplicaID), uint8(n.replicaCount)
	c.MessageSizeMax = n.maxFrame
	// A transfer chunk and its header fit in one frame; the config floor
	// (message_bus.max_message_size >= 4 KiB + 256 B) keeps it at 4 KiB or more.
	c.TransferChunkBytes = min(c.TransferChunkBytes, int(n.maxFrame)-vsr.HeaderSize)
	c.HeartbeatTimeout = cl.HeartbeatTimeout.Duration
	c.CommitBroadcastInterval = cl.CommitBroadcastInterval.Duration
	c.PrepareRetransmitInterval = cl.PrepareRetransmitInterval.Duration
	c.ViewChangeRetransmitInterval = cl.ViewChangeRetransmitInterval.Duration
	c.ViewChangeStatusTimeout = cl.ViewChangeStatusTimeout.Duration
	c.RequestStartViewRetransmitInterval = cl.RequestStartViewRetransmitInterval.Duration
	c.ViewProbeAttemptsMax = cl.ViewProbeAttemptsMax
	c.RepairRetryInterval = cl.RepairRetryInterval.Duration
	c.RepairChunkMax = cl.RepairChunkMax
	c.Seed = n.seed ^ group
	return c
}

// Partition groups: a request queue deep enough for every producer a
// partition realistically has (a full queue answers 58, which SDKs
// replay), the smallest journal window the protocol allows, and frequent
// checkpoints so the journal holds little beyond what replay needs.
const (
	partitionRequestQueue       = 4096
	partitionCheckpointInterval = 64
)

func (n *Node) partitionVSRConfig(group uint64, tc metadata.TopicConfig) vsr.Config {
	c := n.baseVSRConfig(group)
	depth := n.cfg.Partition.PrepareQueueDepth
	c.PrepareQueueDepth = depth
	c.RequestQueueDepth = partitionRequestQueue
	c.Dedup = true
	c.ClientsMax = n.cfg.Partition.DedupClientsMax
	c.JournalSlots = 4 * max(64, depth)
	c.CheckpointInterval = min(partitionCheckpointInterval, c.JournalSlots/2)
	if tc.Durability == metadata.DurabilityPersisted {
		c.Durability = vsr.Persisted
	}
	return c
}

// partitionJournalOptions sizes a partition journal. The replica keeps
// JournalSlots/2 ops below its checkpoint, at most CheckpointInterval ops
// between checkpoints and PrepareQueueDepth in flight; the budget must
// admit that many of the largest prepares or an append would be refused
// with no way to make room. partition.wal_bytes_max is the floor.
func (n *Node) partitionJournalOptions(c vsr.Config) journal.PartitionOptions {
	ops := int64(c.JournalSlots/2 + c.CheckpointInterval + c.PrepareQueueDepth + 2)
	entry := int64(n.maxFrame) + 4096
	budget := max(int64(n.cfg.Partition.WALBytesMax.Bytes()), ops*(entry+journal.RecordHeaderSize))
	// RecycleFiles stays 0: the journal keeps up to Budget/FileSize retired
	// files for reuse (appends overwrite allocated, cached blocks). The pool
	// only ever holds files that were live at once, so the disk a partition
	// journal uses stays within its budget; it just is not given back after
	// a checkpoint.
	return journal.PartitionOptions{Budget: budget, MaxEntry: int(entry),
		WritebackBytes: int64(n.cfg.Partition.WALWritebackBytes.Bytes()),
		StartSyncBytes: int64(n.cfg.Partition.BackgroundSyncBytes.Bytes())}
}

func (n *Node) metadataVSRConfig() vsr.Config {
	c := n.baseVSRConfig(vsr.MetadataGroup)
	m := n.cfg.Metadata
	c.Sessions = true
	c.ClientsMax = m.ClientsTableMax
	c.PrepareQueueDepth = m.PrepareQueueDepth
	c.RequestQueueDepth = 1024
	c.JournalSlots = m.JournalSlots
	c.CheckpointInterval = m.JournalSlots / 4
	c.Durability = vsr.Persisted
	return c
}

// bootMetadata recovers the metadata group on shard 0 and, on a first boot,
// creates the root user.
func (n *Node) bootMetadata() error {
	sh := n.shards[0]
	n.store = metadata.NewStore(metadata.NewState())
	dir := filepath.Join(n.cfg.Path, "metadata")
	m := &metaSM{n: n, sh: sh, store: n.store, dir: dir, booting: true}
	sh.meta = m
	cfg := n.metadataVSRConfig()
	g, err := sh.openGroup(consensus.Spec{
		ID: vsr.MetadataGroup, Name: "metadata", Dir: dir, Config: cfg, SM: m, Metadata: true,
		MetaOpts: journal.MetadataOptions{Slots: 2 * cfg.JournalSlots, MaxEntry: int(n.maxFrame) + 4096},
		Restore:  m.restore,
		Rejoin:   n.fresh,
	})
	if err != nil {
		return err
	}
	m.g = g
	sh.addGroup(g)
	sh.settle()
	g.EndBoot()
	view := n.store.View()
	counts := view.Counts()
	n.log.Info("metadata recovered", zap.Uint64("op", view.LastApplied()), zap.Uint64("checkpoint_op", g.DurableCheckpoint()),
		zap.Int("journal_ops_replayed", g.BootOps()), zap.Int("streams", counts.Streams), zap.Int("topics", counts.Topics),
		zap.Int("partitions", counts.Partitions), zap.Int("consumer_groups", counts.ConsumerGroups),
		zap.Int("users", counts.Users))
	if n.clustered() {
		// Registering the node's session and creating root need a quorum:
		// they run once the shards and the replica plane are up
		// (clusterBootstrap).
		m.booting = false
		return nil
	}
	m.pumpSystem()
	if err := n.bootWait(sh, func() bool { return m.sysSession != 0 }, "registering the system session"); err != nil {
		return err
	}
	if !view.Bootstrapped() {
		user, pass, generated, err := n.rootCredentials()
		if err != nil {
			return err
		}
		hash, err := metadata.HashPassword(pass, n.admit.Argon2)
		if err != nil {
			return err
		}
		limits := metadata.DefaultLimits()
		limits.MaxTokensPerUser = uint32(n.cfg.PersonalAccessToken.MaxTokensPerUser)
		m.enqueueSystem(metadata.Bootstrap{RootUsername: user, RootPasswordHash: hash, Limits: limits}, nil)
		if err := n.bootWait(sh, m.systemIdle, "creating the root user"); err != nil {
			return err
		}
		if !n.store.View().Bootstrapped() {
			return errors.New("replica: the root user could not be created")
		}
		if generated {
			n.log.Warn("root user created with a generated password; it is shown only this once",
				zap.String("username", user), zap.String("password", pass))
		} else {
			n.log.Info("root user created", zap.String("username", user))
		}
	}
	m.booting = false
	// Members of consumer groups were connections of the previous run;
	// none survived the restart (consumer_group_evict.go). Members recorded before joins
	// carried their node have an unknown boot: on a single node they are
	// the previous run's too.
	m.bootEvicted = true
	m.enqueueSystem(metadata.EvictNodeMembers{Node: uint8(n.opts.ReplicaID), Before: n.incarnation}, nil)
	for _, st := range n.store.View().Streams() {
		for _, tp := range st.Topics() {
			for _, grp := range tp.Groups() {
				for _, mem := range grp.Members {
					if mem.Boot == metadata.BootUnknown {
						m.enqueueSystem(metadata.DisconnectClient{Client: mem.Client}, nil)
					}
				}
			}
		}
	}
	if err := n.bootWait(sh, m.systemIdle, "removing stale consumer-group members"); err != nil {
		return err
	}
	return nil
}

// bootWait drives shard sh (before the runtime runs it) until cond holds,
// feeding ticks so the replica's timers run.
func (n *Node) bootWait(sh *shardLoop, cond func() bool, what string) error {
	deadline := time.Now().Add(time.Minute)
	for {
		sh.settle()
		if cond() {
			return nil
		}
		for _, g := range sh.groups {
			if g.Failed() != nil {
				return fmt.Errorf("replica: %s: %w", what, g.Failed())
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica: %s: no progress within a minute", what)
		}
		time.Sleep(vsr.TickInterval)
		sh.tick(1)
	}
}

// rootCredentials picks the root user of a first boot.
func (n *Node) rootCredentials() (user, pass string, generated bool, err error) {
	env := n.opts.Environ
	if env == nil {
		env = os.Environ()
	}
	get := func(k string) string {
		for i := len(env) - 1; i >= 0; i-- {
			if len(env[i]) > len(k) && env[i][:len(k)] == k && env[i][len(k)] == '=' {
				return env[i][len(k)+1:]
			}
		}
		return ""
	}
	user, pass = get("IGGY_ROOT_USERNAME"), get("IGGY_ROOT_PASSWORD")
	if user == "" {
		user = DefaultRootUsername
	}
	if code := metadata.ValidateUsername(user); code != 0 {
		return "", "", false, fmt.Errorf("replica: IGGY_ROOT_USERNAME %q is not a valid username (%s)", user, code)
	}
	if pass == "" && n.opts.DefaultRootCredentials {
		pass = DefaultRootPassword
	}
	if pass == "" {
		var b [18]byte
		if _, err := rand.Read(b[:]); err != nil {
			return "", "", false, err
		}
		pass, generated = base64.RawURLEncoding.EncodeToString(b[:]), true
	}
	if code := metadata.ValidatePassword(pass); code != 0 {
		return "", "", false, fmt.Errorf("replica: IGGY_ROOT_PASSWORD is not a valid password (%s)", code)
	}
	return user, pass, generated, nil
}

// bootPartitions opens every partition the metadata names on its owning
// shard (shards in parallel, each on its own storage) and removes storage
// no partition owns any more.
func (n *Node) bootPartitions() error {
	view := n.store.View()
	perShard := make([][]partitionSpec, len(n.shards))
	keep := map[string]bool{}
	for _, st := range view.Streams() {
		for _, tp := range st.Topics() {
			for _, p := range tp.Partitions {
				ns := shard.MustNamespace(st.ID, tp.ID, p.ID)
				i := shard.OwningShard(ns, len(n.shards))
				perShard[i] = append(perShard[i], partitionSpec{stream: st.ID, topic: tp.ID, id: p.ID,
					revision: p.Revision, config: tp.Config, purgeGen: p.PurgeGeneration})
				keep[partitionDir(n.cfg.Path, st.ID, tp.ID, p.ID)] = true
			}
		}
	}
	if n.clustered() {
		// A restarted cluster node may recover metadata that is behind its
		// peers': storage it does not know yet may belong to a partition
		// the metadata group will tell it about. Never delete it here.
		n.quarantineUnknownStorage(view)
	} else if err := n.removeStaleStorage(keep); err != nil {
		return err
	}
	errs := make([]error, len(n.shards))
	var wg sync.WaitGroup
	for i, specs := range perShard {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sh := n.shards[i]
			for _, spec := range specs {
				p, err := sh.openPartition(spec)
				if err != nil && openShortOfResources(err) {
					sh.deferOpen(spec, err, true)
					continue
				}
				if err != nil {
					errs[i] = err
					return
				}
				if spec.purgeGen > p.PurgeGen() {
					p.submitPurge(spec.purgeGen)
					sh.settle()
				}
				n.registerPartition(p)
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	var tot struct {
		segments, offsets, ops int
		messages, bytes        uint64
	}
	for _, sh := range n.shards {
		for _, p := range sh.parts {
			segs, msgs, size := int(p.stats.Segments.Load()), p.stats.Messages.Load(), p.stats.Size.Load()
			p.log.Debug("partition recovered", zap.Uint64("op", p.AppliedOp()), zap.Uint64("checkpoint_op", p.g.DurableCheckpoint()),
				zap.Int("journal_ops_replayed", p.g.BootOps()), zap.Int("segments", segs), zap.Uint64("messages", msgs),
				zap.Uint64("bytes", size), zap.Uint64("next_offset", p.NextOffset()), zap.Int("consumer_offsets", p.OffsetCount()))
			tot.segments += segs
			tot.messages += msgs
			tot.bytes += size
			tot.offsets += p.OffsetCount()
			tot.ops += p.g.BootOps()
		}
	}
	n.log.Info("partitions recovered", zap.Int("partitions", len(keep)), zap.Int("journal_ops_replayed", tot.ops),
		zap.Int("segments", tot.segments), zap.Uint64("messages", tot.messages), zap.Uint64("bytes", tot.bytes),
		zap.Int("consumer_offsets", tot.offsets))
	return nil
}

// removeStaleStorage deletes partition directories (and emptied stream and
// topic directories) that no partition of the recovered metadata owns:
// deletions whose effects a crash interrupted.
func (n *Node) removeStaleStorage(keep map[string]bool) error {
	osfs := vfs.NewOS()
	root := filepath.Join(n.cfg.Path, "streams")
	streams, err := osfs.ReadDir(root)
	if err != nil {
		return err
	}
	for _, s := range streams {
		sdir := filepath.Join(root, s.Name())
		used := false
		topics, _ := osfs.ReadDir(filepath.Join(sdir, "topics"))
		for _, t := range topics {
			tdir := filepath.Join(sdir, "topics", t.Name())
			tused := false
			parts, _ := osfs.ReadDir(filepath.Join(tdir, "partitions"))
			for _, p := range parts {
				pdir := filepath.Join(tdir, "partitions", p.Name())
				if keep[pdir] {
					tused = true
					continue
				}
				n.log.Info("removing storage of a deleted partition", zap.String("dir", pdir))
				if err := osfs.RemoveAll(pdir); err != nil {
					return err
				}
			}
			if !tused {
				if err := osfs.RemoveAll(tdir); err != nil {
					return err
				}
			}
			used = used || tused
		}
		if !used {
			if err := osfs.RemoveAll(sdir); err != nil {
				return err
			}
		}
	}
	return osfs.SyncDir(root)
}

func (n *Node) registerPartition(p *part) {
	if p != nil {
		n.partStats.Store(p.ns, p.stats)
	}
}

func (n *Node) unregisterPartition(p *part) { n.partStats.CompareAndDelete(p.ns, p.stats) }

// PartitionStats implements metadata.StatsSource over the shards'
// published figures.
func (n *Node) PartitionStats(stream, topic uint32, p metadata.Partition) metadata.PartitionStats {
	ns, err := shard.NewNamespace(stream, topic, p.ID)
	if err != nil {
		return metadata.PartitionStats{}
	}
	v, ok := n.partStats.Load(ns)
	if !ok {
		return metadata.PartitionStats{SegmentsCount: 1}
	}
	s := v.(*partStats)
	if s.Revision != p.Revision {
		return metadata.PartitionStats{SegmentsCount: 1}
	}
	if s.PurgeGen.Load() < p.PurgeGeneration {
		// Purged in the metadata, the partition's own purge op not applied
		// yet: report what the purge leaves, so a read after the purge's
		// reply sees it.
		return metadata.PartitionStats{SegmentsCount: 1, CurrentOffset: s.Current.Load()}
	}
	return metadata.PartitionStats{SegmentsCount: s.Segments.Load(), CurrentOffset: s.Current.Load(),
		SizeBytes: s.Size.Load(), MessagesCount: s.Messages.Load()}
}

// applyEffects turns committed metadata effects into work for the shards
// that own the partitions (called on shard 0 as the command applies).
func (n *Node) applyEffects(sh *shardLoop, view *metadata.State, effects []metadata.Effect, op uint64) {
	for _, e := range effects {
		switch e.Kind {
		case metadata.EffectHandedOff:
			n.noteHandedOff(e)
		case metadata.EffectPartitionCreated:
			st := view.Stream(e.Stream)
			if st == nil {
				continue
			}
			tp := st.Topic(e.Topic)
			if tp == nil {
				continue
			}
			ns := shard.MustNamespace(e.Stream, e.Topic, e.Partition)
			sh.sendTo(shard.OwningShard(ns, len(n.shards)), &task{req: &openPartitionReq{
				spec: partitionSpec{stream: e.Stream, topic: e.Topic, id: e.Partition, revision: e.Revision, config: tp.Config,
					rejoin: n.rejoining(op)}}})
		case metadata.EffectPartitionDeleted:
			ns := shard.MustNamespace(e.Stream, e.Topic, e.Partition)
			sh.sendTo(shard.OwningShard(ns, len(n.shards)), &task{req: &deletePartitionReq{partRef{ns: ns, rev: e.Revision}}})
		case metadata.EffectPartitionPurged:
			ns := shard.MustNamespace(e.Stream, e.Topic, e.Partition)
			rev := e.Revision
			if rev == 0 {
				rev = partitionRevision(view, e.Stream, e.Topic, e.Partition)
			}
			sh.sendTo(shard.OwningShard(ns, len(n.shards)), &task{req: &purgePartitionReq{partRef: partRef{ns: ns, rev: rev}, gen: e.Generation}})
		case metadata.EffectGroupDeleted:
			st := view.Stream(e.Stream)
			if st == nil {
				continue
			}
			tp := st.Topic(e.Topic)
			if tp == nil {
				continue
			}
			for _, p := range tp.Partitions {
				ns := shard.MustNamespace(e.Stream, e.Topic, p.ID)
				sh.sendTo(shard.OwningShard(ns, len(n.shards)), &task{req: &groupDeletedReq{partRef: partRef{ns: ns, rev: p.Revision}, group: e.Group}})
			}
		case metadata.EffectUserDeleted, metadata.EffectUserDeactivated:
			n.clients.endUserSessions(e.User)
		case metadata.EffectTokenDeleted:
			n.clients.endTokenSessions(e.Token)
		}
	}
}

func partitionRevision(view *metadata.State, stream, topic, id uint32) uint64 {
	if st := view.Stream(stream); st != nil {
		if tp := st.Topic(topic); tp != nil {
			if p, ok := tp.Partition(id); ok {
				return p.Revision
			}
		}
	}
	return 0
}

// serve starts accepting on the listener bindListeners bound, after the
// runtime file names its address.
func (n *Node) serve() error {
	n.handoff = shard.NewRoundRobin(len(n.shards), n.cfg.Cluster.Coordinator.SkipShardZeroForClients)
	if err := n.serveHTTP(); err != nil {
		return err
	}
	if _, err := config.WriteRuntime(n.cfg.RuntimeDir(), n.cfg, config.Bound{TCP: n.bound, HTTP: n.httpBound, WebSocket: n.wsBound, QUIC: n.quicBound,
		MetricsOpen: n.metricsBound, ReplicaID: n.opts.ReplicaID}); err != nil {
		n.stopHTTP()
		return err
	}
	for _, l := range n.listeners {
		n.bg.Add(1)
		go n.acceptLoop(l)
	}
	return nil
}

// startBackground starts the periodic work: retention and PAT expiry.
func (n *Node) startBackground() {
	if d := n.cfg.Logging.SysinfoPrintInterval.Duration; d > 0 {
		n.log.Info("system info is logged periodically", zap.Stringer("every", d))
		n.every(d, n.logSysinfo)
	}
	mc := n.cfg.DataMaintenance.Messages
	if mc.CleanerEnabled && mc.Interval.Duration > 0 {
		n.every(mc.Interval.Duration, func() {
			for i := range n.shards {
				if err := n.rt.Send(i, &task{req: &cleanReq{}}); err != nil {
					n.log.Warn("retention pass skipped: shard inbox full", zap.Int("shard", i))
				}
			}
		})
	}
	pc := n.cfg.PersonalAccessToken.Cleaner
	if pc.Enabled && pc.Interval.Duration > 0 {
		n.every(pc.Interval.Duration, func() {
			if len(n.store.View().ExpiredTokens(nowMicros())) == 0 {
				return
			}
			if err := n.rt.Send(0, &task{req: &systemReq{cmd: metadata.DeleteExpiredTokens{}}}); err != nil {
				n.log.Warn("token expiry skipped: shard 0 inbox full")
			}
		})
	}
}

func (n *Node) every(d time.Duration, f func()) {
	n.bg.Add(1)
	go func() {
		defer n.bg.Done()
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-n.stop:
				return
			case <-t.C:
				f()
			}
		}
	}()
}

// submitSystem queues a system command on shard 0 (from any goroutine).
func (n *Node) submitSystem(c metadata.Command) {
	if n.stopping.Load() {
		return
	}
	if err := n.rt.Send(0, &task{req: &systemReq{cmd: c}}); err != nil {
		n.log.Warn("system command not queued", zap.String("command", fmt.Sprintf("%T", c)), zap.Error(err))
	}
}

// Close stops the listener, ends every connection, drains the shards and
// closes storage.
func (n *Node) Close() error {
	var err error
	n.closeOnce.Do(func() {
		n.stopping.Store(true)
		close(n.stop)
		n.stopGossip() // first, so the others see this node leave rather than fail
		n.stopHTTP()
		n.closeClientListeners()
		n.clients.closeAll()
		n.bg.Wait()
		if n.plane != nil {
			_ = n.plane.Close()
		}
		if n.rt != nil {
			if _, e := n.rt.Shutdown(); e != nil {
				err = e
			}
		}
		n.clients.wait()
		n.closeStorage()
		n.releaseDataDir()
		n.log.Info("iggo server stopped")
	})
	return err
}

func (n *Node) closeStorage() {
	for _, sh := range n.shards {
		if sh != nil {
			sh.closeAll()
		}
	}
	for _, f := range n.fss {
		_ = f.Close()
	}
	n.fss = nil
}

// dataDirEntries lists the data directory (GET_SNAPSHOT_FILE).
func (n *Node) dataDirEntries() ([]string, error) {
	var out []string
	err := filepath.WalkDir(n.cfg.Path, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		info, ierr := d.Info()
		size := int64(0)
		if ierr == nil {
			size = info.Size()
		}
		rel, _ := filepath.Rel(n.cfg.Path, p)
		kind := "f"
		if d.IsDir() {
			kind = "d"
		}
		out = append(out, kind+" "+strconv.FormatInt(size, 10)+" "+rel)
		return nil
	})
	return out, err
}

func u64Bytes(v uint64) []byte { return binary.LittleEndian.AppendUint64(nil, v) }
func u32Bytes(v uint32) []byte { return binary.LittleEndian.AppendUint32(nil, v) }
