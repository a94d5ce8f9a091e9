package wire

import "fmt"

// ProtocolVersion is a packed semantic version: major<<20 | minor<<10 | patch,
// 10 bits each with the top two bits zero, so integer order is semver order.
type ProtocolVersion uint32

// PackVersion packs major.minor.patch; each part must be < 1024.
func PackVersion(major, minor, patch uint32) (ProtocolVersion, error) {
	if major >= 1024 || minor >= 1024 || patch >= 1024 {
		return 0, fmt.Errorf("wire: protocol version %d.%d.%d: every part must be < 1024", major, minor, patch)
	}
	return ProtocolVersion(major<<20 | minor<<10 | patch), nil
}

// CurrentProtocol is the protocol this package speaks: 0.11.0 = 0x2C00.
const CurrentProtocol ProtocolVersion = 0<<20 | 11<<10 | 0

// Parts unpacks the version.
func (v ProtocolVersion) Parts() (major, minor, patch uint32) {
	return uint32(v>>20) & 0x3FF, uint32(v>>10) & 0x3FF, uint32(v) & 0x3FF
}

func (v ProtocolVersion) String() string {
	a, b, c := v.Parts()
	return fmt.Sprintf("%d.%d.%d", a, b, c)
}

// AcceptWindow returns the window a server at version server accepts by
// default: [server with patch zeroed, the last version with the same
// major.minor]. Under 0.x this is "same major.minor, any patch".
func AcceptWindow(server ProtocolVersion) (min, max ProtocolVersion) {
	min = server &^ 0x3FF
	max = server | 0x3FF
	return min, max
}

// Accepts is the server's gate at Register: client >= min and
// (client >> 10) <= (server >> 10). min is normally AcceptWindow(server)'s
// min; pass a lower one to widen deliberately.
func Accepts(server, min, client ProtocolVersion) bool {
	return client >= min && client>>10 <= server>>10
}
