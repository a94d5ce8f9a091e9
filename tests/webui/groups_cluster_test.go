package webui_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// TestConsumerGroupLag: a member joins a group over TCP; the group page
// shows it with its partitions and the lag of every partition (no commit
// yet: every message); a commit over TCP lowers the lag on the page
// within its refresh, and only on the committed partition.
func TestConsumerGroupLag(t *testing.T) {
	s := startUI(t)
	c := tcpClient(t, s.Addr, "iggy", "iggy")
	ctx := ctxT(t)
	st, err := c.CreateStream(ctx, "shop", nil)
	must(t, err, "create stream")
	tp, err := c.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(st.ID), Name: "sales", PartitionsCount: 2})
	must(t, err, "create topic")
	sid, tid := wire.NumericID(st.ID), wire.NumericID(tp.ID)
	p0, p1 := tp.Partitions[0].ID, tp.Partitions[1].ID
	for _, p := range []uint32{p0, p1} {
		msgs := make([]wire.Message, 10)
		for i := range msgs {
			msgs[i] = wire.Message{Payload: []byte(fmt.Sprintf("sale %d", i))}
		}
		_, err := c.SendMessages(ctx, sid, tid, wire.PartitionByID(p), msgs)
		must(t, err, "send")
	}
	g, err := c.CreateConsumerGroup(ctx, sid, tid, "invoicing")
	must(t, err, "create group")
	member := tcpClient(t, s.Addr, "iggy", "iggy")
	must(t, member.JoinConsumerGroup(ctx, sid, tid, wire.NumericID(g.ID)), "join")

	base := s.HTTPURL()
	b := newBrowser(t)
	b.login(base, "iggy", "iggy")
	b.run(chromedp.Navigate(fmt.Sprintf("%s/ui/groups?stream=shop&topic=sales", base)))
	b.waitJS(`document.querySelectorAll('#groups tbody tr[data-group]').length === 1`)
	if row := b.text(`#groups tbody tr[data-group]`); !contains(row, "invoicing", "1", "2") {
		t.Fatalf("group row %q", row)
	}
	b.run(click(`#groups tbody tr[data-group] button.ghost`))
	lagOf := func(p uint32) string {
		return fmt.Sprintf(`document.querySelector('#lag tbody tr[data-partition="%d"]')?.dataset.lag`, p)
	}
	b.waitJS(lagOf(p0) + ` === '10' && ` + lagOf(p1) + ` === '10'`)
	members := b.text(`#members tbody`)
	if !contains(members, fmt.Sprint(p0), fmt.Sprint(p1)) {
		t.Fatalf("members %q: want the member owning both partitions", members)
	}
	if row := b.text(fmt.Sprintf(`#lag tbody tr[data-partition="%d"]`, p0)); !strings.Contains(row, "none") {
		t.Fatalf("lag row before any commit %q: want no committed offset", row)
	}

	// Commit offset 3 on p0: 6 messages after it remain (4..9).
	must(t, member.StoreConsumerOffset(ctx, wire.GroupConsumer(wire.NumericID(g.ID)), sid, tid, wire.SomePartition(p0), 3), "commit")
	b.waitJS(lagOf(p0) + ` === '6'`)
	if v := eval[string](b, lagOf(p1)); v != "10" {
		t.Fatalf("lag of partition %d after a commit on %d: %s, want 10", p1, p0, v)
	}
	row := b.text(fmt.Sprintf(`#lag tbody tr[data-partition="%d"]`, p0))
	if !contains(row, "9", "3", "6") {
		t.Fatalf("lag row after the commit %q: want current 9, committed 3, lag 6", row)
	}
}

// TestClusterNodeTurnsUnhealthy: the cluster page of node 0 lists the
// three nodes healthy, with one leader and each node's own figures (read
// from that node with the same token); a killed node turns unreachable on
// the page, and its figures say they cannot be read.
func TestClusterNodeTurnsUnhealthy(t *testing.T) {
	c := harness.StartCluster(t, harness.ClusterOptions{Env: []string{"IGGY_HTTP_WEB_UI=true"}})
	base := "http://" + c.Nodes[0].HTTPAddr
	b := newBrowser(t)
	b.login(base, "iggy", "iggy")
	b.waitJS(`document.querySelectorAll('#nodes tbody tr[data-node][data-status="healthy"]').length === 3 &&
		document.querySelectorAll('#nodes tbody tr[data-role="leader"]').length === 1`)
	// Every node answered its own summary (version column filled).
	b.waitJS(`[...document.querySelectorAll('#nodes tbody tr[data-node] td:nth-child(8)')].every(td => td.innerText === '0.9.0-iggo')`)
	for _, n := range c.Nodes {
		row := b.text(fmt.Sprintf(`#nodes tbody tr[data-node=%q]`, n.Name))
		if !contains(row, fmt.Sprintf("%s:%d", n.IP, n.TCPPort), fmt.Sprintf("%s:%d", n.IP, n.HTTPPort)) {
			t.Fatalf("row of %s %q: want its tcp and http addresses", n.Name, row)
		}
	}
	if v := b.text(`#cluster-cards`); !strings.Contains(v, "3 of 3") {
		t.Fatalf("cluster cards %q", v)
	}

	c.Kill(2)
	b.waitJS(`document.querySelector('#nodes tbody tr[data-node="node-2"]').dataset.status === 'unreachable'`)
	b.waitJS(`document.querySelector('#nodes tbody tr[data-node="node-2"] td:nth-child(8)').innerText === 'n/a'`)
	if v := b.text(`#cluster-cards`); !strings.Contains(v, "2 of 3") {
		t.Fatalf("cluster cards after the kill %q", v)
	}
	if n := eval[int](b, `document.querySelectorAll('#nodes tbody tr[data-status="healthy"]').length`); n != 2 {
		t.Fatalf("%d healthy nodes after killing one", n)
	}
}
