// Package abuse runs real iggo-server processes (tests/harness) against
// hostile and broken clients and peers, with bounded loads on loopback, and
// checks that each is refused with a clear Iggy status or a closed
// connection while the node keeps serving everyone else.
package abuse
