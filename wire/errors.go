package wire

import (
	"errors"
	"fmt"
	"strconv"
)

// Code is one of Iggy's numeric error codes. It travels in the reply header's
// status field, in the result section of result-framed replies, and (mapped
// from an eviction reason) out of an eviction. Codes are shared by every SDK,
// so a server must use exactly these numbers.
type Code uint32

type codeInfo struct {
	name    string
	message string
}

// Name is Iggy's name for the code ("StreamIdNotFound"), or "Unknown(n)".
func (c Code) Name() string {
	if info, ok := codeNames[c]; ok {
		return info.name
	}
	return "Unknown(" + strconv.FormatUint(uint64(c), 10) + ")"
}

// Known reports whether c is in Iggy's error table.
func (c Code) Known() bool {
	_, ok := codeNames[c]
	return ok
}

// String renders "1009 StreamIdNotFound".
func (c Code) String() string {
	return strconv.FormatUint(uint64(c), 10) + " " + c.Name()
}

func (c Code) message() string {
	if info, ok := codeNames[c]; ok {
		return info.message
	}
	return "unknown error code " + strconv.FormatUint(uint64(c), 10)
}

// Error is an Iggy error: a numeric code plus optional local detail. The
// detail never travels on the wire; only the code does.
//
// errors.Is(err, &Error{Code: c}) matches any *Error with code c, so callers
// can test for a code without caring about the detail:
//
//	if errors.Is(err, wire.NewError(wire.CodeTopicIdNotFound)) { ... }
type Error struct {
	Code   Code
	Detail string
}

// NewError returns an *Error for code c.
func NewError(c Code) *Error { return &Error{Code: c} }

// Errorf returns an *Error for code c with a formatted detail.
func Errorf(c Code, format string, args ...any) *Error {
	return &Error{Code: c, Detail: fmt.Sprintf(format, args...)}
}

func (e *Error) Error() string {
	s := "iggy error " + strconv.FormatUint(uint64(e.Code), 10) + " " + e.Code.Name() + ": " + e.Code.message()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Is matches another *Error with the same code.
func (e *Error) Is(target error) bool {
	var t *Error
	if errors.As(target, &t) {
		return t.Code == e.Code
	}
	return false
}

// Coder is implemented by errors that know the Iggy code to report for them
// (*Error, *FieldError, *EvictionError).
type Coder interface {
	IggyCode() Code
}

// IggyCode implements Coder.
func (e *Error) IggyCode() Code { return e.Code }

// CodeOf returns the Iggy code carried by err (through wrapping), or false.
func CodeOf(err error) (Code, bool) {
	var c Coder
	if errors.As(err, &c) {
		return c.IggyCode(), true
	}
	return 0, false
}

// HasCode reports whether err carries Iggy code c.
func HasCode(err error, c Code) bool {
	got, ok := CodeOf(err)
	return ok && got == c
}

// notFoundCodes are the codes that mean "the thing named does not exist".
var notFoundCodes = map[Code]bool{
	CodeResourceNotFound:            true,
	CodeClientNotFound:              true,
	CodeStreamIdNotFound:            true,
	CodeStreamNameNotFound:          true,
	CodeTopicIdNotFound:             true,
	CodeTopicNameNotFound:           true,
	CodePartitionNotFound:           true,
	CodeConsumerOffsetNotFound:      true,
	CodeSegmentNotFound:             true,
	CodeConsumerGroupIdNotFound:     true,
	CodeConsumerGroupNameNotFound:   true,
	CodeConsumerGroupMemberNotFound: true,
	CodeStateFileNotFound:           true,
}

// IsNotFound reports whether err carries a "not found" code (resource, stream,
// topic, partition, group, member, offset, client, segment).
func IsNotFound(err error) bool {
	c, ok := CodeOf(err)
	return ok && notFoundCodes[c]
}

// IsAlreadyExists reports whether err carries an "already exists" code.
func IsAlreadyExists(err error) bool {
	c, ok := CodeOf(err)
	if !ok {
		return false
	}
	switch c {
	case CodeUserAlreadyExists, CodePersonalAccessTokenAlreadyExists, CodeStreamNameAlreadyExists,
		CodeTopicNameAlreadyExists, CodeConsumerGroupNameAlreadyExists:
		return true
	}
	return false
}

// IsUnauthenticated reports code 40 (no or invalid session).
func IsUnauthenticated(err error) bool { return HasCode(err, CodeUnauthenticated) }

// IsUnauthorized reports code 41 (permission denied).
func IsUnauthorized(err error) bool { return HasCode(err, CodeUnauthorized) }

// IsTransient reports the two retryable consensus codes 57 and 58.
func IsTransient(err error) bool {
	c, ok := CodeOf(err)
	return ok && (c == CodeTransientNotCommitted || c == CodeTransientNotAccepted)
}

// FieldError is what every decoder (and encoder) in this package returns for
// malformed input: which structure, which field, at which byte offset, and why.
// It reports Iggy code InvalidCommand (3) unless a more specific code applies
// (checksum mismatches report 4027/4039, option problems 4041/4042/4043).
type FieldError struct {
	Struct string // e.g. "create_topic request"
	Field  string // e.g. "name"
	Offset int    // byte offset inside the structure's buffer, -1 if not applicable
	Reason string
	Code   Code // 0 means InvalidCommand
}

func (e *FieldError) Error() string {
	if e.Offset >= 0 {
		return fmt.Sprintf("wire: %s: %s at offset %d: %s", e.Struct, e.Field, e.Offset, e.Reason)
	}
	return fmt.Sprintf("wire: %s: %s: %s", e.Struct, e.Field, e.Reason)
}

// IggyCode implements Coder.
func (e *FieldError) IggyCode() Code {
	if e.Code == 0 {
		return CodeInvalidCommand
	}
	return e.Code
}

func fieldErr(structName, field string, off int, format string, args ...any) *FieldError {
	return &FieldError{Struct: structName, Field: field, Offset: off, Reason: fmt.Sprintf(format, args...)}
}

func fieldErrCode(code Code, structName, field string, off int, format string, args ...any) *FieldError {
	e := fieldErr(structName, field, off, format, args...)
	e.Code = code
	return e
}
