package codec

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"
	"github.com/zeebo/xxh3"

	"github.com/iggo/iggo/wire"
)

// Algorithm is a compression codec of the stored form: the byte at offset 1
// of a compressed record's block.
type Algorithm uint8

// Algorithms. The values are on disk: never renumber them.
const (
	None Algorithm = 0
	Gzip Algorithm = 1 // RFC 1952, klauspost/compress/gzip, default level
	Zstd Algorithm = 2 // RFC 8878 frame, klauspost/compress/zstd, SpeedDefault
	LZ4  Algorithm = 3 // LZ4 block format (no frame), pierrec/lz4/v4, fast level
)

func (a Algorithm) String() string {
	switch a {
	case None:
		return "none"
	case Gzip:
		return "gzip"
	case Zstd:
		return "zstd"
	case LZ4:
		return "lz4"
	}
	return fmt.Sprintf("algorithm(%d)", uint8(a))
}

// Block layout (see the package doc).
const (
	blockHeaderSize = 16
	blockMarker     = 0x00
	flagSealed      = 0x01
	entryHeaderSize = 8 // per message: payload_len u32, user_headers_len u32
)

// ErrCompressed: a compressed block is malformed or does not decompress.
var ErrCompressed = errors.New("codec: stored compressed block is damaged")

// Stack is a node's at-rest transformation: compression chosen per batch
// (the topic's codec) and, when encryption is on, sealing with the node's
// key. Encode compresses, then seals; Decode opens, then decompresses.
// Safe for concurrent use.
type Stack struct {
	sealer   Sealer // nil: no encryption
	sections Codec  // Sections(sealer), nil without one
	// maxBody bounds a decompressed body (the largest record the node
	// accepts): a damaged size field cannot make Decode allocate more.
	maxBody int

	zstdOnce sync.Once
	zstdDec  *zstd.Decoder // output bounded by maxBody
	zstdErr  error
}

// NewStack returns the stack sealing with sealer (nil: no encryption) and
// refusing to decompress bodies larger than maxBody bytes.
func NewStack(sealer Sealer, maxBody int) *Stack {
	s := &Stack{sealer: sealer, maxBody: maxBody}
	if sealer != nil {
		s.sections = Sections(sealer)
	}
	return s
}

// Sealed reports whether the stack encrypts.
func (s *Stack) Sealed() bool { return s != nil && s.sealer != nil }

// Encode appends the stored form of a verified producer batch compressed
// with alg (None: not compressed) to dst. changed is false when the stored
// form is the batch as sent (no encryption and nothing to gain from
// compressing), in which case nothing is appended. A batch that alg does
// not make smaller is stored uncompressed.
func (s *Stack) Encode(dst []byte, batch wire.BatchView, alg Algorithm) (out []byte, changed bool, err error) {
	if alg != None {
		out, ok, err := s.encodeCompressed(dst, batch, alg)
		if err != nil || ok {
			return out, ok, err
		}
	}
	if s.sections == nil {
		return dst, false, nil
	}
	out, err = s.sections.Encode(dst, batch)
	return out, err == nil, err
}

// Decode appends the client form of one stored record, given as its
// 256-byte header and its frames (a whole record split at 256, or a poll
// slice of an uncompressed record), to dst.
func (s *Stack) Decode(dst []byte, header, frames []byte) ([]byte, error) {
	if Compressed(frames) {
		return s.decodeCompressed(dst, header, frames)
	}
	if s.sections != nil {
		return s.sections.Decode(dst, header, frames)
	}
	return append(append(dst, header...), frames...), nil
}

// Compressed reports whether frames (a stored record's bytes after its
// header) are in the compressed form: frame 0 has no payload and a
// user-headers block that starts with 0x00, which no client batch can hold
// (every user-headers TLV starts with a non-zero kind, and every sealed
// payload is at least Overhead bytes). A compressed record must be read
// whole: its messages' bytes all sit in frame 0.
func Compressed(frames []byte) bool {
	if len(frames) < wire.FrameHeaderSize+blockHeaderSize {
		return false
	}
	f := wire.Frame(frames)
	return f.PayloadLen() == 0 && f.UserHeadersLen() >= blockHeaderSize && frames[wire.FrameHeaderSize] == blockMarker
}

// OriginalSize is the size of a stored record's client form: what the
// producer sent, with the server's stamps. The record is given as its
// header and its frames (segment.Record), which need not be contiguous.
func (s *Stack) OriginalSize(head, frames []byte) (uint64, error) {
	if len(head) != wire.BatchHeaderSize {
		return 0, fmt.Errorf("codec: record header of %d bytes", len(head))
	}
	size := uint64(len(head) + len(frames))
	if !Compressed(frames) && s.Sealed() {
		// Sections: every payload and every non-empty user-headers block
		// carries a nonce and a tag.
		var sealed uint64
		for off := 0; off < len(frames); {
			f, err := frameAt(frames, off)
			if err != nil {
				return 0, err
			}
			sealed++
			if f.UserHeadersLen() > 0 {
				sealed++
			}
			off += len(f)
		}
		if sealed*Overhead > size {
			return 0, fmt.Errorf("codec: sealed record of %d bytes with %d sections", size, sealed)
		}
		return size - sealed*Overhead, nil
	}
	if Compressed(frames) {
		n := uint64(binary.LittleEndian.Uint32(head[48:]))
		body := uint64(binary.LittleEndian.Uint32(frames[wire.FrameHeaderSize+4:]))
		if body < n*entryHeaderSize {
			return 0, fmt.Errorf("%w: body of %d bytes for %d messages", ErrCompressed, body, n)
		}
		return wire.BatchHeaderSize + n*wire.FrameHeaderSize + body - n*entryHeaderSize, nil
	}
	return size, nil
}

// encodeCompressed writes the compressed form; ok is false when it would
// not be smaller than the uncompressed stored form.
func (s *Stack) encodeCompressed(dst []byte, batch wire.BatchView, alg Algorithm) ([]byte, bool, error) {
	comp, err := s.compressorOf(alg)
	if err != nil {
		return dst, false, err
	}
	rec := batch.Bytes()
	n := int(batch.MessageCount())
	if n == 0 {
		return dst, false, nil
	}
	// The body: every message's lengths and bytes, in order.
	body := getBuf(len(rec) - wire.BatchHeaderSize - n*(wire.FrameHeaderSize-entryHeaderSize))
	defer putBuf(body)
	sections := 0
	it := batch.Frames()
	for f, ok := it.Next(); ok; f, ok = it.Next() {
		p, h := f.Payload(), f.UserHeaders()
		*body = binary.LittleEndian.AppendUint32(*body, uint32(len(p)))
		*body = binary.LittleEndian.AppendUint32(*body, uint32(len(h)))
		*body = append(*body, p...)
		*body = append(*body, h...)
		sections++
		if len(h) > 0 {
			sections++
		}
	}
	if len(*body) > int(^uint32(0)) {
		return dst, false, nil
	}
	plain := len(rec)
	if s.sealer != nil {
		plain += Overhead * sections
	}
	start := len(dst)
	dst = append(dst, rec[:wire.BatchHeaderSize]...)
	f0 := len(dst)
	dst = append(dst, rec[wire.BatchHeaderSize:wire.BatchHeaderSize+wire.FrameHeaderSize]...)
	blk := len(dst)
	dst = append(dst, blockMarker, byte(alg), 0, 0)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(*body)))
	dst = binary.LittleEndian.AppendUint64(dst, xxh3.Hash(*body))
	if s.sealer == nil {
		if dst, err = comp.compress(dst, *body); err != nil {
			return dst[:start], false, err
		}
	} else {
		dst[blk+2] = flagSealed
		cb := getBuf(len(*body) / 2)
		*cb, err = comp.compress(*cb, *body)
		if err == nil {
			dst, err = s.sealer.Seal(dst, *cb)
		}
		putBuf(cb)
		if err != nil {
			return dst[:start], false, err
		}
	}
	if len(dst)-start+(n-1)*wire.FrameHeaderSize >= plain {
		return dst[:start], false, nil // no gain: store it uncompressed
	}
	wire.FinishFrame(dst[f0:], 0)
	it = batch.Frames()
	it.Next()
	for f, ok := it.Next(); ok; f, ok = it.Next() {
		at := len(dst)
		dst = append(dst, f[:wire.FrameHeaderSize]...)
		wire.FinishFrame(dst[at:], 0)
	}
	if err := wire.FinishBatch(dst[start:], uint32(n)); err != nil {
		return dst[:start], false, fmt.Errorf("codec: compressed batch: %w", err)
	}
	return dst, true, nil
}

func (s *Stack) decodeCompressed(dst []byte, header, frames []byte) ([]byte, error) {
	if len(header) != wire.BatchHeaderSize {
		return dst, fmt.Errorf("codec: record header of %d bytes", len(header))
	}
	f0, err := frameAt(frames, 0)
	if err != nil {
		return dst, err
	}
	blk := f0.UserHeaders()
	alg, flags, size := Algorithm(blk[1]), blk[2], binary.LittleEndian.Uint32(blk[4:])
	if flags&^flagSealed != 0 || blk[3] != 0 {
		return dst, fmt.Errorf("%w: block flags %#x reserved %#x", ErrCompressed, flags, blk[3])
	}
	if int64(size) > int64(s.maxBody) {
		return dst, fmt.Errorf("%w: body of %d bytes exceeds %d", ErrCompressed, size, s.maxBody)
	}
	comp, err := s.compressorOf(alg)
	if err != nil {
		return dst, fmt.Errorf("%w: %w", ErrCompressed, err)
	}
	data := blk[blockHeaderSize:]
	if flags&flagSealed != 0 {
		if s.sealer == nil {
			return dst, fmt.Errorf("%w: block is sealed and encryption is off", ErrOpen)
		}
		ob := getBuf(len(data))
		defer putBuf(ob)
		if *ob, err = s.sealer.Open(*ob, data); err != nil {
			return dst, err
		}
		data = *ob
	}
	body := getBuf(int(size))
	defer putBuf(body)
	if *body, err = comp.decompress(*body, data, int(size)); err != nil {
		return dst, fmt.Errorf("%w: %s: %w", ErrCompressed, alg, err)
	}
	if sum := xxh3.Hash(*body); sum != binary.LittleEndian.Uint64(blk[8:]) {
		return dst, fmt.Errorf("%w: body checksum %#x, block says %#x", ErrCompressed, sum, binary.LittleEndian.Uint64(blk[8:]))
	}
	start := len(dst)
	dst = append(dst, header...)
	b := *body
	var n uint32
	for off := 0; off < len(frames); n++ {
		f, err := frameAt(frames, off)
		if err != nil {
			return dst[:start], err
		}
		if n > 0 && len(f) != wire.FrameHeaderSize {
			return dst[:start], fmt.Errorf("%w: frame %d of a compressed record holds bytes", ErrCompressed, n)
		}
		off += len(f)
		if len(b) < entryHeaderSize {
			return dst[:start], fmt.Errorf("%w: body ends before message %d", ErrCompressed, n)
		}
		pl, hl := uint64(binary.LittleEndian.Uint32(b)), uint64(binary.LittleEndian.Uint32(b[4:]))
		if pl+hl > uint64(len(b)-entryHeaderSize) {
			return dst[:start], fmt.Errorf("%w: message %d overruns the body", ErrCompressed, n)
		}
		at := len(dst)
		dst = append(dst, f[:wire.FrameHeaderSize]...)
		dst = append(dst, b[entryHeaderSize:entryHeaderSize+pl+hl]...)
		wire.FinishFrame(dst[at:], int(pl))
		b = b[entryHeaderSize+pl+hl:]
	}
	if len(b) != 0 {
		return dst[:start], fmt.Errorf("%w: %d body bytes after the last message", ErrCompressed, len(b))
	}
	if err := wire.FinishBatch(dst[start:], n); err != nil {
		return dst[:start], fmt.Errorf("codec: decompressed record: %w", err)
	}
	return dst, nil
}

// compressor appends the compressed form of src, or exactly size bytes
// decompressed from src.
type compressor interface {
	compress(dst, src []byte) ([]byte, error)
	decompress(dst, src []byte, size int) ([]byte, error)
}

func (s *Stack) compressorOf(a Algorithm) (compressor, error) {
	switch a {
	case Gzip:
		return gzipCodec{}, nil
	case Zstd:
		s.zstdOnce.Do(func() {
			s.zstdDec, s.zstdErr = zstd.NewReader(nil, zstd.WithDecoderConcurrency(runtime.GOMAXPROCS(0)),
				zstd.WithDecoderMaxMemory(uint64(s.maxBody)+1))
		})
		if s.zstdErr != nil {
			return nil, s.zstdErr
		}
		return zstdCodec{s.zstdDec}, nil
	case LZ4:
		return lz4Codec{}, nil
	}
	return nil, fmt.Errorf("codec: unknown compression algorithm %d", uint8(a))
}

// ---------------------------------------------------------------------------
// gzip

var gzipWriters = sync.Pool{New: func() any {
	w, _ := gzip.NewWriterLevel(nil, gzip.DefaultCompression)
	return w
}}

var gzipReaders sync.Pool // *gzip.Reader

type gzipCodec struct{}

func (gzipCodec) compress(dst, src []byte) ([]byte, error) {
	buf := bytes.NewBuffer(dst)
	w := gzipWriters.Get().(*gzip.Writer)
	defer gzipWriters.Put(w)
	w.Reset(buf)
	if _, err := w.Write(src); err != nil {
		return dst, err
	}
	if err := w.Close(); err != nil {
		return dst, err
	}
	return buf.Bytes(), nil
}

func (gzipCodec) decompress(dst, src []byte, size int) ([]byte, error) {
	var r *gzip.Reader
	if v := gzipReaders.Get(); v != nil {
		r = v.(*gzip.Reader)
		if err := r.Reset(bytes.NewReader(src)); err != nil {
			return dst, err
		}
	} else {
		var err error
		if r, err = gzip.NewReader(bytes.NewReader(src)); err != nil {
			return dst, err
		}
	}
	defer gzipReaders.Put(r)
	r.Multistream(false)
	at := len(dst)
	dst = grow(dst, size)
	if _, err := io.ReadFull(r, dst[at:at+size]); err != nil {
		return dst[:at], err
	}
	// Exactly size bytes, and the stream (its CRC and length) ends there.
	var one [1]byte
	if k, err := r.Read(one[:]); k != 0 || err != io.EOF {
		return dst[:at], fmt.Errorf("gzip stream longer than %d bytes or not closed (%v)", size, err)
	}
	return dst, nil
}

// ---------------------------------------------------------------------------
// zstd

var (
	zstdEncOnce sync.Once
	zstdEnc     *zstd.Encoder
	zstdEncErr  error
)

// zstdCodec compresses with one shared encoder (EncodeAll is safe for
// concurrent use) and decompresses with its stack's decoder, whose output
// is bounded by the stack's maxBody.
type zstdCodec struct{ dec *zstd.Decoder }

func (zstdCodec) compress(dst, src []byte) ([]byte, error) {
	zstdEncOnce.Do(func() {
		zstdEnc, zstdEncErr = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithEncoderCRC(false))
	})
	if zstdEncErr != nil {
		return dst, zstdEncErr
	}
	return zstdEnc.EncodeAll(src, dst), nil
}

func (z zstdCodec) decompress(dst, src []byte, size int) ([]byte, error) {
	at := len(dst)
	dst = grow(dst, size)[:at]
	out, err := z.dec.DecodeAll(src, dst)
	if err != nil {
		return dst[:at], err
	}
	if len(out)-at != size {
		return dst[:at], fmt.Errorf("zstd: %d bytes, want %d", len(out)-at, size)
	}
	return out, nil
}

// ---------------------------------------------------------------------------
// lz4 (block format: the sizes live in the block header)

var lz4Compressors = sync.Pool{New: func() any { return new(lz4.Compressor) }}

type lz4Codec struct{}

func (lz4Codec) compress(dst, src []byte) ([]byte, error) {
	at := len(dst)
	dst = grow(dst, lz4.CompressBlockBound(len(src)))
	c := lz4Compressors.Get().(*lz4.Compressor)
	k, err := c.CompressBlock(src, dst[at:])
	lz4Compressors.Put(c)
	if err != nil {
		return dst[:at], err
	}
	if k == 0 && len(src) > 0 {
		// Incompressible: the encoder falls back to storing the batch
		// uncompressed, since this is larger.
		return append(dst[:at], src...), nil
	}
	return dst[:at+k], nil
}

func (lz4Codec) decompress(dst, src []byte, size int) ([]byte, error) {
	at := len(dst)
	dst = grow(dst, size)
	if size == 0 {
		if len(src) != 0 {
			return dst[:at], errors.New("lz4: bytes for an empty body")
		}
		return dst[:at], nil
	}
	k, err := lz4.UncompressBlock(src, dst[at:at+size])
	if err != nil {
		return dst[:at], err
	}
	if k != size {
		return dst[:at], fmt.Errorf("lz4: %d bytes, want %d", k, size)
	}
	return dst[:at+size], nil
}

// grow returns b extended by n bytes (contents of the new bytes undefined).
func grow(b []byte, n int) []byte {
	if cap(b)-len(b) < n {
		nb := make([]byte, len(b), len(b)+n)
		copy(nb, b)
		b = nb
	}
	return b[:len(b)+n]
}

var bufs sync.Pool // *[]byte

func getBuf(n int) *[]byte {
	if v := bufs.Get(); v != nil {
		b := v.(*[]byte)
		if cap(*b) >= n {
			*b = (*b)[:0]
			return b
		}
	}
	b := make([]byte, 0, n)
	return &b
}

// putBuf returns a buffer to the pool, unless it is large (a poll of a
// huge record should not pin its buffers).
func putBuf(b *[]byte) {
	if cap(*b) <= 4<<20 {
		bufs.Put(b)
	}
}
