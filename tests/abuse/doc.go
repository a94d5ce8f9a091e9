// Package abuse runs real iggo-server processes (tests/harness) against
// hostile and broken clients and peers, with bounded loads on loopback —
// every loop stops by count and by time, every connection is closed when
// its test ends — and checks that each is refused with a clear Iggy status
// or a closed connection while the node keeps serving everyone else: what
// the node may hold (RSS from /proc/<pid>/status, descriptors), how fast it
// refuses, what it logs (refusals rate-limited, counted in the server's
// output) and that legitimate clients keep being served.
//
// Files:
//
//   - helpers_test.go: the shared helpers (server start with abuse
//     settings, RSS sampling, raw frames and logins, dialing from a chosen
//     loopback address, log-line counting);
//   - intake_test.go: client intake — big-frame trickle, slowloris,
//     connections_max and descriptor exhaustion, accept backoff when the
//     descriptors do run out, the per-address cap before login, the login
//     flood, binary and over the HTTP API;
//   - guard_*_test.go: replica-plane admission, resource caps,
//     authorization and message limits, with their own guard-prefixed
//     helpers (guard_helpers_test.go).
//
// Attackers dial from 127.0.0.2 and up (Linux routes all of 127.0.0.0/8 to
// the loopback interface), legitimate clients from 127.0.0.1, so limits
// keyed by source address can be told apart. Figures measured against the
// code before and after these limits are in the README section "Limits and abuse resistance".
//
// The package has no non-test code; this file only documents it.
package abuse
