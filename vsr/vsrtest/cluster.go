package vsrtest

import (
	"fmt"

	"github.com/iggo/iggo/vsr"
)

// Packet is a replica-plane frame in flight.
type Packet struct {
	From, To int
	Frame    []byte
}

// Encode serializes an outbound message into a frame as a transport would.
func Encode(m vsr.Message) []byte {
	f := make([]byte, vsr.HeaderSize+len(m.Body))
	copy(f, m.Header[:])
	copy(f[vsr.HeaderSize:], m.Body)
	return f
}

// Describe renders a frame for traces: command, sender view and the fields
// that matter for the command.
func Describe(m vsr.Message) string {
	h := m.Header
	s := fmt.Sprintf("%s v%d", h.Command(), h.View())
	switch h.Command() {
	case vsr.CmdPrepare:
		s += fmt.Sprintf(" op=%d commit=%d id=%s", h.Op(), h.Commit(), h.Identity())
	default:
		s += " " + vsr.DescribeControl(h)
	}
	return s
}

// Cluster is a group of nodes joined by a FIFO network that can drop, filter
// and partition. Every frame goes through Encode and vsr.Decode.
type Cluster struct {
	Nodes []*Node
	Queue []Packet
	// Cut[i][j] drops frames from i to j.
	Cut [][]bool
	// Filter, when set, drops the packets it returns true for.
	Filter func(p Packet, m vsr.Message) bool
	Trace  func(line string)
}

// NewCluster builds n nodes with fresh disks; cfg returns each one's config.
func NewCluster(n int, cfg func(i int) vsr.Config) *Cluster {
	c := &Cluster{}
	for i := 0; i < n; i++ {
		c.Nodes = append(c.Nodes, NewNode(i, cfg(i), NewDisk()))
	}
	c.Cut = make([][]bool, n)
	for i := range c.Cut {
		c.Cut[i] = make([]bool, n)
	}
	return c
}

func (c *Cluster) tracef(format string, args ...any) {
	if c.Trace != nil {
		c.Trace(fmt.Sprintf(format, args...))
	}
}

// Collect moves every node's outbound messages onto the network.
func (c *Cluster) Collect() {
	for i, n := range c.Nodes {
		for _, e := range n.TakeOut() {
			c.Queue = append(c.Queue, Packet{From: i, To: int(e.To), Frame: Encode(e.Message)})
		}
	}
}

// Step delivers the first queued packet that match accepts (nil: any); it
// reports whether one was delivered or dropped.
func (c *Cluster) Step(match func(p Packet, m vsr.Message) bool) bool {
	c.Collect()
	for i, p := range c.Queue {
		m, err := vsr.Decode(p.Frame, 1<<30)
		if err != nil {
			panic(fmt.Sprintf("vsrtest: replica %d sent an undecodable frame: %v", p.From, err))
		}
		if match != nil && !match(p, m) {
			continue
		}
		c.Queue = append(c.Queue[:i], c.Queue[i+1:]...)
		if c.Cut[p.From][p.To] || (c.Filter != nil && c.Filter(p, m)) || !c.Nodes[p.To].Up {
			c.tracef("r%d -> r%d %s (dropped)", p.From, p.To, Describe(m))
			return true
		}
		c.tracef("r%d -> r%d %s", p.From, p.To, Describe(m))
		c.Nodes[p.To].Deliver(m)
		return true
	}
	return false
}

// Deliver delivers matching packets until none is left; it returns how many
// it handled. limit bounds the loop.
func (c *Cluster) Deliver(match func(p Packet, m vsr.Message) bool, limit int) int {
	n := 0
	for n < limit && c.Step(match) {
		n++
	}
	return n
}

// Tick advances every node by one tick.
func (c *Cluster) Tick() {
	for _, n := range c.Nodes {
		n.Tick()
	}
}

// Settle alternates delivery and ticks until the network is quiet and no
// node has pending I/O, at most maxTicks ticks.
func (c *Cluster) Settle(maxTicks int) {
	for t := 0; t < maxTicks; t++ {
		c.Deliver(nil, 1<<20)
		c.Tick()
		c.Collect()
		if len(c.Queue) == 0 {
			busy := false
			for _, n := range c.Nodes {
				if n.Up && n.PendingIO() > 0 {
					busy = true
				}
			}
			if !busy {
				return
			}
		}
	}
}

// Run delivers and ticks for exactly ticks ticks.
func (c *Cluster) Run(ticks int) {
	for t := 0; t < ticks; t++ {
		c.Deliver(nil, 1<<20)
		c.Tick()
	}
	c.Deliver(nil, 1<<20)
}

// Primary returns the index of a node that is up and is a normal primary,
// or -1.
func (c *Cluster) Primary() int {
	best, view := -1, uint32(0)
	for i, n := range c.Nodes {
		if n.Up {
			if inf := n.R.Info(); inf.IsPrimary && inf.Status == "normal" && (best < 0 || inf.View > view) {
				best, view = i, inf.View
			}
		}
	}
	return best
}
