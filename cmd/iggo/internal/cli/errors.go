package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/wire"
)

// Exit codes. Scripts can tell a mistyped command from a server that said
// no and from a server that could not be reached.
const (
	ExitOK         = 0
	ExitServer     = 1 // the server refused the request (an Iggy error code)
	ExitUsage      = 2 // bad arguments, flags or missing credentials
	ExitConnection = 3 // the server could not be reached or the connection broke
	ExitLocal      = 4 // a local problem: files, config directory
	ExitInterrupt  = 130
)

// UsageError marks an error as the user's invocation being wrong (exit 2).
type UsageError struct {
	Msg  string
	Hint string
}

func (e *UsageError) Error() string { return e.Msg }

// Usagef returns a *UsageError.
func Usagef(format string, args ...any) error {
	return &UsageError{Msg: fmt.Sprintf(format, args...)}
}

// LocalError marks a failure on this machine (exit 4).
type LocalError struct{ Err error }

func (e *LocalError) Error() string { return e.Err.Error() }
func (e *LocalError) Unwrap() error { return e.Err }

func localErr(format string, args ...any) error {
	return &LocalError{Err: fmt.Errorf(format, args...)}
}

// ExitError ends a command that has printed what it found with an exit
// code saying not all is well (`iggo cluster status` with a node down):
// Msg is printed after "error: ".
type ExitError struct {
	Msg  string
	Code int
}

func (e *ExitError) Error() string { return e.Msg }

// Subject names what a command was working on, so a server error can be
// phrased in those terms ("stream 'foo' not found").
type Subject struct {
	Stream, Topic, Group, User, Consumer, Token, Client string
	Partition                                           string
	Offset                                              string
	// Option is what an options block belonged to ("topic"); Sent lists
	// the options the command sent, for naming them when one is refused.
	Option, Sent string
	// Flush marks `message flush`, whose refusal has its own explanation.
	Flush bool
}

// subjectError carries a server or connection error with its subject.
type subjectError struct {
	err error
	sub Subject
}

func (e *subjectError) Error() string { return e.err.Error() }
func (e *subjectError) Unwrap() error { return e.err }

// Wrap attaches the subject to err (nil stays nil).
func (s Subject) Wrap(err error) error {
	if err == nil {
		return nil
	}
	return &subjectError{err: err, sub: s}
}

// codeText is "(Iggy error 1009 StreamIdNotFound)".
func codeText(c wire.Code) string {
	return fmt.Sprintf("(Iggy error %d %s)", uint32(c), c.Name())
}

// Describe turns any error a command returns into the line printed after
// "error: " and the process exit code.
func Describe(err error) (string, int) {
	var ue *UsageError
	if errors.As(err, &ue) {
		if ue.Hint != "" {
			return ue.Msg + "; " + ue.Hint, ExitUsage
		}
		return ue.Msg, ExitUsage
	}
	var le *LocalError
	if errors.As(err, &le) {
		return le.Error(), ExitLocal
	}
	var xe *ExitError
	if errors.As(err, &xe) {
		return xe.Msg, xe.Code
	}
	var sub Subject
	var se *subjectError
	if errors.As(err, &se) {
		sub = se.sub
	}
	if errors.Is(err, context.Canceled) {
		return "interrupted", ExitInterrupt
	}
	var ce *client.ConnError
	if errors.As(err, &ce) {
		return connText(ce.Addr, ce.Op, ce.Err), ExitConnection
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "the server did not answer in time; check that it is healthy or raise --timeout", ExitConnection
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return connText("", "", err), ExitConnection
	}
	var ev *wire.EvictionError
	if errors.As(err, &ev) {
		code := ev.IggyCode()
		said := code
		if ev.Reason == wire.EvictUserInactive {
			// Iggy reports an inactive user as Unauthenticated; say why.
			said = wire.CodeUserInactive
		}
		msg, hint := phrase(said, sub)
		return join(msg+" "+codeText(code)+" [session ended: "+ev.Reason.String()+"]", hint), ExitServer
	}
	var fe *wire.FieldError
	if errors.As(err, &fe) && fe.Offset < 0 && strings.HasSuffix(fe.Struct, " request") {
		// The client refused to encode the request: nothing was sent, and
		// the cause is an argument.
		return fmt.Sprintf("invalid %s: %s; the request was not sent", strings.ReplaceAll(fe.Field, "_", " "), fe.Reason), ExitUsage
	}
	if code, ok := wire.CodeOf(err); ok {
		switch code {
		case wire.CodeDisconnected, wire.CodeCannotEstablishConnection, wire.CodeNotConnected, wire.CodeConnectionClosed:
			return join(err.Error(), "check that the server is running and reachable (--tcp-server-address)"), ExitConnection
		}
		msg, hint := phrase(code, sub)
		if fe != nil {
			msg += ": " + fe.Error()
		}
		return join(msg+" "+codeText(code), hint), ExitServer
	}
	return err.Error(), ExitServer
}

func join(msg, hint string) string {
	if hint == "" {
		return msg
	}
	return msg + "; " + hint
}

func connText(addr, op string, cause error) string {
	where := "the server"
	if addr != "" {
		where = addr
	}
	reason := cause.Error()
	switch {
	case errors.Is(cause, syscall.ECONNREFUSED):
		reason = "connection refused"
	case errors.Is(cause, syscall.ECONNRESET):
		reason = "connection reset by the server"
	case errors.Is(cause, io.EOF), errors.Is(cause, io.ErrUnexpectedEOF):
		reason = "closed by the server (a TLS listener closes plaintext clients: is --tcp-tls-enabled or --websocket-tls-enabled needed?)"
	}
	if op == "dial" || errors.Is(cause, syscall.ECONNREFUSED) {
		return fmt.Sprintf("cannot connect to %s: %s; is the server running? set the address with --tcp-server-address or a context (`iggo context list`)", where, reason)
	}
	return fmt.Sprintf("connection to %s failed: %s; the request may or may not have been applied", where, reason)
}

// phrase returns what went wrong and what to do about it for code, in the
// terms of sub.
func phrase(code wire.Code, sub Subject) (string, string) {
	q := func(s string) string {
		if s == "" {
			return ""
		}
		return s + " "
	}
	inStream := ""
	if sub.Stream != "" {
		inStream = " in stream " + sub.Stream
	}
	inTopic := inStream
	if sub.Topic != "" {
		inTopic = " in topic " + sub.Topic + inStream
	}
	orDash := func(s, dflt string) string {
		if s == "" {
			return dflt
		}
		return s
	}
	switch code {
	case wire.CodeStreamIdNotFound, wire.CodeStreamNameNotFound:
		return "stream " + q(sub.Stream) + "not found", "list streams with `iggo stream list`"
	case wire.CodeTopicIdNotFound, wire.CodeTopicNameNotFound:
		return "topic " + q(sub.Topic) + "not found" + inStream, "list topics with `iggo topic list " + orDash(unquote(sub.Stream), "<stream>") + "`"
	case wire.CodePartitionNotFound:
		return "partition " + q(sub.Partition) + "not found" + inTopic, "see the topic's partitions with `iggo topic get " + orDash(unquote(sub.Stream), "<stream>") + " " + orDash(unquote(sub.Topic), "<topic>") + "`"
	case wire.CodeConsumerGroupIdNotFound, wire.CodeConsumerGroupNameNotFound:
		return "consumer group " + q(sub.Group) + "not found" + inTopic, "list groups with `iggo consumer-group list " + orDash(unquote(sub.Stream), "<stream>") + " " + orDash(unquote(sub.Topic), "<topic>") + "`"
	case wire.CodeConsumerGroupMemberNotFound:
		return "this client is not a member of consumer group " + q(sub.Group), "join the group before polling as a member"
	case wire.CodeConsumerGroupPartitionNotOwned:
		if sub.Consumer != "" && sub.Group != "" {
			// consumer-offset set/delete -k consumer-group: the server lets
			// only the member owning the partition move the group's offset.
			return "only a member of consumer group " + q(sub.Group) + "that owns partition " + sub.Partition + " may store or delete the group's offset there",
				"the CLI is not a member; the group's consumers commit offsets as they poll (see them with `iggo consumer-offset get -k consumer-group`)"
		}
		return "the partition is not assigned to this group member", "poll without a partition to let the group assign one"
	case wire.CodeConsumerOffsetNotFound:
		return "no offset stored for consumer " + q(sub.Consumer) + "on partition " + sub.Partition + inTopic, "store one with `iggo consumer-offset set`"
	case wire.CodeResourceNotFound:
		switch {
		case sub.User != "":
			return "user " + q(sub.User) + "not found", "list users with `iggo user list`"
		case sub.Token != "":
			return "personal access token " + q(sub.Token) + "not found", "list tokens with `iggo pat list`"
		case sub.Topic != "":
			return "stream " + q(sub.Stream) + "or topic " + q(sub.Topic) + "not found", "list topics with `iggo topic list " + orDash(unquote(sub.Stream), "<stream>") + "`"
		}
		return "resource not found", ""
	case wire.CodeClientNotFound:
		return "client " + q(sub.Client) + "not found", "list connected clients with `iggo client list`"
	case wire.CodeStreamNameAlreadyExists:
		return "stream " + q(sub.Stream) + "already exists", "choose another name, or inspect it with `iggo stream get " + orDash(unquote(sub.Stream), "<stream>") + "`"
	case wire.CodeTopicNameAlreadyExists:
		return "topic " + q(sub.Topic) + "already exists" + inStream, "choose another name, or inspect it with `iggo topic get " + orDash(unquote(sub.Stream), "<stream>") + " " + orDash(unquote(sub.Topic), "<topic>") + "`"
	case wire.CodeConsumerGroupNameAlreadyExists:
		return "consumer group " + q(sub.Group) + "already exists" + inTopic, "choose another name"
	case wire.CodeUserAlreadyExists:
		return "user " + q(sub.User) + "already exists", "choose another name"
	case wire.CodePersonalAccessTokenAlreadyExists:
		return "personal access token " + q(sub.Token) + "already exists", "delete it with `iggo pat delete` or choose another name"
	case wire.CodeUnauthenticated:
		return "not authenticated", "pass -u USER -p PASSWORD or -t TOKEN before the command, set IGGY_USERNAME and IGGY_PASSWORD, or run `iggo login`"
	case wire.CodeUnauthorized:
		return "permission denied", "the user lacks a permission for this command; an administrator can grant it with `iggo user permissions`"
	case wire.CodeInvalidCredentials:
		return "invalid username or password", "check -u/-p, IGGY_USERNAME/IGGY_PASSWORD or the active context (`iggo context show`)"
	case wire.CodeInvalidPersonalAccessToken, wire.CodePersonalAccessTokenExpired:
		return "the personal access token is invalid or expired", "create a new one with `iggo pat create`, or run `iggo login` again"
	case wire.CodeUserInactive:
		return "the user is inactive", "an administrator can activate it with `iggo user status <user> active`"
	case wire.CodeCannotDeleteUser:
		return "this user cannot be deleted", "the root user is permanent"
	case wire.CodeInvalidOffset:
		return "offset " + q(sub.Offset) + "is beyond the partition's last offset (or the partition is empty)", "see the current offset with `iggo topic get " + orDash(unquote(sub.Stream), "<stream>") + " " + orDash(unquote(sub.Topic), "<topic>") + "`"
	case wire.CodeTooManyPartitions, wire.CodeInvalidPartitionsCount:
		return "invalid partition count", "a request may create or delete 1 to 1000 partitions, and no more than the topic has"
	case wire.CodeUnsupportedOptionKey, wire.CodeInvalidOptionValue, wire.CodeOptionsBlockTooLarge:
		what := "invalid " + q(sub.Option) + "option"
		switch code {
		case wire.CodeUnsupportedOptionKey:
			what = "unsupported " + q(sub.Option) + "option key"
		case wire.CodeInvalidOptionValue:
			what = "invalid " + q(sub.Option) + "option value"
		}
		if sub.Sent != "" {
			what += " among " + sub.Sent
		}
		return what, "list the options the server accepts, their kinds and ranges with `iggo options " + orDash(sub.Option, "topic") + "`"
	case wire.CodeTransientNotCommitted, wire.CodeTransientNotAccepted:
		return "the cluster could not commit the request in time", "retry; if it persists check the cluster with `iggo cluster metadata`"
	case wire.CodeIncompatibleProtocolVersion:
		return "the server speaks another protocol version", "use an iggo CLI matching the server (protocol " + wire.CurrentProtocol.String() + ")"
	case wire.CodeTopicFull:
		return "the topic is full", "raise its max size with `iggo topic update` or let retention delete old segments"
	case wire.CodeInvalidUsername:
		return "invalid username", "usernames are 3..50 bytes of UTF-8"
	case wire.CodeInvalidPassword:
		return "invalid password", "passwords are 3..100 bytes"
	case wire.CodeInvalidStreamName, wire.CodeInvalidTopicName:
		return "invalid name", "stream and topic names are 1..255 bytes of UTF-8"
	case wire.CodeFeatureUnavailable:
		if sub.Flush {
			return "the server does not flush on request", "servers speaking protocol 0.11 (iggo, Iggy 0.9) answer every flush with FeatureUnavailable; " +
				"a send is acknowledged only once it is as durable as its topic's durability option says (`iggo topic get`)"
		}
		return "the server does not support this command", ""
	}
	return strings.ToLower(spaceCamel(code.Name())), ""
}

// unquote drops the quotes idText puts around names, for command hints.
func unquote(s string) string { return strings.Trim(s, "'") }

// spaceCamel turns "StreamIdNotFound" into "Stream Id Not Found".
func spaceCamel(s string) string {
	var b strings.Builder
	for i, r := range s {
		if i > 0 && r >= 'A' && r <= 'Z' {
			b.WriteByte(' ')
		}
		b.WriteRune(r)
	}
	return b.String()
}
