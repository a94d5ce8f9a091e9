// Package transport holds the client listeners that hand a byte stream and
// an address to the serving path: plaintext TCP, TCP with TLS, WebSocket,
// WebSocket over TLS and QUIC.
//
// # Hand-off
//
// Every listener is a Listener: its accept loop (run by the node on behalf
// of shard 0) takes a socket and returns it as a net.Conn without reading
// a byte. The node passes it to its one serving path, serve(name, conn),
// which admits it and hands it to a shard. The shard's goroutine then calls
// Handshake on a conn that implements Handshaker (TLS, WebSocket), under a
// deadline, before reading frames: a slow or hostile handshake never holds
// the accept loop. The QUIC listener (quic.go) returns each handshaken
// QUIC connection as a net.Conn through the same interface; the node keeps
// those on shard 0, where the UDP endpoint is.
//
// # TLS
//
// crypto/tls, TLS 1.2 or later, ECDHE with AEAD suites on TLS 1.2. A TLS
// listener never answers plaintext: a client whose first bytes are not a
// TLS record gets a *HandshakeError with Plaintext set, and the connection
// is closed. ServerTLS loads cert_file/key_file, or with self_signed and no
// files generates an ECDSA P-256 certificate kept in memory.
//
// # WebSocket
//
// The WebSocket listener answers one HTTP/1.1 upgrade request (any path),
// then carries the binary protocol exactly as Iggy's server does: each
// request is one binary message holding exactly one frame (256-byte header,
// size at offset 48, then the body), and each reply is written as one
// binary message. A text message, a message holding part of a frame or more
// than one frame, a frame larger than max_message_size, or a WebSocket
// protocol violation fails the read with a *ProtocolError; the serving path
// logs it once (rate-limited) and closes the connection. Ping and pong are
// answered by the library; compression is not negotiated.
//
// # QUIC
//
// Iggy's usage (quic-go): one bidirectional stream per command, the request
// frame on its receive side and the reply frame on its send side, one
// command in flight per connection (max_concurrent_bidi_streams is the
// client's stream credit); TLS 1.3 without ALPN, no 0-RTT, no
// unidirectional streams or datagrams. StreamConn reads the request of the
// current stream and, once a whole reply frame (by its size field) is
// written, closes the stream and takes the next. A stream without a whole
// request header within the grace, one that ends inside its frame, carries
// a second frame or is reset fails the read with a *ProtocolError, and the
// connection is closed with application error 0x1004.
package transport
