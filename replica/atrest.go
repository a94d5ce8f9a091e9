package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/codec"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// KeyCheckFile, under path, proves the encryption key a data directory was
// written with (codec.KeyCheck); it never holds the key.
const KeyCheckFile = "encryption_key_check"

// atRest is the node's batch codec (package codec): compression per topic
// (compression_codec) and, with encryption.enabled, sealing under the
// node's key. The stack is never nil.
type atRest struct {
	stack *codec.Stack
	key   []byte
}

func newAtRest(cfg *config.Config) (atRest, error) {
	maxBody := int(cfg.MessageBus.MaxMessageSize.Bytes())
	if !cfg.Encryption.Enabled {
		return atRest{stack: codec.NewStack(nil, maxBody)}, nil
	}
	key, err := codec.ParseKey(cfg.Encryption.Key)
	if err != nil {
		return atRest{}, fmt.Errorf("replica: encryption.key: %w", err)
	}
	s, err := codec.NewAESGCM(key)
	if err != nil {
		return atRest{}, fmt.Errorf("replica: encryption.key: %w", err)
	}
	return atRest{stack: codec.NewStack(s, maxBody), key: key}, nil
}

// sealed reports whether encryption at rest is on.
func (a atRest) sealed() bool { return a.stack.Sealed() }

// topicAlgorithm is the stored-form codec of a topic's compression_codec.
func topicAlgorithm(c metadata.Compression) codec.Algorithm {
	switch c {
	case metadata.CompressionGzip:
		return codec.Gzip
	case metadata.CompressionZstd:
		return codec.Zstd
	case metadata.CompressionLZ4:
		return codec.LZ4
	}
	return codec.None
}

// checkKey runs at boot before anything reads partition data: a directory
// written with a key needs that key, and one written without refuses a key
// (its batches are stored as sent, and would not open). A new directory
// with encryption on gets its key check file.
func (n *Node) checkKey(osfs vfs.FS) error {
	path := filepath.Join(n.cfg.Path, KeyCheckFile)
	file, err := vfs.ReadFile(osfs, path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		file = nil
	case err != nil:
		return fmt.Errorf("replica: reading %s: %w", path, err)
	}
	_, serr := osfs.Stat(filepath.Join(n.cfg.Path, "metadata", "superblock"))
	hasData := serr == nil
	switch {
	case !n.atRest.sealed() && file != nil:
		return fmt.Errorf("replica: %s was written with encryption at rest (%s exists): set encryption.enabled = true and its encryption.key (IGGY_ENCRYPTION_KEY)", n.cfg.Path, path)
	case !n.atRest.sealed():
		return nil
	case file != nil:
		if err := codec.VerifyKeyCheck(file, n.atRest.key); err != nil {
			if errors.Is(err, codec.ErrWrongKey) {
				return fmt.Errorf("replica: encryption.key is not the key %s was written with (checked against %s); start with that key", n.cfg.Path, path)
			}
			return fmt.Errorf("replica: %s: %w", path, err)
		}
		return nil
	case hasData:
		return fmt.Errorf("replica: %s holds data written without encryption at rest: encryption.enabled = true needs a new data directory (or set it to false)", n.cfg.Path)
	}
	if err := vfs.MkdirAllSync(osfs, n.cfg.Path, 0o755); err != nil {
		return fmt.Errorf("replica: creating %s: %w", n.cfg.Path, err)
	}
	if err := vfs.WriteFileAtomic(osfs, path, codec.KeyCheck(n.atRest.key), 0o600); err != nil {
		return fmt.Errorf("replica: writing %s: %w", path, err)
	}
	n.log.Info("encryption at rest: new data directory, key check written", zap.String("file", path))
	return nil
}

// encodeSend turns a verified send batch into its stored form (appended to
// dst) once, before it becomes a prepare: compressed with alg (the topic's
// codec), then sealed when encryption is on. changed is false when the
// batch is stored as sent. A stored batch must still fit a prepare:
// sealing grows every message.
func (n *Node) encodeSend(dst []byte, batch wire.BatchView, alg codec.Algorithm) ([]byte, bool, wire.Code) {
	out, changed, err := n.atRest.stack.Encode(dst, batch, alg)
	if err != nil {
		n.log.Error("at rest: cannot encode a batch", zap.Stringer("compression", alg), zap.Bool("encrypted", n.atRest.sealed()), zap.Error(err))
		if n.atRest.sealed() {
			return dst, false, wire.CodeCannotEncryptData
		}
		return dst, false, wire.CodeError
	}
	if changed && uint64(len(out)-len(dst))+vsr.HeaderSize > uint64(n.maxFrame) {
		return dst, false, wire.CodeInvalidMessagesSize
	}
	return out, changed, 0
}

// decodePoll rewrites a poll's records into their client form in buf and
// replaces r.Parts with the result. parts are whole stored records or, for
// a record cut to the poll's range, a 256-byte header followed by its
// frames. A compressed record is never cut on the shard (its messages all
// sit in its first frame): it comes whole, with a cut in r.Cuts that is
// applied here, after decoding. Without encryption, records that are not
// compressed are passed through without a copy.
func (n *Node) decodePoll(buf []byte, r *pollResult) ([]byte, wire.Code) {
	buf = buf[:0]
	sealed := n.atRest.sealed()
	type piece struct {
		ext    []byte
		lo, hi int
	}
	pieces := make([]piece, 0, len(r.Parts))
	parts := r.Parts
	for i := 0; i < len(parts); i++ {
		hdr := parts[i]
		if len(hdr) < wire.BatchHeaderSize {
			panic(fmt.Sprintf("replica: poll part of %d bytes is no record", len(hdr)))
		}
		h, err := wire.DecodeBatchHeader(hdr)
		if err != nil {
			n.log.Error("at rest: stored record header", zap.Error(err))
			return buf, decodeFailure(sealed)
		}
		frames := hdr[wire.BatchHeaderSize:]
		split := false
		if uint64(len(hdr)) != h.BatchLength {
			if len(hdr) != wire.BatchHeaderSize || i+1 == len(parts) || uint64(wire.BatchHeaderSize+len(parts[i+1])) != h.BatchLength {
				panic("replica: poll parts are neither a whole record nor a header and its frames")
			}
			i++
			frames, split = parts[i], true
		}
		if !sealed && !codec.Compressed(frames) {
			pieces = append(pieces, piece{ext: hdr})
			if split {
				pieces = append(pieces, piece{ext: frames})
			}
			continue
		}
		lo := len(buf)
		buf, err = n.atRest.stack.Decode(buf, hdr[:wire.BatchHeaderSize], frames)
		if err != nil {
			n.log.Error("at rest: cannot decode a stored record", zap.Uint64("base_offset", h.BaseOffset), zap.Error(err))
			return buf, decodeFailure(sealed)
		}
		hi := len(buf)
		if cut, ok := r.CutOf(i); ok {
			v, err := wire.ParseBatch(buf[lo:hi])
			if err != nil {
				panic(fmt.Sprintf("replica: decoded record does not parse: %v", err))
			}
			s, ok := v.SliceByOffset(cut.From, cut.Count)
			if !ok || s.Count != cut.Count {
				panic(fmt.Sprintf("replica: poll cut [%d, +%d) of record [%d, +%d) selects %d messages", cut.From, cut.Count, h.BaseOffset, h.MessageCount, s.Count))
			}
			// The kept frames are in place in buf; their new header goes
			// right before them, over the old header or skipped frames.
			it := v.Frames()
			for skip := cut.From - min(cut.From, h.BaseOffset); skip > 0; skip-- {
				it.Next()
			}
			fs := lo + it.Offset()
			if f, ok := it.Next(); !ok || &f[0] != &s.Frames[0] {
				panic("replica: poll cut does not start at the frame of its first offset")
			}
			copy(buf[fs-wire.BatchHeaderSize:fs], s.Header[:])
			lo, hi = fs-wire.BatchHeaderSize, fs+len(s.Frames)
		}
		pieces = append(pieces, piece{lo: lo, hi: hi})
	}
	out := r.Parts[:0]
	for _, p := range pieces {
		if p.ext != nil {
			out = append(out, p.ext)
			continue
		}
		out = append(out, buf[p.lo:p.hi:p.hi])
	}
	r.Parts = out
	return buf, 0
}

// decodeFailure is the code of a stored record that does not decode:
// CannotDecryptData under encryption (as Iggy), else Error.
func decodeFailure(sealed bool) wire.Code {
	if sealed {
		return wire.CodeCannotDecryptData
	}
	return wire.CodeError
}
