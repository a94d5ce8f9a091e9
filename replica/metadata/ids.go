package metadata

import "github.com/iggo/iggo/wire"

// Identifier is the wire identifier (numeric id or name) used by every
// command and lookup.
type Identifier = wire.Identifier

// ClientID is a VSR client id (u128). It keys consumer-group membership.
type ClientID = wire.Uint128

// TokenHash is the SHA-256 of a personal access token; only the hash is
// stored in the state.
type TokenHash [32]byte
