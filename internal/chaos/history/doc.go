// Package history records what the clients of a chaos run did and saw, and
// reads it back for checking.
//
// A history is a sequence of events, one JSON object per line (JSON lines).
// Every client operation contributes two events: an "invoke" carrying its
// arguments and, when the operation ends, an "ok", "fail" or "info" event
// carrying its result, from the same process. Jepsen's vocabulary is kept on
// purpose:
//
//   - ok: the operation took effect and returned the recorded value;
//   - fail: the operation definitely did not take effect (a denial decided
//     before commit, a committed business rejection, or a request that was
//     provably never sent);
//   - info: the outcome is unknown (timeout, connection lost mid-exchange).
//     The operation may take effect at any time after its invocation.
//
// A process performs one operation at a time. After an info outcome the
// worker continues under a fresh process id, so a process never has two
// operations whose effects could overlap. An invocation without a
// completion (the runner itself died) reads back as info.
//
// Process -1 is the nemesis: its events ("fault" operations) record the
// faults injected and healed. Events of type "note" mark phases and carry
// no operation.
//
// # Line format
//
// The first line is the header, type "meta", holding the run's seed, its
// parameters and the fault schedule (the Meta type), so that a history can
// be re-checked alone and its run replayed. Every other line is an Event:
//
//	{"i":17,"t":1234567,"type":"invoke","p":3,"f":"send","v":{...}}
//
//	i     event index, dense from 1
//	t     nanoseconds since the run started (monotonic clock)
//	type  invoke | ok | fail | info | note
//	p     process id (-1 nemesis)
//	f     operation kind (Kind)
//	n     node index that served the operation, when known (completions)
//	v     arguments (invoke) or results (completions), see Value
//	err   error text of fail/info completions
//	code  Iggy error code of fail/info completions, when the server sent one
//
// Messages are named by MsgID, rendered "producer.seq.attempt": each send
// attempt of a logical message (producer, seq) gets a fresh attempt number
// and so a distinct message id on the wire, which is what lets the checker
// tell a retried duplicate from a server bug. Observed messages are
// [offset, "id"] pairs; an id that no producer of this run could have sent
// is rendered "x" + 32 hex digits, and a "!" suffix marks a message whose
// payload did not match its id.
package history
