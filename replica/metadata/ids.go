package metadata

import (
	"fmt"
	"strconv"
)

// Identifier names a stream, topic, consumer group or user either by its
// numeric id or by its name, as Iggy's wire Identifier does.
type Identifier struct {
	// Name is the string form; empty means the identifier is numeric.
	Name string
	// ID is the numeric form, meaningful only when Name is empty.
	ID uint32
}

// NumericID returns an identifier that resolves by numeric id.
func NumericID(id uint32) Identifier { return Identifier{ID: id} }

// NamedID returns an identifier that resolves by name. An empty name
// resolves to nothing.
func NamedID(name string) Identifier { return Identifier{Name: name} }

// IsNumeric reports whether the identifier resolves by id.
func (i Identifier) IsNumeric() bool { return i.Name == "" }

func (i Identifier) String() string {
	if i.IsNumeric() {
		return strconv.FormatUint(uint64(i.ID), 10)
	}
	return strconv.Quote(i.Name)
}

// ClientID is a VSR client id (u128 on the wire, low half first). It keys
// consumer-group membership.
type ClientID struct {
	Lo, Hi uint64
}

// IsZero reports whether the id is the invalid all-zero id.
func (c ClientID) IsZero() bool { return c.Lo == 0 && c.Hi == 0 }

func (c ClientID) String() string { return fmt.Sprintf("%016x%016x", c.Hi, c.Lo) }

// Less orders client ids numerically.
func (c ClientID) Less(o ClientID) bool {
	if c.Hi != o.Hi {
		return c.Hi < o.Hi
	}
	return c.Lo < o.Lo
}

// TokenHash is the SHA-256 of a personal access token; only the hash is
// stored in the state.
type TokenHash [32]byte
