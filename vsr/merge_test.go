package vsr

import "testing"

// chain builds normalized prepare headers for ops 1..n prepared in view,
// with a distinguishing salt so different chains differ.
func chain(n int, view uint32, salt byte) []Header {
	hs := make([]Header, n)
	var parent Checksum
	for i := range hs {
		h := &hs[i]
		h.setSize(HeaderSize)
		h.put16(offProtocol, ProtocolVersion)
		h[offCommand] = byte(CmdPrepare)
		h[offReplicaCount] = 3
		h.putSum(offPrepParent, parent)
		h.put64(offPrepOp, uint64(i+1))
		h.put64(offPrepTimestamp, uint64(i+1))
		h.put32(offPrepView, view)
		h[offPrepOperation] = 10
		h[offPrepContext] = salt
		normalize(h)
		parent = h.Identity()
	}
	return hs
}

// vote builds a DoViewChange vote covering ops (commit, head] of c.
func vote(replica int, logView uint32, c []Header, commit, head uint64, nack, present string) *dvcVote {
	d := &dvcVote{replica: replica, logView: logView, commit: commit, op: head}
	if commit > 0 {
		d.commitID = c[commit-1].Identity()
	}
	for op := head; op > commit; op-- {
		d.headers = append(d.headers, c[op-1])
	}
	for i := range nack {
		if nack[i] == '1' {
			d.nack.set(i)
		}
		if present[i] == '1' {
			d.present.set(i)
		}
	}
	return d
}

func TestMergeDVCs(t *testing.T) {
	a := chain(6, 1, 'a')
	b := chain(6, 2, 'b')
	for _, c := range []struct {
		name   string
		votes  []*dvcVote
		status mergeStatus
		head   uint64
		commit uint64
	}{
		{"keeps ops held by a vote, one nack is no proof",
			[]*dvcVote{vote(0, 1, a, 2, 5, "000", "111"), vote(1, 1, a, 2, 3, "0", "1")},
			mergeOK, 5, 2},
		{"a nack quorum truncates",
			[]*dvcVote{vote(0, 1, a, 2, 5, "110", "001"), vote(1, 1, a, 2, 3, "0", "1")},
			mergeOK, 3, 2},
		{"an op after a nack quorum is cut with it",
			[]*dvcVote{vote(0, 1, a, 2, 5, "100", "011"), vote(1, 1, a, 2, 4, "00", "11")},
			mergeOK, 4, 2},
		{"no copy and no proof: wait for more votes",
			[]*dvcVote{vote(0, 1, a, 2, 5, "000", "011"), vote(1, 1, a, 2, 4, "00", "11")},
			mergeAwaiting, 0, 2},
		{"no copy and no proof from everyone: stuck",
			[]*dvcVote{vote(0, 1, a, 2, 5, "000", "011"), vote(1, 1, a, 2, 5, "000", "011"),
				vote(2, 1, a, 2, 5, "000", "011")},
			mergeStuck, 0, 2},
		{"a fenced vote never nacks ops up to its fence",
			[]*dvcVote{vote(0, 1, a, 2, 5, "100", "011"), func() *dvcVote {
				d := vote(1, 1, a, 2, 3, "0", "1")
				d.nackFloor = 5
				return d
			}()},
			mergeAwaiting, 0, 2},
		{"the same vote unfenced completes the nack quorum",
			[]*dvcVote{vote(0, 1, a, 2, 5, "100", "011"), vote(1, 1, a, 2, 3, "0", "1")},
			mergeOK, 4, 2},
		{"the highest log_view is canonical; a different header elsewhere is a nack",
			[]*dvcVote{vote(0, 2, b, 2, 4, "00", "11"), func() *dvcVote {
				// Same committed prefix (ops 1..2 of chain b), then its own ops.
				d := vote(1, 1, b, 2, 2, "", "")
				return d
			}()},
			mergeOK, 4, 2},
		{"a committed op beyond every canonical head becomes the head",
			[]*dvcVote{vote(0, 1, a, 1, 2, "0", "1"), vote(1, 0, a, 4, 4, "", "")},
			mergeOK, 4, 4},
	} {
		t.Run(c.name, func(t *testing.T) {
			res := mergeDVCs(c.votes, 3, 2)
			if res.status != c.status {
				t.Fatalf("status %d, want %d", res.status, c.status)
			}
			if res.commit != c.commit {
				t.Fatalf("commit %d, want %d", res.commit, c.commit)
			}
			if c.status == mergeOK && res.commit+uint64(len(res.headers)) != c.head {
				t.Fatalf("head %d, want %d", res.commit+uint64(len(res.headers)), c.head)
			}
		})
	}
}

// TestMergeRefusesInconsistentVotes: votes that disagree about a committed
// op are a broken invariant, never a merge result.
func TestMergeRefusesInconsistentVotes(t *testing.T) {
	a, b := chain(4, 1, 'a'), chain(4, 1, 'b')
	defer func() {
		if recover() == nil {
			t.Fatal("merge accepted votes that disagree on committed op 3")
		}
	}()
	mergeDVCs([]*dvcVote{vote(0, 1, a, 3, 4, "0", "1"), vote(1, 1, b, 3, 3, "", "")}, 3, 2)
}
