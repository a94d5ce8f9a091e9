// Package vsrtest drives vsr replicas in memory, deterministically, for the
// scripted scenario tests and the simulator: a storage model with crash
// semantics (Disk), a small key-value state machine (KV) and a node that runs
// one replica's Ready loop against them (Node). Nothing here is used by
// production code.
package vsrtest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/iggo/iggo/vsr"
)

// KV operations (vsr operation codes above the register code).
const (
	OpPut uint8 = 10 // body: key u8, value u64 → reply: previous value u64
	OpGet uint8 = 11 // body: key u8 → reply: value u64
)

// EncodePut builds a Put body.
func EncodePut(key uint8, value uint64) []byte {
	b := make([]byte, 9)
	b[0] = key
	binary.LittleEndian.PutUint64(b[1:], value)
	return b
}

// EncodeGet builds a Get body.
func EncodeGet(key uint8) []byte { return []byte{key} }

// Applied is what the KV remembers of every op it applied, for the
// simulator's cross-replica checks.
type Applied struct {
	Op       uint64
	Identity vsr.Checksum
	Parent   vsr.Checksum
}

// KV is a deterministic register store. It also records the identity of every
// op it applies and every (client, request) it executed, so checkers can
// compare replicas and count executions.
type KV struct {
	vals     map[uint8]uint64
	Log      []Applied // ops applied since the last restore, in order
	Base     uint64    // op the state was restored to
	Executed map[[24]byte]int
	// hist is append-only: op and identity of every op applied, restores
	// included. Checkpoints ship it as artifact 2, so state transfer moves an
	// artifact that grows between checkpoints, as a partition's active
	// segment does (a staged prefix carries over to a newer checkpoint).
	hist []byte
	// OnApply, when set, sees every applied op (the simulator's checks).
	OnApply func(h *vsr.Header, body, reply []byte)
}

// NewKV returns an empty store.
func NewKV() *KV {
	return &KV{vals: map[uint8]uint64{}, Executed: map[[24]byte]int{}}
}

// Apply implements vsr.StateMachine.
func (kv *KV) Apply(h *vsr.Header, body []byte) []byte {
	kv.Log = append(kv.Log, Applied{Op: h.Op(), Identity: h.Identity(), Parent: h.Parent()})
	kv.hist = binary.LittleEndian.AppendUint64(kv.hist, h.Op())
	id := h.Identity()
	kv.hist = append(kv.hist, id[:]...)
	if h.Operation() != vsr.OperationRegister && !h.Client().IsZero() {
		var k [24]byte
		c := h.Client()
		copy(k[:16], c[:])
		binary.LittleEndian.PutUint64(k[16:], h.Request())
		kv.Executed[k]++
	}
	var reply []byte
	switch h.Operation() {
	case OpPut:
		if len(body) == 9 {
			reply = binary.LittleEndian.AppendUint64(nil, kv.vals[body[0]])
			kv.vals[body[0]] = binary.LittleEndian.Uint64(body[1:])
		}
	case OpGet:
		if len(body) == 1 {
			reply = binary.LittleEndian.AppendUint64(nil, kv.vals[body[0]])
		}
	case vsr.OperationRegister:
		reply = []byte("registered")
	default:
		reply = []byte{h.Operation()}
	}
	if kv.OnApply != nil {
		kv.OnApply(h, body, reply)
	}
	return reply
}

// Value returns the value of key.
func (kv *KV) Value(key uint8) uint64 { return kv.vals[key] }

// Snapshot encodes the store: sorted (key, value) pairs.
func (kv *KV) Snapshot() []byte {
	keys := make([]uint8, 0, len(kv.vals))
	for k := range kv.vals {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b := make([]byte, 0, 9*len(keys))
	for _, k := range keys {
		b = append(b, k)
		b = binary.LittleEndian.AppendUint64(b, kv.vals[k])
	}
	return b
}

// Restore replaces the store with a snapshot taken at op base.
func (kv *KV) Restore(snap []byte, base uint64) error {
	if len(snap)%9 != 0 {
		return errors.New("vsrtest: bad kv snapshot")
	}
	kv.vals = map[uint8]uint64{}
	for i := 0; i < len(snap); i += 9 {
		kv.vals[snap[i]] = binary.LittleEndian.Uint64(snap[i+1:])
	}
	kv.Log = nil
	kv.Base = base
	return nil
}

// History returns the applied-op history (artifact 2 of a checkpoint):
// per op, op u64 then its identity (16 bytes).
func (kv *KV) History() []byte { return append([]byte(nil), kv.hist...) }

// RestoreHistory replaces the history with one a checkpoint at op base
// shipped: ops strictly increasing, none above base.
func (kv *KV) RestoreHistory(h []byte, base uint64) error {
	if len(h)%histEntry != 0 {
		return fmt.Errorf("vsrtest: history of %d bytes", len(h))
	}
	var last uint64
	for i := 0; i < len(h); i += histEntry {
		op := binary.LittleEndian.Uint64(h[i:])
		if (i > 0 && op <= last) || op > base {
			return fmt.Errorf("vsrtest: history op %d after %d (checkpoint %d)", op, last, base)
		}
		last = op
	}
	kv.hist = append(kv.hist[:0], h...)
	return nil
}

const histEntry = 8 + 16

// Equal reports whether two stores hold the same values.
func (kv *KV) Equal(o *KV) bool { return bytes.Equal(kv.Snapshot(), o.Snapshot()) }

func (kv *KV) String() string { return fmt.Sprintf("kv%v", kv.vals) }
