package vsr_test

import (
	"fmt"

	"github.com/iggo/iggo/vsr"
)

// counter is a tiny deterministic state machine: it counts applied ops.
type counter struct{ n int }

func (c *counter) Apply(h *vsr.Header, body []byte) []byte {
	c.n++
	return []byte(fmt.Sprintf("#%d %s", c.n, body))
}

// Example drives one group of one replica the way a node's shard loop does:
// after every input it drains Ready, persists what it asks for and reports
// the completions (here at once, from memory).
func Example() {
	cfg := vsr.DefaultConfig()
	cfg.Group = vsr.MetadataGroup
	cfg.Durability = vsr.Persisted
	r, err := vsr.New(cfg, &counter{}, vsr.Boot{Incarnation: 1})
	if err != nil {
		panic(err)
	}
	var superblock []byte
	journal := map[uint64][]byte{}
	drain := func() {
		for r.HasReady() {
			rd := r.Ready()
			if rd.State != nil {
				superblock = append(superblock[:0], rd.State...) // write, fsync …
				r.StateDone(nil)
			}
			for _, op := range rd.Journal {
				if op.Kind == vsr.JournalAppend {
					journal[op.Op] = append(op.Header[:], op.Body...) // append (+ fdatasync when op.Sync)
					r.AppendDone(op.Op, op.Header.Identity(), nil)
				}
			}
			for _, m := range rd.Messages {
				_ = m // a group of one sends nothing; others go to replica m.To
			}
			for _, rp := range rd.Replies {
				fmt.Printf("reply to connection %d: op %d, %s, %q\n", rp.Token, rp.Op, rp.Status, rp.Body)
			}
		}
	}
	drain()
	r.Submit(vsr.Request{Token: 7, Operation: 10, WallClock: 1, Body: []byte("hello")})
	drain()
	r.Submit(vsr.Request{Token: 8, Operation: 10, WallClock: 2, Body: []byte("world")})
	drain()
	fmt.Println("journal entries:", len(journal), "state record bytes:", len(superblock) > 0)
	// Output:
	// reply to connection 7: op 1, ok, "#1 hello"
	// reply to connection 8: op 2, ok, "#2 world"
	// journal entries: 2 state record bytes: true
}
