package check

import (
	"strings"
	"testing"

	"github.com/iggo/iggo/internal/chaos/history"
	"github.com/iggo/iggo/wire"
)

// base is a valid two-node, one-partition history: two acknowledged
// batches, one unknown send that landed, one unknown that did not, one
// failed send; it returns the final log for the caller to read back.
func base(b *builder) []history.MsgID {
	b.sendOK(0, 0, 0, id(0, 0, 1), id(0, 1, 1))
	b.invoke(1, history.Send, sendArgs(0, id(1, 0, 1)))
	b.info(1, history.Send) // lands later
	b.invoke(11, history.Send, sendArgs(0, id(1, 0, 2)))
	b.info(11, history.Send) // never lands
	b.invoke(21, history.Send, sendArgs(0, id(1, 0, 3)))
	b.fail(21, history.Send, int(wire.CodeTransientNotAccepted))
	b.sendOK(0, 0, 3, id(0, 2, 1))
	return []history.MsgID{id(0, 0, 1), id(0, 1, 1), id(1, 0, 1), id(0, 2, 1)}
}

func TestValidHistoryWithUnknownOutcomes(t *testing.T) {
	b := &builder{}
	log := base(b)
	b.poll(5, 0, 0, 1, obs(1, log[1:3]...))
	b.finalRead(100, 0, 0, obs(0, log...))
	b.finalRead(101, 1, 0, obs(0, log...))
	r := run(t, meta(2, 1), b)
	expect(t, r)
	if r.Stats.MsgAcked != 3 || r.Stats.MsgUnknown != 2 || r.Stats.MsgFailed != 1 || r.Stats.UnknownPresent != 1 {
		t.Errorf("stats %+v", r.Stats)
	}
}

// A logical message resent as a new attempt may land twice only in an
// at-least-once run; by default that is a duplicate.
func TestRetriedLogicalMessageLandsTwice(t *testing.T) {
	b := &builder{}
	b.invoke(1, history.Send, sendArgs(0, id(1, 0, 1)))
	b.info(1, history.Send)
	b.invoke(11, history.Send, sendArgs(0, id(1, 0, 2)))
	b.ok(11, history.Send, 0, ackVal(0, 1))
	b.finalRead(100, 0, 0, obs(0, id(1, 0, 1), id(1, 0, 2)))
	m := meta(1, 1)
	m.Checks.AtLeastOnce = true
	r := run(t, m, b)
	expect(t, r)
	if r.Stats.RetriedLogical != 1 {
		t.Errorf("RetriedLogical = %d, want 1", r.Stats.RetriedLogical)
	}
	r = run(t, meta(1, 1), b)
	expect(t, r, Duplicate)
}

// A batch retried with the same ids is one send: invoked with the first
// attempt, confirmed by the retry; it lands once. Real-time order counts
// from the first attempt's invocation, so a send acknowledged between the
// attempts may sit after it.
func TestRetriedBatchIsOneSend(t *testing.T) {
	b := &builder{}
	b.invoke(1, history.Send, sendArgs(0, id(1, 0, 1), id(1, 1, 1)))
	b.info(1, history.Send) // lost reply: it landed at 0
	b.sendOK(0, 0, 2, id(0, 0, 1))
	b.invoke(11, history.Send, sendArgs(0, id(1, 0, 1), id(1, 1, 1)))
	b.ok(11, history.Send, 0, ackVal(0, 0))
	b.finalRead(100, 0, 0, obs(0, id(1, 0, 1), id(1, 1, 1), id(0, 0, 1)))
	r := run(t, meta(1, 1), b)
	expect(t, r)
	if r.Stats.RetriedSends != 1 || r.Stats.MsgAcked != 3 || r.Stats.MsgUnknown != 0 {
		t.Errorf("stats %+v", r.Stats)
	}
}

// Two confirmations of one retried batch at different offsets, or the
// batch read twice, break exactly-once.
func TestRetriedBatchMismatchAndDuplicate(t *testing.T) {
	b := &builder{}
	b.invoke(1, history.Send, sendArgs(0, id(1, 0, 1)))
	b.ok(1, history.Send, 0, ackVal(0, 0))
	b.invoke(11, history.Send, sendArgs(0, id(1, 0, 1)))
	b.ok(11, history.Send, 0, ackVal(0, 1))
	b.finalRead(100, 0, 0, obs(0, id(1, 0, 1), id(1, 0, 1)))
	expect(t, run(t, meta(1, 1), b), RetryMismatch, Duplicate)
}

func TestLostAcknowledgedMessage(t *testing.T) {
	b := &builder{}
	log := base(b)
	b.finalRead(100, 0, 0, obs(0, log...))
	b.finalRead(101, 1, 0, obs(0, log[:3]...)) // node 1 lost the last batch
	r := run(t, meta(2, 1), b)
	expect(t, r, Lost, Diverged)
	if !strings.Contains(r.Violations[0].Detail+r.Violations[1].Detail, "node 1") {
		t.Errorf("violations do not name node 1: %v", r.Violations)
	}
}

func TestUnplacedAckMustBePresent(t *testing.T) {
	b := &builder{}
	b.invoke(0, history.Send, sendArgs(0, id(0, 0, 1)))
	b.ok(0, history.Send, 0, history.Value{}) // confirmed without placement
	b.finalRead(100, 0, 0, nil)
	expect(t, run(t, meta(1, 1), b), Lost)
}

func TestDuplicateOfAcknowledgedMessage(t *testing.T) {
	b := &builder{}
	log := base(b)
	log = append(log, log[0])
	b.finalRead(100, 0, 0, obs(0, log...))
	expect(t, run(t, meta(1, 1), b), Duplicate)
}

func TestDuplicateOfUnknownMessage(t *testing.T) {
	b := &builder{}
	log := base(b)
	log = append(log, log[2]) // the unknown send landed twice
	b.finalRead(100, 0, 0, obs(0, log...))
	expect(t, run(t, meta(1, 1), b), Duplicate)
}

func TestFailedSendPresent(t *testing.T) {
	b := &builder{}
	log := base(b)
	log = append(log, id(1, 0, 3)) // the failed attempt
	b.finalRead(100, 0, 0, obs(0, log...))
	expect(t, run(t, meta(1, 1), b), FailedPresent)
}

func TestGapInFinalRead(t *testing.T) {
	b := &builder{}
	log := base(b)
	read := obs(0, log...)
	b.sendOK(0, 0, 4, id(0, 3, 1))
	read = append(read, history.Obs{Offset: 5, ID: id(0, 3, 1)}) // offset 4 skipped
	b.finalRead(100, 0, 0, read)
	r := run(t, meta(1, 1), b)
	expect(t, r, Order, Lost)
}

func TestRealTimeOrder(t *testing.T) {
	b := &builder{}
	// B is acknowledged at offset 1 before A is invoked; A gets offset 0.
	b.sendOK(0, 0, 1, id(0, 0, 1))
	b.sendOK(1, 0, 0, id(1, 0, 1))
	b.finalRead(100, 0, 0, obs(0, id(1, 0, 1), id(0, 0, 1)))
	expect(t, run(t, meta(1, 1), b), Order)
}

func TestConcurrentSendsMayLandInAnyOrder(t *testing.T) {
	b := &builder{}
	b.invoke(0, history.Send, sendArgs(0, id(0, 0, 1)))
	b.invoke(1, history.Send, sendArgs(0, id(1, 0, 1)))
	b.ok(0, history.Send, 0, ackVal(0, 1))
	b.ok(1, history.Send, 0, ackVal(0, 0))
	b.finalRead(100, 0, 0, obs(0, id(1, 0, 1), id(0, 0, 1)))
	expect(t, run(t, meta(1, 1), b))
}

func TestBatchSplitByAnotherSend(t *testing.T) {
	b := &builder{}
	b.invoke(0, history.Send, sendArgs(0, id(0, 0, 1), id(0, 1, 1)))
	b.info(0, history.Send)
	b.sendOK(1, 0, 1, id(1, 0, 1))
	b.finalRead(100, 0, 0, obs(0, id(0, 0, 1), id(1, 0, 1), id(0, 1, 1)))
	expect(t, run(t, meta(1, 1), b), Order)
}

func TestOffsetReuseAcrossRestart(t *testing.T) {
	b := &builder{}
	b.sendOK(0, 0, 0, id(0, 0, 1))
	b.sendOK(0, 0, 1, id(0, 1, 1))
	// After a crash the server hands out offset 1 again.
	b.sendOK(1, 0, 1, id(1, 0, 1))
	b.finalRead(100, 0, 0, obs(0, id(0, 0, 1), id(1, 0, 1)))
	expect(t, run(t, meta(1, 1), b), OffsetReuse, Lost)
}

func TestOffsetReuseSeenOnlyByPolls(t *testing.T) {
	b := &builder{}
	b.invoke(0, history.Send, sendArgs(0, id(0, 0, 1)))
	b.info(0, history.Send)
	b.poll(5, 0, 0, 0, obs(0, id(0, 0, 1)))
	b.finalRead(100, 0, 0, obs(0, id(1, 0, 1)))
	expect(t, run(t, meta(1, 1), b), OffsetReuse, Corrupt)
}

func TestCorruptAndForeignMessages(t *testing.T) {
	b := &builder{}
	b.sendOK(0, 0, 0, id(0, 0, 1))
	read := obs(0, id(0, 0, 1))
	read[0].Corrupt = true
	b.finalRead(100, 0, 0, read)
	expect(t, run(t, meta(1, 1), b), Corrupt)

	b = &builder{}
	b.finalRead(100, 0, 0, []history.Obs{{Offset: 0, ID: history.MsgID{Foreign: true, Raw: wire.Uint128{Lo: 7}}}})
	expect(t, run(t, meta(1, 1), b), Corrupt)
}

func TestUnreadableNode(t *testing.T) {
	b := &builder{}
	log := base(b)
	b.finalRead(100, 0, 0, obs(0, log...))
	b.invoke(101, history.FinalRead, history.Value{Stream: tStream, Topic: tTopic, Partition: history.U32(0), Node: history.Int(1)})
	b.info(101, history.FinalRead)
	expect(t, run(t, meta(2, 1), b), Unreadable)
}

func TestOtherTopicsAreIgnored(t *testing.T) {
	b := &builder{}
	b.invoke(0, history.Send, history.Value{Stream: "other", Topic: tTopic, Partition: history.U32(0), Msgs: []history.MsgID{id(0, 0, 1)}})
	b.ok(0, history.Send, 0, ackVal(0, 0))
	b.finalRead(100, 0, 0, nil)
	expect(t, run(t, meta(1, 1), b))
}

func TestToleratedLossAfterDestroyingTheOnlyCopy(t *testing.T) {
	b := &builder{}
	b.sendOK(0, 0, 0, id(0, 0, 1))
	b.invoke(history.NemesisProcess, history.Fault, history.Value{Fault: &history.FaultInfo{Kind: "corrupt", Action: "start", Nodes: []int{0}, Destructive: true}})
	b.ok(history.NemesisProcess, history.Fault, -1, history.Value{})
	b.invoke(history.NemesisProcess, history.Fault, history.Value{Fault: &history.FaultInfo{Kind: "corrupt", Action: "heal", Nodes: []int{0}}})
	b.ok(history.NemesisProcess, history.Fault, -1, history.Value{})
	b.sendOK(0, 0, 0, id(0, 1, 1))
	b.finalRead(100, 0, 0, obs(0, id(0, 1, 1)))
	r := run(t, meta(1, 1), b)
	// The first message is gone with the only copy; its offset was then
	// handed out again, which iggo promises never to do.
	expect(t, r, OffsetReuse)
	if r.Stats.ToleratedLoss != 1 || r.Stats.Faults["corrupt"] != 1 {
		t.Errorf("stats %+v", r.Stats)
	}

	// With three copies the same loss is a violation.
	m := meta(1, 1)
	m.Checks.ReplicaCopies = 3
	expect(t, Check(m, b.events, Options{}), OffsetReuse, Lost)
}

func TestMalformedHistory(t *testing.T) {
	b := &builder{}
	b.invoke(0, history.Send, sendArgs(0, id(0, 0, 1)))
	b.invoke(0, history.Send, sendArgs(0, id(0, 1, 1)))
	expect(t, run(t, meta(1, 1), b), Malformed)

	b = &builder{}
	b.ok(3, history.Send, 0, history.Value{})
	expect(t, run(t, meta(1, 1), b), Malformed)

	b = &builder{}
	b.sendOK(0, 0, 0, id(0, 0, 1))
	b.sendOK(1, 0, 1, id(0, 0, 1), id(0, 1, 1)) // the workload reused an id in another batch
	b.finalRead(100, 0, 0, obs(0, id(0, 0, 1), id(0, 0, 1), id(0, 1, 1)))
	r := run(t, meta(1, 1), b)
	if r.Counts[Malformed] == 0 {
		t.Errorf("reused id not reported as malformed: %v", r.Violations)
	}
}

func TestOpenInvocationIsUnknown(t *testing.T) {
	b := &builder{}
	b.invoke(0, history.Send, sendArgs(0, id(0, 0, 1)))
	b.finalRead(100, 0, 0, obs(0, id(0, 0, 1)))
	r := run(t, meta(1, 1), b)
	expect(t, r)
	if r.Stats.MsgUnknown != 1 || r.Stats.UnknownPresent != 1 {
		t.Errorf("stats %+v", r.Stats)
	}
}

func TestLiveness(t *testing.T) {
	m := meta(1, 1)
	m.Checks.LivenessOps = 2
	m.Checks.LivenessDeadline = 100

	b := &builder{}
	b.finalRead(100, 0, 0, nil)
	expect(t, Check(m, b.events, Options{}), Liveness) // never started

	b = &builder{}
	b.note(history.PhaseLiveness)
	b.sendOK(0, 0, 0, id(0, 0, 1))
	b.invoke(0, history.Send, sendArgs(0, id(0, 1, 1)))
	b.info(0, history.Send)
	b.finalRead(100, 0, 0, obs(0, id(0, 0, 1)))
	expect(t, Check(m, b.events, Options{}), Liveness) // one ok op

	b = &builder{}
	b.note(history.PhaseLiveness)
	b.sendOK(0, 0, 0, id(0, 0, 1))
	b.sendOK(0, 0, 1, id(0, 1, 1))
	b.finalRead(100, 0, 0, obs(0, id(0, 0, 1), id(0, 1, 1)))
	r := Check(m, b.events, Options{})
	expect(t, r)
	if r.Stats.LivenessOK != 2 {
		t.Errorf("LivenessOK = %d", r.Stats.LivenessOK)
	}

	b = &builder{}
	b.note(history.PhaseLiveness)
	b.sendOK(0, 0, 0, id(0, 0, 1))
	b.t += 1000 // past the deadline
	b.sendOK(0, 0, 1, id(0, 1, 1))
	b.finalRead(100, 0, 0, obs(0, id(0, 0, 1), id(0, 1, 1)))
	expect(t, Check(m, b.events, Options{}), Liveness)
}

func TestReportMentionsEverything(t *testing.T) {
	b := &builder{}
	log := base(b)
	b.finalRead(100, 0, 0, obs(0, log[:1]...))
	r := run(t, meta(1, 1), b)
	var sb strings.Builder
	r.Report(&sb)
	for _, want := range []string{"INVALID", "send", "lost", "final read node 0: p0=1", "messages: 3 acknowledged"} {
		if !strings.Contains(sb.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, sb.String())
		}
	}
}

func TestViolationExamplesAreBounded(t *testing.T) {
	b := &builder{}
	var ids []history.MsgID
	for i := 0; i < 50; i++ {
		ids = append(ids, id(0, uint64(i), 1))
	}
	b.sendOK(0, 0, 0, ids...)
	b.finalRead(100, 0, 0, nil)
	r := Check(meta(1, 1), b.events, Options{MaxExamples: 5})
	if r.Counts[Lost] != 50 || len(r.Violations) != 5 {
		t.Errorf("counts %v, %d examples kept", r.Counts, len(r.Violations))
	}
}

func TestCrashIsAViolation(t *testing.T) {
	b := &builder{}
	b.invoke(history.MonitorProcess, history.Fault, history.Value{Fault: &history.FaultInfo{Kind: history.FaultCrash, Action: history.ActionObserved, Nodes: []int{0}, Detail: "exit status 2"}})
	b.ok(history.MonitorProcess, history.Fault, 0, history.Value{})
	b.finalRead(100, 0, 0, nil)
	r := run(t, meta(1, 1), b)
	expect(t, r, Crash)
	if !strings.Contains(r.Violations[0].Detail, "exit status 2") {
		t.Errorf("detail %q", r.Violations[0].Detail)
	}
}

func TestToleratedGapAfterDestroyingTheOnlyCopy(t *testing.T) {
	b := &builder{}
	b.sendOK(0, 0, 0, id(0, 0, 1))
	b.sendOK(0, 0, 1, id(0, 1, 1))
	b.invoke(history.NemesisProcess, history.Fault, history.Value{Fault: &history.FaultInfo{Kind: "corrupt", Action: "start", Nodes: []int{0}, Destructive: true}})
	b.ok(history.NemesisProcess, history.Fault, -1, history.Value{})
	b.finalRead(100, 0, 0, []history.Obs{{Offset: 1, ID: id(0, 1, 1)}})
	r := run(t, meta(1, 1), b)
	expect(t, r)
	if r.Stats.ToleratedLoss != 1 {
		t.Errorf("tolerated %d", r.Stats.ToleratedLoss)
	}
	m := meta(1, 1)
	m.Checks.ReplicaCopies = 3
	expect(t, Check(m, b.events, Options{}), Lost, Order)

	// Tolerance never covers offsets going back.
	b = &builder{}
	b.sendOK(0, 0, 0, id(0, 0, 1))
	b.invoke(history.NemesisProcess, history.Fault, history.Value{Fault: &history.FaultInfo{Kind: "wipe", Action: "start", Nodes: []int{0}, Destructive: true}})
	b.ok(history.NemesisProcess, history.Fault, -1, history.Value{})
	b.sendOK(0, 0, 1, id(0, 1, 1))
	b.finalRead(100, 0, 0, []history.Obs{{Offset: 1, ID: id(0, 1, 1)}, {Offset: 0, ID: id(0, 0, 1)}})
	expect(t, run(t, meta(1, 1), b), Order)
}
