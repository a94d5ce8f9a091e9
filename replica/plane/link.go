package plane

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/vsr"
)

// link is one established, authenticated connection to a peer. It has a
// reader and a writer goroutine; either closes the link on error.
type link struct {
	t    *Transport
	p    *peer
	conn net.Conn // what frames are read from and written to (TLS or raw)
	raw  net.Conn // the TCP socket; closing it stops both goroutines at once
	done chan struct{}
	once sync.Once
}

var errReplaced = errors.New("replaced by a newer link from the same peer")

// startLink installs a link for p, replacing (and closing) any previous
// one, and starts its goroutines. It returns nil if the transport closed
// meanwhile.
func (t *Transport) startLink(p *peer, conn, raw net.Conn) *link {
	l := &link{t: t, p: p, conn: conn, raw: raw, done: make(chan struct{})}
	// Under t.mu so Close either sees this link or prevents it.
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		raw.Close()
		return nil
	}
	t.wg.Add(2)
	old := p.link.Swap(l)
	t.mu.Unlock()
	p.since.Store(time.Now().UnixNano())
	p.st.connects.Add(1)
	if old != nil {
		old.close(errReplaced)
	}
	t.log.Info("replica link up", zap.Uint8("peer", p.ID), zap.Stringer("remote", raw.RemoteAddr()))
	go l.readLoop()
	go l.writeLoop()
	return l
}

// close tears the link down once. If it is still the peer's current link,
// the peer becomes disconnected and its queued frames are discarded
// (counted): they were addressed to a connection that no longer exists, and
// VSR retransmits whatever still matters.
func (l *link) close(cause error) {
	l.once.Do(func() {
		close(l.done)
		// The raw socket, not the TLS wrapper: no close_notify to wait for;
		// frames are self-delimiting and sealed, so truncation is harmless.
		l.raw.Close()
		p := l.p
		p.st.disconnects.Add(1)
		if !p.link.CompareAndSwap(l, nil) {
			return // replaced: the queue belongs to the new link
		}
		p.since.Store(time.Now().UnixNano())
		for dropped := false; !dropped; {
			select {
			case <-p.queue:
				p.st.droppedQueued.Add(1)
			default:
				dropped = true
			}
		}
		if !errors.Is(cause, ErrClosed) {
			l.t.log.Info("replica link down", zap.Uint8("peer", p.ID), zap.Error(cause))
		}
	})
}

// violation closes the link for a protocol violation by an authenticated
// peer, counting it under reason.
func (l *link) violation(r Reason, format string, args ...any) {
	err := refuse(r, format, args...)
	l.t.logRefusal(r, "replica link closed for a protocol violation", zap.Uint8("peer", l.p.ID), zap.Error(err))
	l.close(err)
	l.p.st.violations.Add(1)
	l.t.refusals[r].Add(1)
}

// readLoop reads frames: the 256-byte header first, then — only once the
// header's seal verifies and its size is within max_message_size — a buffer
// of exactly that size for this frame alone (the receiver keeps bodies by
// reference, so buffers are never reused), the body, and the full vsr
// decode, cluster id and sender checks. A frame that fails any check closes
// the link: after a bad header the stream position cannot be trusted.
func (l *link) readLoop() {
	t, p := l.t, l.p
	defer t.wg.Done()
	var r io.Reader = l.conn
	if t.cfg.ReadBufferSize > 0 {
		r = bufio.NewReaderSize(l.conn, t.cfg.ReadBufferSize)
	}
	var hdr vsr.Header
	for {
		if _, err := io.ReadFull(r, hdr[:]); err != nil {
			l.close(err)
			return
		}
		size, err := vsr.FrameSize(hdr[:], t.cfg.MaxMessageSize)
		if err != nil {
			l.violation(ReasonFrameTooLarge, "replica %d: %v", p.ID, err)
			return
		}
		if !hdr.SealValid() {
			l.violation(ReasonFrameCorrupt, "replica %d: header checksum mismatch", p.ID)
			return
		}
		frame := make([]byte, size)
		copy(frame, hdr[:])
		if _, err := io.ReadFull(r, frame[vsr.HeaderSize:]); err != nil {
			l.close(err)
			return
		}
		m, err := vsr.Decode(frame, t.cfg.MaxMessageSize)
		if err != nil {
			l.violation(ReasonFrameCorrupt, "replica %d: %v", p.ID, err)
			return
		}
		if m.Header.Cluster() != t.cluster {
			l.violation(ReasonFrameCluster, "replica %d sent a frame of cluster %s", p.ID, m.Header.Cluster())
			return
		}
		if m.Header.Replica() != p.ID {
			l.violation(ReasonFrameSender, "replica %d sent a frame signed as replica %d", p.ID, m.Header.Replica())
			return
		}
		p.st.framesIn.Add(1)
		p.st.bytesIn.Add(uint64(size))
		if err := t.cfg.Deliver(p.ID, m.Header.Group(), m); err != nil {
			p.st.droppedIn.Add(1)
			t.logDrop(p.ID, m, err)
		}
	}
}

// logDrop logs inbound drops at debug level, rate-limited: under overload
// they come in bursts and the counter is the signal.
func (t *Transport) logDrop(from uint8, m vsr.Message, err error) {
	if ok, held := t.limit.allow(ReasonCount, time.Now()); ok {
		t.log.Debug("replica frame dropped: shard inbox refused it", zap.Uint8("peer", from),
			zap.Uint64("group", m.Header.Group()), zap.Stringer("command", m.Header.Command()),
			zap.Uint64("suppressed_since_last", held), zap.Error(err))
	}
}

// batchBytesMax stops a batch from growing once it holds this many bytes,
// so one vectored write stays short enough for WriteTimeout to mean "the
// peer stopped reading" rather than "the batch was large".
const batchBytesMax = 4 << 20

// writeLoop takes the first queued frame, then whatever else is already
// queued up to max_batch frames (or batchBytesMax bytes), and writes them in one vectored write (writev on
// TCP: header and body iovecs, no copy). Over TLS, where records are the
// unit, frames are packed through a 64 KiB buffer instead, so many small
// frames share records and syscalls.
func (l *link) writeLoop() {
	t, p := l.t, l.p
	defer t.wg.Done()
	maxBatch := t.cfg.MaxBatch
	bufs := make(net.Buffers, 0, 2*maxBatch)
	var bw *bufio.Writer
	if _, isTLS := l.conn.(*tls.Conn); isTLS {
		bw = bufio.NewWriterSize(l.conn, 64<<10)
	}
	for {
		var f outFrame
		select {
		case <-l.done:
			return
		case f = <-p.queue:
		}
		bufs = bufs[:0]
		frames, bytes := 0, 0
		add := func(f outFrame) {
			bufs = append(bufs, f.head)
			if len(f.body) > 0 {
				bufs = append(bufs, f.body)
			}
			frames++
			bytes += len(f.head) + len(f.body)
		}
		add(f)
	batch:
		for frames < maxBatch && bytes < batchBytesMax {
			select {
			case f = <-p.queue:
				add(f)
			default:
				break batch
			}
		}
		_ = l.conn.SetWriteDeadline(time.Now().Add(t.cfg.WriteTimeout))
		var err error
		if bw != nil {
			for _, b := range bufs {
				if _, err = bw.Write(b); err != nil {
					break
				}
			}
			if err == nil {
				err = bw.Flush()
			}
			clear(bufs)
		} else {
			w := bufs // WriteTo consumes its receiver and clears what it wrote
			_, err = w.WriteTo(l.conn)
		}
		if err != nil {
			p.st.droppedQueued.Add(uint64(frames))
			l.close(fmt.Errorf("writing %d frames: %w", frames, err))
			return
		}
		p.st.framesOut.Add(uint64(frames))
		p.st.bytesOut.Add(uint64(bytes))
		p.st.batches.Add(1)
	}
}
