package wire

import (
	"encoding/binary"
	"fmt"
	"strconv"
)

// EvictionReason is the last byte of an eviction header.
type EvictionReason uint8

// Eviction reasons of protocol 0.11 (numbers are pinned by every SDK).
const (
	EvictReserved                EvictionReason = 0
	EvictNoSession               EvictionReason = 1
	EvictClientReleaseTooLow     EvictionReason = 2
	EvictClientReleaseTooHigh    EvictionReason = 3
	EvictInvalidRequestOperation EvictionReason = 4
	EvictInvalidRequestBody      EvictionReason = 5
	EvictInvalidRequestBodySize  EvictionReason = 6
	EvictSessionTooLow           EvictionReason = 7
	EvictSessionReleaseMismatch  EvictionReason = 8
	EvictInvalidCredentials      EvictionReason = 9
	EvictInvalidToken            EvictionReason = 10
	EvictUserInactive            EvictionReason = 11
	EvictSessionError            EvictionReason = 12
	EvictStaleClient             EvictionReason = 13
	EvictIncompatibleProtocol    EvictionReason = 14
	EvictMalformedLogin          EvictionReason = 15
)

var evictionNames = [...]string{
	"Reserved", "NoSession", "ClientReleaseTooLow", "ClientReleaseTooHigh",
	"InvalidRequestOperation", "InvalidRequestBody", "InvalidRequestBodySize",
	"SessionTooLow", "SessionReleaseMismatch", "InvalidCredentials", "InvalidToken",
	"UserInactive", "SessionError", "StaleClient", "IncompatibleProtocol", "MalformedLogin",
}

func (r EvictionReason) String() string {
	if int(r) < len(evictionNames) {
		return evictionNames[r]
	}
	return "EvictionReason(" + strconv.Itoa(int(r)) + ")"
}

// Code is the Iggy error code an SDK reports for this reason. Reason 14 maps
// to IncompatibleProtocolVersion only with a well-formed window (1 <= min <=
// max), otherwise to Unauthenticated; unknown reasons map to InvalidCommand so
// that a newer server's reason never drives a reconnect loop.
func (r EvictionReason) Code(versionMin, versionMax uint32) Code {
	switch r {
	case EvictNoSession, EvictSessionTooLow, EvictSessionReleaseMismatch, EvictUserInactive, EvictSessionError:
		return CodeUnauthenticated
	case EvictInvalidCredentials:
		return CodeInvalidCredentials
	case EvictInvalidToken:
		return CodeInvalidPersonalAccessToken
	case EvictStaleClient:
		return CodeStaleClient
	case EvictIncompatibleProtocol:
		if versionMin == 0 || versionMax < versionMin {
			return CodeUnauthenticated
		}
		return CodeIncompatibleProtocolVersion
	case EvictMalformedLogin:
		return CodeInvalidFormat
	default:
		return CodeInvalidCommand
	}
}

// EvictionError is what a client gets when the server answers with an
// eviction frame: the session is over and the connection must be dropped.
type EvictionError struct {
	Reason     EvictionReason
	Client     Uint128
	VersionMax uint32 // reason 14 only
	VersionMin uint32 // reason 14 only
}

func (e *EvictionError) Error() string {
	s := fmt.Sprintf("wire: evicted by the server (reason %d %s, %s)", e.Reason, e.Reason, e.IggyCode())
	if e.Reason == EvictIncompatibleProtocol {
		s += fmt.Sprintf("; server accepts protocol [%s, %s]", ProtocolVersion(e.VersionMin), ProtocolVersion(e.VersionMax))
	}
	return s
}

// IggyCode implements Coder.
func (e *EvictionError) IggyCode() Code { return e.Reason.Code(e.VersionMin, e.VersionMax) }

// Is lets errors.Is(err, NewError(code)) match the mapped code.
func (e *EvictionError) Is(target error) bool {
	if t, ok := target.(*Error); ok {
		return t.Code == e.IggyCode()
	}
	return false
}

// evictionFromHeader reads an eviction leniently (a client must surface any
// eviction it receives, well-formed or not).
func evictionFromHeader(b []byte) *EvictionError {
	return &EvictionError{
		Reason:     EvictionReason(b[offEvReason]),
		Client:     getU128(b[offEvClient:]),
		VersionMax: binary.LittleEndian.Uint32(b[offEvVersionMax:]),
		VersionMin: binary.LittleEndian.Uint32(b[offEvVersionMin:]),
	}
}

// AppendEviction appends a 256-byte eviction frame for client with reason.
// For EvictIncompatibleProtocol pass the accepted window; otherwise pass 0, 0.
func AppendEviction(dst []byte, prefix Prefix, client Uint128, reason EvictionReason, versionMin, versionMax uint32) []byte {
	h := EvictionHeader{Prefix: prefix, Client: client, Reason: reason, VersionMin: versionMin, VersionMax: versionMax}
	n := len(dst)
	dst = append(dst, make([]byte, HeaderSize)...)
	h.Put(dst[n:])
	return dst
}
