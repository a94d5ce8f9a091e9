package httpapi

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"unicode"

	"github.com/iggo/iggo/wire"
)

// errorBody is Iggy's error JSON: the numeric code, its snake_case name, a
// reason and, for some codes, the request field it concerns. Errors of the
// HTTP layer itself (body limits, unknown routes, busy server) carry the
// HTTP status as id.
type errorBody struct {
	ID     uint32  `json:"id"`
	Code   string  `json:"code"`
	Reason string  `json:"reason"`
	Field  *string `json:"field"`
}

// apiError is a rendered refusal: status and body.
type apiError struct {
	status int
	body   errorBody
	// retry marks transient 503s (Retry-After: 1).
	retry bool
}

func (e *apiError) Error() string { return e.body.Reason }

// snakeName turns Iggy's error name into its as_string form
// ("StreamIdNotFound" → "stream_id_not_found").
func snakeName(name string) string {
	var b strings.Builder
	rs := []rune(name)
	for i, r := range rs {
		if unicode.IsUpper(r) {
			if i > 0 && (unicode.IsLower(rs[i-1]) || unicode.IsDigit(rs[i-1]) ||
				(i+1 < len(rs) && unicode.IsLower(rs[i+1]) && unicode.IsUpper(rs[i-1]))) {
				b.WriteByte('_')
			}
			b.WriteRune(unicode.ToLower(r))
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

// reasonOf is a readable sentence for a code: its name in words.
func reasonOf(c wire.Code) string {
	msg := strings.ReplaceAll(snakeName(c.Name()), "_", " ")
	if msg == "" {
		return "Error"
	}
	r := []rune(msg)
	r[0] = unicode.ToUpper(r[0])
	return string(r)
}

// fieldOf is the request field Iggy names for a code.
func fieldOf(c wire.Code) *string {
	var f string
	switch c {
	case wire.CodeStreamIdNotFound, wire.CodeInvalidStreamId:
		f = "stream_id"
	case wire.CodeTopicIdNotFound, wire.CodeInvalidTopicId:
		f = "topic_id"
	case wire.CodePartitionNotFound:
		f = "partition_id"
	case wire.CodeSegmentNotFound:
		f = "segment_id"
	case wire.CodeClientNotFound:
		f = "client_id"
	case wire.CodeInvalidStreamName, wire.CodeStreamNameAlreadyExists, wire.CodeInvalidTopicName,
		wire.CodeTopicNameAlreadyExists, wire.CodeConsumerGroupNameAlreadyExists, wire.CodePersonalAccessTokenAlreadyExists:
		f = "name"
	case wire.CodeInvalidOffset:
		f = "offset"
	case wire.CodeInvalidConsumerGroupId:
		f = "consumer_group_id"
	case wire.CodeUserAlreadyExists:
		f = "username"
	default:
		return nil
	}
	return &f
}

// statusOf is the HTTP status Iggy gives an error code.
func statusOf(c wire.Code) int {
	switch c {
	case wire.CodeStreamIdNotFound, wire.CodeTopicIdNotFound, wire.CodePartitionNotFound,
		wire.CodeSegmentNotFound, wire.CodeClientNotFound, wire.CodeConsumerGroupIdNotFound,
		wire.CodeConsumerGroupNameNotFound, wire.CodeConsumerGroupMemberNotFound,
		wire.CodeConsumerOffsetNotFound, wire.CodeResourceNotFound:
		return http.StatusNotFound
	case wire.CodeUnauthenticated, wire.CodeAccessTokenMissing, wire.CodeInvalidAccessToken,
		wire.CodeInvalidPersonalAccessToken:
		return http.StatusUnauthorized
	case wire.CodeUnauthorized:
		return http.StatusForbidden
	case wire.CodeTransientNotCommitted, wire.CodeTransientNotAccepted:
		return http.StatusServiceUnavailable
	}
	return http.StatusBadRequest
}

// codeError renders an Iggy code.
func codeError(c wire.Code) *apiError {
	return &apiError{status: statusOf(c), retry: c == wire.CodeTransientNotCommitted || c == wire.CodeTransientNotAccepted,
		body: errorBody{ID: uint32(c), Code: snakeName(c.Name()), Reason: reasonOf(c), Field: fieldOf(c)}}
}

// httpError renders an error of the HTTP layer (no Iggy code behind it).
func httpError(status int, code, reason string) *apiError {
	return &apiError{status: status, body: errorBody{ID: uint32(status), Code: code, Reason: reason}}
}

// notFound is Iggy's body for a missing resource.
func notFound() *apiError { return httpError(http.StatusNotFound, "not_found", "Resource not found") }

// unavailable is Iggy's 503 for a request that cannot be served now.
func unavailable() *apiError {
	e := codeError(wire.CodeCannotEstablishConnection)
	e.status, e.retry = http.StatusServiceUnavailable, true
	return e
}

// fromError maps what a session returned onto Iggy's rendering.
func fromError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var ev *wire.EvictionError
	if errors.As(err, &ev) {
		// The session ended server-side: re-authenticate.
		e := codeError(wire.CodeUnauthenticated)
		return e
	}
	if code, ok := wire.CodeOf(err); ok && code != 0 {
		return codeError(code)
	}
	return unavailable()
}

// writeJSON answers status with v as JSON.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		writeError(w, httpError(http.StatusInternalServerError, "error", "cannot encode the response"))
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

// writeError answers e.
func writeError(w http.ResponseWriter, e *apiError) {
	if e.retry {
		w.Header().Set("Retry-After", "1")
	}
	b, _ := json.Marshal(e.body)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(e.status)
	_, _ = w.Write(b)
}
