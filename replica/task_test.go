package replica

import (
	"testing"

	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/wire"
)

// TestConnTaskReuseAllocatesNothing: a connection's reads go through its
// one task and its preallocated request values — pointing the task at a
// request, dispatching it and finishing it allocate nothing per request.
func TestConnTaskReuseAllocatesNothing(t *testing.T) {
	fsys := vfs.NewFault(1)
	sh := testShard(t, fsys)
	spec := partitionSpec{stream: 1, topic: 2, id: 3, revision: 7, config: topicConfig(metadata.DurabilityPersisted)}
	p, err := sh.openPartition(spec)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := send(t, sh, p, testBatch(t, 0, 4, 100)); !ok {
		t.Fatal("send refused")
	}
	var c struct {
		t    task
		reqs connRequests
	}
	c.t.done = make(chan struct{}, 1)
	at := partRef{ns: p.ns, rev: p.revision}
	forward := func(r request) {
		c.t.req = r
		c.t.resetResult()
		sh.dispatch(&c.t)
		sh.settle()
		select {
		case <-c.t.done:
		default:
			t.Fatal("request not answered")
		}
	}
	getOffset := func() {
		c.reqs.getOffset = getOffsetReq{partRef: at, key: offsetKey{Kind: 1, ID: 1}}
		forward(&c.reqs.getOffset)
	}
	poll := func() {
		r := &c.reqs.poll
		*r = pollReq{partRef: at, strategy: wire.PollFromOffset(0), count: 10, buf: r.buf}
		forward(r)
		if c.t.status != 0 || c.t.poll.Count != 4 {
			t.Fatalf("poll answered status %d, %d messages", c.t.status, c.t.poll.Count)
		}
	}
	getOffset()
	poll()
	if n := testing.AllocsPerRun(100, getOffset); n != 0 {
		t.Errorf("a consumer offset read allocates %.1f times", n)
	}
	// The partition's segment read allocates once per poll
	// (partition/poll.go readRecords: errors.As on a pointer that
	// escapes); the shard and the task add nothing.
	if n := testing.AllocsPerRun(100, poll); n > 1 {
		t.Errorf("a poll allocates %.1f times", n)
	}
}

// TestEarlyTasksFinishAtCompletion: an early task (task.early) finishes
// when it completes; the others wait for the iteration's storage work
// (wakeConns, the internal callbacks in settle). A single node's send is
// not early (its segment write references the connection's buffer), and
// a connection's next request starts not early.
func TestEarlyTasksFinishAtCompletion(t *testing.T) {
	sh := testShard(t, vfs.NewFault(2))
	signalled := func(tk *task) bool {
		select {
		case <-tk.done:
			return true
		default:
			return false
		}
	}
	late := &task{done: make(chan struct{}, 1)}
	early := &task{done: make(chan struct{}, 1), early: true}
	ran := 0
	earlyInternal := &task{early: true, then: func(*task) { ran++ }}
	sh.complete(late)
	sh.complete(early)
	sh.complete(earlyInternal)
	if signalled(late) || !signalled(early) || ran != 1 {
		t.Fatalf("at completion: late %v, early %v, early callback ran %d times", signalled(late), signalled(early), ran)
	}
	sh.wakeConns()
	if !signalled(late) {
		t.Fatal("late task not finished by wakeConns")
	}

	spec := partitionSpec{stream: 1, topic: 2, id: 3, revision: 7, config: topicConfig(metadata.DurabilityReplicated)}
	p, err := sh.openPartition(spec)
	if err != nil {
		t.Fatal(err)
	}
	tk := &task{req: &sendReq{partRef: partRef{ns: p.ns, rev: p.revision}, body: testBatch(t, 0, 2, 10)}}
	if !run(sh, tk) || tk.status != 0 || tk.early {
		t.Fatalf("single-node send: status %d, early %v", tk.status, tk.early)
	}

	tk.early = true
	tk.resetResult()
	if tk.early {
		t.Fatal("a connection's next request starts early")
	}
}
