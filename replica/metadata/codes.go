package metadata

import "github.com/iggo/iggo/wire"

// OK is the success code: a zero wire.Code. Every rejection this package
// returns is one of wire's Iggy codes.
const OK wire.Code = 0
