package metrics

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/iggo/iggo/wire"
)

func frameOf(h wire.RequestHeader) []byte {
	b := make([]byte, wire.HeaderSize)
	h.Size = wire.HeaderSize
	h.Put(b)
	return b
}

func TestSlotOf(t *testing.T) {
	for _, c := range []struct {
		h    wire.RequestHeader
		want string
	}{
		{wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CmdPing}, "ping"},
		{wire.RequestHeader{Operation: wire.OpNonReplicated, Code: wire.CmdPollMessages}, "message.poll"},
		{wire.RequestHeader{Operation: wire.OpSendMessages}, "message.send"},
		{wire.RequestHeader{Operation: wire.OpCreateStream}, "stream.create"},
		{wire.RequestHeader{Operation: wire.OpNonReplicated, Code: 9999}, "unknown"},
	} {
		if got := commandNames[slotOf(frameOf(c.h))]; got != c.want {
			t.Errorf("%+v: %q, want %q", c.h, got, c.want)
		}
	}
	if commandNames[slotOf([]byte{1, 2})] != "unknown" {
		t.Fatal("short frame")
	}
}

type src struct{ s Snapshot }

func (x src) MetricsSnapshot(s *Snapshot) { *s = x.s }

func TestInstrumentsAndState(t *testing.T) {
	var nilM *Metrics
	nilM.ObserveRequest(1, nil, time.Second) // a nil *Metrics accepts every call
	nilM.HTTPRequest()
	m := New(src{Snapshot{Streams: 2, Messages: 7, TopicStats: []TopicStat{{Stream: 1, Topic: 2, AppendedMessages: 5, PolledMessages: 4, PolledBytes: 400}},
		Groups: []GroupStat{{Kind: Partition, Status: "normal", Primary: true, CommitLag: 3}}, Ready: true,
		Members: []MemberStat{{Name: "n1", State: "alive"}, {Name: "n2", State: "dead"}},
		Files:   []FileStat{{Shard: 1, Open: 3, Max: 8, Reopens: 5, Closes: 6}}}})
	f := frameOf(wire.RequestHeader{Operation: wire.OpSendMessages})
	for i := 0; i < 3; i++ {
		m.ObserveRequest(wire.TransportHTTP, f, time.Millisecond)
	}
	m.ObserveStorage(GroupCommit, time.Millisecond)
	m.ObserveStorage(Checkpoint, 3*time.Millisecond)
	m.ViewChange(Metadata)
	m.HTTPRequest()
	if n := testutil.CollectAndCount(m.requests); n != 1 {
		t.Fatalf("%d request series", n)
	}
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		// Iggy's own names (a bare "messages" gauge) are kept as they are.
		if strings.HasPrefix(p.Metric, "iggo_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, mf := range mfs {
		names = append(names, mf.GetName())
	}
	all := strings.Join(names, " ")
	for _, want := range []string{"streams", "messages", "http_requests_total", "iggo_request_duration_seconds", "iggo_messages_appended_total",
		"iggo_messages_polled_total", "iggo_bytes_polled_total", "iggo_vsr_groups", "iggo_vsr_commit_lag", "iggo_gossip_member_up", "iggo_ready", "go_goroutines", "iggo_storage_submit_seconds",
		"iggo_storage_files_open", "iggo_storage_files_max", "iggo_storage_file_closes_total", "iggo_storage_file_reopens_total"} {
		if !strings.Contains(" "+all+" ", " "+want+" ") {
			t.Errorf("registry lacks %s (has %s)", want, all)
		}
	}
	if out, err := testutil.GatherAndCount(m.Registry(), "iggo_storage_submit_seconds"); err != nil || out != int(storageKinds) {
		t.Fatalf("%d storage series (%v), want one per kind (%d)", out, err, storageKinds)
	}
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, fam := range families {
		if fam.GetName() != "iggo_storage_submit_seconds" {
			continue
		}
		for _, s := range fam.GetMetric() {
			for _, l := range s.GetLabel() {
				if l.GetName() == "kind" && l.GetValue() == "checkpoint" {
					found = s.GetHistogram().GetSampleCount() == 1 && s.GetHistogram().GetSampleSum() == 0.003
				}
			}
		}
	}
	if !found {
		t.Error("the checkpoint observation is not exported as kind=\"checkpoint\"")
	}
	if err := testutil.GatherAndCompare(m.Registry(), strings.NewReader(`
# HELP iggo_storage_file_reopens_total Storage files a shard reopened on use after closing them to make room.
# TYPE iggo_storage_file_reopens_total counter
iggo_storage_file_reopens_total{shard="1"} 5
# HELP iggo_storage_files_open Descriptors a shard's storage files hold now.
# TYPE iggo_storage_files_open gauge
iggo_storage_files_open{shard="1"} 3
`), "iggo_storage_file_reopens_total", "iggo_storage_files_open"); err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(m.httpRequests); v != 1 {
		t.Fatalf("http_requests_total %v", v)
	}
}
