package chaos

import (
	"errors"
	"fmt"
	"io"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/internal/chaos/schedule"
)

// Network choices.
const (
	NetworkAuto  = "auto"  // netns when faults need a network and it is available, else proxy
	NetworkNetns = "netns" // network namespaces (root, ip, nft)
	NetworkProxy = "proxy" // userspace proxy on loopback
	NetworkNone  = "none"  // nodes on loopback, no network faults
)

// Options configure one run. Zero values take the defaults noted; Defaults
// returns them filled in.
type Options struct {
	// Seed draws the fault schedule and the workload's choices (default:
	// the current time).
	Seed int64 `json:"seed"`
	// Duration is the workload-and-faults phase (default 30 s).
	Duration time.Duration `json:"duration"`
	// Nodes is the cluster size (default 1).
	Nodes int `json:"nodes"`

	// Server is the iggo-server binary. Empty with Fake set runs the fake
	// node (package fakenode) re-executing this binary.
	Server string `json:"server,omitempty"`
	// ServerArgs are appended to every server command line.
	ServerArgs []string `json:"server_args,omitempty"`
	Fake       bool     `json:"fake,omitempty"`
	// FakeBugs switches on fake-node bugs (fakenode.Bugs).
	FakeBugs []string `json:"fake_bugs,omitempty"`
	// Username and Password log the clients in (default iggy/iggy, the
	// server's --with-default-root-credentials).
	Username string `json:"username,omitempty"`
	Password string `json:"-"`
	// BootTimeout bounds a node's start until its client port answers
	// (default 30 s).
	BootTimeout time.Duration `json:"boot_timeout"`

	// Network is auto, netns, proxy or none (default auto).
	Network string `json:"network"`

	// Faults are the kinds the schedule draws (default: kill and pause;
	// with 3 or more nodes also partition, partition-oneway, isolate and
	// wipe). Interval and FaultLength are the mean quiet time and fault
	// length (defaults 3 s and 2 s). AllowTotal permits faults beyond
	// what the cluster tolerates (default: on for a single node, whose
	// every fault is total).
	Faults      []schedule.Kind `json:"faults"`
	Interval    time.Duration   `json:"interval"`
	FaultLength time.Duration   `json:"fault_length"`
	AllowTotal  *bool           `json:"allow_total,omitempty"`
	// CorruptFiles are the base-name patterns corruption picks from
	// (default fault.DefaultDataFiles; the fake node uses messages.log).
	CorruptFiles []string `json:"corrupt_files,omitempty"`

	// Workload sizes (defaults: 3 partitions, 2 producers, 2 consumers, 2
	// group members, 1 metadata worker, batches up to 5 messages of 64
	// bytes, 2 s per operation).
	Partitions      int           `json:"partitions"`
	Producers       int           `json:"producers"`
	Consumers       int           `json:"consumers"`
	GroupMembers    int           `json:"group_members"`
	MetadataWorkers int           `json:"metadata_workers"`
	BatchMax        int           `json:"batch_max"`
	MessageSize     int           `json:"message_size"`
	OpTimeout       time.Duration `json:"op_timeout"`
	Think           time.Duration `json:"think"`
	MaxOps          int           `json:"max_ops"`

	// LivenessOps successful operations are required within
	// LivenessDeadline after healing (defaults 20 and 30 s);
	// ConvergeTimeout bounds the final reads' wait for every node to hold
	// every acknowledged message (default 60 s).
	LivenessOps      int           `json:"liveness_ops"`
	LivenessDeadline time.Duration `json:"liveness_deadline"`
	ConvergeTimeout  time.Duration `json:"converge_timeout"`
	// StrictReads checks reads as linearizable (default: on for a single
	// node, off for clusters whose followers may serve stale reads).
	StrictReads *bool `json:"strict_reads,omitempty"`
	// AtLeastOnce runs producers as Iggy's SDKs send (no producer
	// identity, a failed batch resent with new ids) and lets the checker
	// accept a logical message landed twice. Off (the default), a batch is
	// resent as it is and the checker allows no duplicate at all.
	AtLeastOnce bool `json:"at_least_once,omitempty"`

	// WorkDir holds data directories, node logs and the history (default:
	// a new temporary directory). A passing run removes it unless Keep.
	WorkDir string `json:"-"`
	Keep    bool   `json:"-"`
	// Out receives progress lines and the summary (nil: discarded).
	Out    io.Writer   `json:"-"`
	Logger *zap.Logger `json:"-"`
}

// Defaults returns o with every zero value replaced by its default.
func (o Options) Defaults() Options {
	if o.Seed == 0 {
		o.Seed = time.Now().UnixNano()
	}
	dur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	num := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	dur(&o.Duration, 30*time.Second)
	num(&o.Nodes, 1)
	if o.Username == "" {
		o.Username, o.Password = "iggy", "iggy"
	}
	dur(&o.BootTimeout, 30*time.Second)
	if o.Network == "" {
		o.Network = NetworkAuto
	}
	if o.Faults == nil {
		o.Faults = []schedule.Kind{schedule.Kill, schedule.Pause}
		if o.Nodes >= 3 {
			o.Faults = append(o.Faults, schedule.Partition, schedule.PartitionOneWay, schedule.Isolate, schedule.Wipe)
		}
	}
	dur(&o.Interval, 3*time.Second)
	dur(&o.FaultLength, 2*time.Second)
	if o.AllowTotal == nil {
		total := o.Nodes == 1
		o.AllowTotal = &total
	}
	if o.CorruptFiles == nil && o.Fake {
		o.CorruptFiles = []string{"messages.log"}
	}
	num(&o.Partitions, 3)
	num(&o.Producers, 2)
	num(&o.Consumers, 2)
	num(&o.GroupMembers, 2)
	num(&o.MetadataWorkers, 1)
	num(&o.BatchMax, 5)
	num(&o.MessageSize, 64)
	dur(&o.OpTimeout, 2*time.Second)
	dur(&o.Think, 2*time.Millisecond)
	num(&o.MaxOps, 100000)
	num(&o.LivenessOps, 20)
	dur(&o.LivenessDeadline, 30*time.Second)
	dur(&o.ConvergeTimeout, 60*time.Second)
	if o.StrictReads == nil {
		strict := o.Nodes == 1
		o.StrictReads = &strict
	}
	if o.Logger == nil {
		o.Logger = zap.NewNop()
	}
	if o.Out == nil {
		o.Out = io.Discard
	}
	return o
}

// Validate reports unusable options (after Defaults).
func (o *Options) Validate() error {
	var errs []error
	if o.Server == "" && !o.Fake {
		errs = append(errs, errors.New("chaos: no server binary (Server) and not Fake"))
	}
	if o.Server != "" && o.Fake {
		errs = append(errs, errors.New("chaos: Server and Fake are exclusive"))
	}
	if o.Fake && o.Nodes != 1 {
		errs = append(errs, fmt.Errorf("chaos: the fake node does not replicate; run it with 1 node, not %d", o.Nodes))
	}
	if o.Nodes > 9 {
		errs = append(errs, fmt.Errorf("chaos: %d nodes (at most 9)", o.Nodes))
	}
	switch o.Network {
	case NetworkAuto, NetworkNetns, NetworkProxy, NetworkNone:
	default:
		errs = append(errs, fmt.Errorf("chaos: network %q (auto, netns, proxy or none)", o.Network))
	}
	if o.Network == NetworkProxy && o.Nodes > 1 {
		errs = append(errs, errors.New("chaos: the proxy network carries client links only; clusters need netns until the server can be told per-peer addresses"))
	}
	if o.Producers >= 1<<15 {
		errs = append(errs, errors.New("chaos: too many producers"))
	}
	return errors.Join(errs...)
}
