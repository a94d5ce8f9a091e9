package replica

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/codec"
	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// KeyCheckFile, under path, proves the encryption key a data directory was
// written with (codec.KeyCheck); it never holds the key.
const KeyCheckFile = "encryption_key_check"

// atRest is the node's batch codec (package codec): nil stores batches as
// sent.
type atRest struct {
	codec codec.Codec
	key   []byte
}

func newAtRest(cfg *config.Config) (atRest, error) {
	if !cfg.Encryption.Enabled {
		return atRest{}, nil
	}
	key, err := codec.ParseKey(cfg.Encryption.Key)
	if err != nil {
		return atRest{}, fmt.Errorf("replica: encryption.key: %w", err)
	}
	s, err := codec.NewAESGCM(key)
	if err != nil {
		return atRest{}, fmt.Errorf("replica: encryption.key: %w", err)
	}
	return atRest{codec: codec.Sections(s), key: key}, nil
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
	case n.atRest.codec == nil && file != nil:
		return fmt.Errorf("replica: %s was written with encryption at rest (%s exists): set encryption.enabled = true and its encryption.key (IGGY_ENCRYPTION_KEY)", n.cfg.Path, path)
	case n.atRest.codec == nil:
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
// dst) once, before it becomes a prepare. A stored batch must still fit a
// prepare: sealing grows every message.
func (n *Node) encodeSend(dst []byte, batch wire.BatchView) ([]byte, wire.Code) {
	out, err := n.atRest.codec.Encode(dst, batch)
	if err != nil {
		n.log.Error("encryption at rest: cannot encode a batch", zap.Error(err))
		return dst, wire.CodeCannotEncryptData
	}
	if uint64(len(out)-len(dst))+vsr.HeaderSize > uint64(n.maxFrame) {
		return dst, wire.CodeInvalidMessagesSize
	}
	return out, 0
}

// decodePoll rewrites a poll's records into their client form in buf and
// returns the new parts. parts are whole stored records or, for a record
// cut to the poll's range, a 256-byte header followed by its frames.
func (n *Node) decodePoll(buf []byte, parts [][]byte) ([]byte, [][]byte, wire.Code) {
	buf = buf[:0]
	var bounds []int
	for i := 0; i < len(parts); i++ {
		hdr := parts[i]
		if len(hdr) < wire.BatchHeaderSize {
			panic(fmt.Sprintf("replica: poll part of %d bytes is no record", len(hdr)))
		}
		h, err := wire.DecodeBatchHeader(hdr)
		if err != nil {
			n.log.Error("encryption at rest: stored record header", zap.Error(err))
			return buf, nil, wire.CodeCannotDecryptData
		}
		frames := hdr[wire.BatchHeaderSize:]
		if uint64(len(hdr)) != h.BatchLength {
			if len(hdr) != wire.BatchHeaderSize || i+1 == len(parts) || uint64(wire.BatchHeaderSize+len(parts[i+1])) != h.BatchLength {
				panic("replica: poll parts are neither a whole record nor a header and its frames")
			}
			i++
			frames = parts[i]
		}
		buf, err = n.atRest.codec.Decode(buf, hdr[:wire.BatchHeaderSize], frames)
		if err != nil {
			n.log.Error("encryption at rest: cannot decode a stored record", zap.Uint64("base_offset", h.BaseOffset), zap.Error(err))
			return buf, nil, wire.CodeCannotDecryptData
		}
		bounds = append(bounds, len(buf))
	}
	out := make([][]byte, 0, len(bounds))
	prev := 0
	for _, b := range bounds {
		out = append(out, buf[prev:b:b])
		prev = b
	}
	return buf, out, 0
}
