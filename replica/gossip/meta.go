package gossip

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// Status is what a node says about itself. Its values are those of the
// status byte of GET_CLUSTER_METADATA, so the node copies it to the wire.
type Status uint8

const (
	StatusHealthy     Status = 0
	StatusStarting    Status = 1
	StatusStopping    Status = 2
	StatusUnreachable Status = 3 // never announced: derived for members that are not alive
	StatusMaintenance Status = 4
)

var statusNames = [...]string{"healthy", "starting", "stopping", "unreachable", "maintenance"}

func (s Status) String() string {
	if int(s) < len(statusNames) {
		return statusNames[s]
	}
	return fmt.Sprintf("status(%d)", uint8(s))
}

// announceable reports whether a node may announce s for itself.
func (s Status) announceable() bool {
	return s == StatusHealthy || s == StatusStarting || s == StatusStopping || s == StatusMaintenance
}

// Role is what a node says about its part in the metadata group. The zero
// value is RoleUnknown, so a Meta that never set it claims nothing.
type Role uint8

const (
	// RoleUnknown: its metadata replica is not in normal status (view
	// change, recovery), so it cannot say who leads.
	RoleUnknown  Role = 0
	RoleLeader   Role = 1 // primary of the metadata group in View
	RoleFollower Role = 2 // a backup in View
)

var roleNames = [...]string{"unknown", "leader", "follower"}

func (r Role) String() string {
	if int(r) < len(roleNames) {
		return roleNames[r]
	}
	return fmt.Sprintf("role(%d)", uint8(r))
}

// Meta is the node information every member gossips about itself.
type Meta struct {
	ReplicaID uint8
	// Name is the node's roster name (also its memberlist name).
	Name string
	// ClientHost is the address clients are told to dial (the roster's
	// advertised_address, else its ip), without a port.
	ClientHost string
	// TCPPort is the node's client TCP port.
	TCPPort uint16
	Status  Status
	// Role and View: its part in the metadata group and the view it is in
	// (advisory: a node that cannot tell who leads itself, say while
	// recovering, points clients at the member claiming leadership in the
	// highest view).
	Role Role
	View uint32
}

// metaVersion is byte 0 of the encoding; a node refuses other versions.
const metaVersion = 2

// metaFixed is the size of the fixed part before the name.
const metaFixed = 10

// MetaMax bounds an encoded Meta (memberlist allows 512 bytes).
const MetaMax = 512

// ErrMetaMalformed is wrapped by every DecodeMeta error.
var ErrMetaMalformed = errors.New("gossip: malformed node meta")

// Encode writes m:
//
//	0  u8   version (2)
//	1  u8   replica id
//	2  u8   status (a Status other than Unreachable)
//	3  u8   role: 0 unknown, 1 leader, 2 follower
//	4  u16  client tcp port, little-endian
//	6  u32  metadata group view, little-endian
//	10 u8   name length n (1..255), then n bytes of name
//	…  u8   client host length h (0..255), then h bytes of host
//
// Nothing may follow. It fails when a string is too long or the whole
// exceeds MetaMax.
func (m Meta) Encode() ([]byte, error) {
	if len(m.Name) == 0 || len(m.Name) > 255 || len(m.ClientHost) > 255 {
		return nil, fmt.Errorf("gossip: meta name %d bytes, host %d bytes: want 1..255 and 0..255", len(m.Name), len(m.ClientHost))
	}
	if !m.Status.announceable() {
		return nil, fmt.Errorf("gossip: status %s cannot be announced", m.Status)
	}
	if m.Role > RoleFollower {
		return nil, fmt.Errorf("gossip: role %s cannot be announced", m.Role)
	}
	if n := metaFixed + 2 + len(m.Name) + len(m.ClientHost); n > MetaMax {
		return nil, fmt.Errorf("gossip: meta of %d bytes exceeds %d", n, MetaMax)
	}
	b := make([]byte, 0, metaFixed+2+len(m.Name)+len(m.ClientHost))
	b = append(b, metaVersion, m.ReplicaID, byte(m.Status), byte(m.Role), byte(m.TCPPort), byte(m.TCPPort>>8))
	b = binary.LittleEndian.AppendUint32(b, m.View)
	b = append(b, byte(len(m.Name)))
	b = append(b, m.Name...)
	b = append(b, byte(len(m.ClientHost)))
	b = append(b, m.ClientHost...)
	return b, nil
}

// DecodeMeta parses an encoded Meta strictly; it never panics.
func DecodeMeta(b []byte) (Meta, error) {
	bad := func(format string, args ...any) (Meta, error) {
		return Meta{}, fmt.Errorf("%w: %s", ErrMetaMalformed, fmt.Sprintf(format, args...))
	}
	if len(b) < metaFixed+2 || len(b) > MetaMax {
		return bad("%d bytes", len(b))
	}
	if b[0] != metaVersion {
		return bad("version %d", b[0])
	}
	m := Meta{ReplicaID: b[1], Status: Status(b[2]), Role: Role(b[3]), TCPPort: binary.LittleEndian.Uint16(b[4:6]),
		View: binary.LittleEndian.Uint32(b[6:10])}
	if !m.Status.announceable() {
		return bad("status %d", b[2])
	}
	if m.Role > RoleFollower {
		return bad("role %d", b[3])
	}
	n := int(b[metaFixed])
	if n == 0 || metaFixed+1+n+1 > len(b) {
		return bad("name length %d in %d bytes", n, len(b))
	}
	m.Name = string(b[metaFixed+1 : metaFixed+1+n])
	h := int(b[metaFixed+1+n])
	if metaFixed+2+n+h != len(b) {
		return bad("host length %d leaves %d bytes", h, len(b)-metaFixed-2-n)
	}
	m.ClientHost = string(b[metaFixed+2+n:])
	return m, nil
}
