package httpapi

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"time"

	"github.com/go-chi/chi/v5"
	"go.uber.org/zap"

	"github.com/iggo/iggo/wire"
)

// Every handler turns the JSON request into the binary command's body,
// runs it on the caller's session (the binary serving path) and renders
// the binary reply as Iggy's JSON. Statuses follow Iggy's handlers: reads
// 200 (404 with the not-found body for a missing resource), creates 200
// with the created record, updates and deletes 204, sends 201.

// pathID reads an identifier path segment: a u32 is numeric, anything else
// a name.
func pathID(r *http.Request, name string) (wire.Identifier, *apiError) {
	raw := chi.URLParam(r, name)
	v, err := url.PathUnescape(raw)
	if err != nil {
		v = raw
	}
	return parseID(v)
}

func parseID(v string) (wire.Identifier, *apiError) {
	if len(v) == 0 || len(v) > 255 {
		return wire.Identifier{}, codeError(wire.CodeInvalidIdentifier)
	}
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		return wire.NumericID(uint32(n)), nil
	}
	id, err := wire.NamedID(v)
	if err != nil {
		return wire.Identifier{}, codeError(wire.CodeInvalidIdentifier)
	}
	return id, nil
}

// ids reads the named identifier segments in order.
func ids(w http.ResponseWriter, r *http.Request, names ...string) ([]wire.Identifier, bool) {
	out := make([]wire.Identifier, len(names))
	for i, n := range names {
		id, e := pathID(r, n)
		if e != nil {
			writeError(w, e)
			return nil, false
		}
		out[i] = id
	}
	return out, true
}

func badQuery(field string, err error) *apiError {
	return httpError(http.StatusBadRequest, "invalid_query", "Failed to deserialize query string: "+field+": "+err.Error())
}

// queryU32 reads an optional u32 query parameter.
func queryU32(q url.Values, key string) (uint32, bool, *apiError) {
	v := q.Get(key)
	if v == "" {
		return 0, false, nil
	}
	n, err := strconv.ParseUint(v, 10, 32)
	if err != nil {
		return 0, false, badQuery(key, err)
	}
	return uint32(n), true, nil
}

// readConsistency honours ?consistency=: serializable (default) serves
// locally; linearizable needs this node to lead the metadata group.
func (s *Server) readConsistency(w http.ResponseWriter, r *http.Request) bool {
	switch r.URL.Query().Get("consistency") {
	case "", "serializable":
		return true
	case "linearizable":
		if s.b.IsMetadataPrimary() {
			return true
		}
		e := httpError(http.StatusServiceUnavailable, "not_primary", "linearizable read requires the primary; retry against the leader")
		e.retry = true
		writeError(w, e)
		return false
	}
	writeError(w, badQuery("consistency", errUnknownVariant))
	return false
}

var errUnknownVariant = &jsonErr{"unknown variant, expected `serializable` or `linearizable`"}

type jsonErr struct{ s string }

func (e *jsonErr) Error() string { return e.s }

// ---------------------------------------------------------------------------
// Health.

func (s *Server) live(w http.ResponseWriter, _ *http.Request) {
	h := s.b.Health()
	if !h.Live {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "stopping"})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "live"})
}

func (s *Server) ready(w http.ResponseWriter, _ *http.Request) {
	h := s.b.Health()
	if !h.Ready {
		writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "not_ready", "detail": h.Detail})
		return
	}
	writeJSON(w, http.StatusOK, map[string]string{"status": "ready"})
}

// ---------------------------------------------------------------------------
// Login, tokens, logout.

type loginJSON struct {
	Username *string `json:"username"`
	Password *string `json:"password"`
	Version  *string `json:"version"`
	Context  *string `json:"context"`
}

func (s *Server) issue(w http.ResponseWriter, user uint32) {
	t, err := s.jwt.generate(user)
	if err != nil {
		s.log.Error("cannot sign an access token", zap.Error(err))
		writeError(w, codeError(wire.CodeCannotGenerateJwt))
		return
	}
	writeJSON(w, http.StatusOK, identityJSON{UserID: user, AccessToken: &tokenInfoJSON{Token: t.token, Expiry: t.expiry}})
}

func (s *Server) loginUser(w http.ResponseWriter, r *http.Request) {
	b, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var req loginJSON
	if err := decodeJSON(b, &req); err != nil {
		writeError(w, fromError(err))
		return
	}
	if req.Username == nil || req.Password == nil {
		writeError(w, unprocessable("missing field `username` or `password`"))
		return
	}
	if !s.b.LoginAvailable() {
		writeError(w, codeError(wire.CodeTransientNotCommitted))
		return
	}
	user, code := s.b.AuthenticatePassword(r.RemoteAddr, *req.Username, *req.Password)
	if code != 0 {
		s.log.Info("http login refused", zap.String("username", *req.Username), zap.String("addr", r.RemoteAddr), zap.Stringer("code", code))
		writeError(w, codeError(code))
		return
	}
	s.issue(w, user)
}

type tokenBodyJSON struct {
	Token *string `json:"token"`
}

func (s *Server) loginPAT(w http.ResponseWriter, r *http.Request) {
	b, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var req tokenBodyJSON
	if err := decodeJSON(b, &req); err != nil {
		writeError(w, fromError(err))
		return
	}
	if req.Token == nil {
		writeError(w, unprocessable("missing field `token`"))
		return
	}
	if !s.b.LoginAvailable() {
		writeError(w, codeError(wire.CodeTransientNotCommitted))
		return
	}
	user, _, code := s.b.AuthenticateToken(*req.Token)
	if code != 0 {
		if code != wire.CodeUserInactive {
			code = wire.CodeInvalidPersonalAccessToken
		}
		s.log.Info("http token login refused", zap.String("addr", r.RemoteAddr), zap.Stringer("code", code))
		writeError(w, codeError(code))
		return
	}
	s.issue(w, user)
}

// refreshToken re-issues an access token from a valid one (the route is
// unauthenticated: the token rides the body). The old token stays valid
// until its own expiry, as in Iggy.
func (s *Server) refreshToken(w http.ResponseWriter, r *http.Request) {
	b, ok := s.readBody(w, r)
	if !ok {
		return
	}
	var req tokenBodyJSON
	if err := decodeJSON(b, &req); err != nil {
		writeError(w, fromError(err))
		return
	}
	if req.Token == nil || *req.Token == "" {
		writeError(w, codeError(wire.CodeUnauthenticated))
		return
	}
	v, err := s.jwt.decode(*req.Token)
	if err != nil || s.b.TokenRevoked(tokenID(v.jti)) || !s.b.UserActive(v.user) {
		writeError(w, codeError(wire.CodeUnauthenticated))
		return
	}
	s.issue(w, v.user)
}

// logoutUser revokes the presented access token on every node (a
// replicated metadata operation) and ends its session. A personal access
// token used as bearer is not revoked: it is deleted explicitly.
func (s *Server) logoutUser(w http.ResponseWriter, r *http.Request) {
	id := identityOf(r)
	if id.jti != "" {
		ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
		defer cancel()
		if err := s.b.RevokeToken(ctx, tokenID(id.jti), id.expiry); err != nil {
			writeError(w, fromError(err))
			return
		}
	}
	s.sessions.drop(id.key, nil)
	w.WriteHeader(http.StatusNoContent)
}

// ---------------------------------------------------------------------------
// Users.

func (s *Server) getUsers(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	s.request(w, r, &wire.GetUsers{}, func(p []byte) error {
		l, err := wire.DecodeUsers(p)
		if err != nil {
			return err
		}
		out := make([]userJSON, 0, len(l))
		for _, u := range l {
			out = append(out, userOf(u))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

func (s *Server) getUser(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	var uid wire.Identifier
	if chi.URLParam(r, "user_id") == "me" {
		uid = wire.NumericID(identityOf(r).user)
	} else {
		l, ok := ids(w, r, "user_id")
		if !ok {
			return
		}
		uid = l[0]
	}
	s.request(w, r, &wire.GetUser{UserID: uid}, func(p []byte) error {
		if len(p) == 0 {
			writeError(w, notFound())
			return nil
		}
		u, err := wire.DecodeUserDetails(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, userDetailsOf(u))
		return nil
	})
}

type createUserJSON struct {
	Username    *string          `json:"username"`
	Password    *string          `json:"password"`
	Status      *string          `json:"status"`
	Permissions *permissionsJSON `json:"permissions"`
}

func statusCode(s string) (uint8, *apiError) {
	switch s {
	case "active":
		return wire.UserActive, nil
	case "inactive":
		return wire.UserInactive, nil
	}
	return 0, unprocessable("status: unknown variant %q, expected `active` or `inactive`", s)
}

func (s *Server) createUser(w http.ResponseWriter, r *http.Request) {
	var req createUserJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.Username == nil || req.Password == nil || req.Status == nil {
		writeError(w, unprocessable("missing field `username`, `password` or `status`"))
		return
	}
	st, e := statusCode(*req.Status)
	if e != nil {
		writeError(w, e)
		return
	}
	perms, err := wirePermissions(req.Permissions)
	if err != nil {
		writeError(w, fromError(err))
		return
	}
	s.request(w, r, &wire.CreateUser{Username: *req.Username, Password: *req.Password, Status: st, Permissions: perms},
		func(p []byte) error {
			u, err := wire.DecodeUserDetails(p)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, userDetailsOf(u))
			return nil
		})
}

type updateUserJSON struct {
	Username *string           `json:"username"`
	Status   *string           `json:"status"`
	Options  map[string]string `json:"options"`
}

func (s *Server) updateUser(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "user_id")
	if !ok {
		return
	}
	var req updateUserJSON
	if !s.body(w, r, &req) {
		return
	}
	u := wire.UpdateUser{UserID: l[0], Username: req.Username, Options: rawOptions(req.Options)}
	if req.Status != nil {
		st, e := statusCode(*req.Status)
		if e != nil {
			writeError(w, e)
			return
		}
		u.Status = &st
	}
	s.noContent(w, r, &u)
}

func (s *Server) deleteUser(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "user_id")
	if !ok {
		return
	}
	s.noContent(w, r, &wire.DeleteUser{UserID: l[0]})
}

type changePasswordJSON struct {
	CurrentPassword *string `json:"current_password"`
	NewPassword     *string `json:"new_password"`
}

func (s *Server) changePassword(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "user_id")
	if !ok {
		return
	}
	var req changePasswordJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.CurrentPassword == nil || req.NewPassword == nil {
		writeError(w, unprocessable("missing field `current_password` or `new_password`"))
		return
	}
	s.noContent(w, r, &wire.ChangePassword{UserID: l[0], CurrentPassword: *req.CurrentPassword, NewPassword: *req.NewPassword})
}

type updatePermissionsJSON struct {
	Permissions *permissionsJSON `json:"permissions"`
}

func (s *Server) updatePermissions(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "user_id")
	if !ok {
		return
	}
	var req updatePermissionsJSON
	if !s.body(w, r, &req) {
		return
	}
	perms, err := wirePermissions(req.Permissions)
	if err != nil {
		writeError(w, fromError(err))
		return
	}
	s.noContent(w, r, &wire.UpdatePermissions{UserID: l[0], Permissions: perms})
}

// ---------------------------------------------------------------------------
// Personal access tokens.

func (s *Server) getPATs(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	s.request(w, r, &wire.GetPersonalAccessTokens{}, func(p []byte) error {
		l, err := wire.DecodePersonalAccessTokens(p)
		if err != nil {
			return err
		}
		out := make([]patJSON, 0, len(l))
		for _, t := range l {
			j := patJSON{Name: t.Name}
			if t.ExpiryAt != 0 {
				v := t.ExpiryAt
				j.ExpiryAt = &v
			}
			out = append(out, j)
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

type createPATJSON struct {
	Name   *string `json:"name"`
	Expiry *uint64 `json:"expiry"`
}

func (s *Server) createPAT(w http.ResponseWriter, r *http.Request) {
	var req createPATJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.Name == nil || req.Expiry == nil {
		writeError(w, unprocessable("missing field `name` or `expiry`"))
		return
	}
	if n := len(*req.Name); n < 3 || n > 30 {
		writeError(w, codeError(wire.CodeInvalidPersonalAccessTokenName))
		return
	}
	s.request(w, r, &wire.CreatePersonalAccessToken{Name: *req.Name, Expiry: *req.Expiry}, func(p []byte) error {
		t, err := wire.DecodeRawPersonalAccessToken(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, rawPATJSON{Token: t.Token})
		return nil
	})
}

func (s *Server) deletePAT(w http.ResponseWriter, r *http.Request) {
	name, err := url.PathUnescape(chi.URLParam(r, "name"))
	if err != nil || len(name) < 3 || len(name) > 30 {
		writeError(w, codeError(wire.CodeInvalidPersonalAccessTokenName))
		return
	}
	s.noContent(w, r, &wire.DeletePersonalAccessToken{Name: name})
}

// ---------------------------------------------------------------------------
// Streams.

func (s *Server) getStreams(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	s.request(w, r, &wire.GetStreams{}, func(p []byte) error {
		l, err := wire.DecodeStreams(p)
		if err != nil {
			return err
		}
		out := make([]streamJSON, 0, len(l))
		for _, st := range l {
			out = append(out, streamOf(st))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

func (s *Server) getStream(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	l, ok := ids(w, r, "stream_id")
	if !ok {
		return
	}
	s.request(w, r, &wire.GetStream{StreamID: l[0]}, func(p []byte) error {
		if len(p) == 0 {
			writeError(w, notFound())
			return nil
		}
		d, err := wire.DecodeStreamDetails(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, streamDetailsOf(d))
		return nil
	})
}

type nameJSON struct {
	Name    *string           `json:"name"`
	Options map[string]string `json:"options"`
}

// rawOptions turns Iggy's string option map into a TLV block of string
// values (admission canonicalises them), keys ascending.
func rawOptions(m map[string]string) wire.Options {
	if len(m) == 0 {
		return nil
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var o wire.Options
	for _, k := range keys {
		o = o.With(k, wire.StringValue(m[k]))
	}
	return o
}

func (s *Server) createStream(w http.ResponseWriter, r *http.Request) {
	var req nameJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.Name == nil {
		writeError(w, unprocessable("missing field `name`"))
		return
	}
	s.request(w, r, &wire.CreateStream{Name: *req.Name, Options: rawOptions(req.Options)}, func(p []byte) error {
		st, err := wire.DecodeStream(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, streamDetailsJSON{ID: st.ID, CreatedAt: st.CreatedAt, Name: st.Name, Size: byteSize(st.SizeBytes),
			MessagesCount: st.MessagesCount, TopicsCount: st.TopicsCount, Topics: []topicJSON{}, Options: optionsJSON(st.Options, nil)})
		return nil
	})
}

func (s *Server) updateStream(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id")
	if !ok {
		return
	}
	var req nameJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.Name == nil {
		writeError(w, unprocessable("missing field `name`"))
		return
	}
	s.noContent(w, r, &wire.UpdateStream{StreamID: l[0], Name: *req.Name, Options: rawOptions(req.Options)})
}

func (s *Server) deleteStream(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id")
	if !ok {
		return
	}
	s.noContent(w, r, &wire.DeleteStream{StreamID: l[0]})
}

func (s *Server) purgeStream(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id")
	if !ok {
		return
	}
	s.noContent(w, r, &wire.PurgeStream{StreamID: l[0]})
}

// ---------------------------------------------------------------------------
// Topics, partitions, segments.

func (s *Server) getTopics(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	l, ok := ids(w, r, "stream_id")
	if !ok {
		return
	}
	s.request(w, r, &wire.GetTopics{StreamID: l[0]}, func(p []byte) error {
		ts, err := wire.DecodeTopics(p)
		if err != nil {
			return err
		}
		out := make([]topicJSON, 0, len(ts))
		for _, t := range ts {
			out = append(out, topicOf(t))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

func (s *Server) getTopic(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	s.request(w, r, &wire.GetTopic{StreamID: l[0], TopicID: l[1]}, func(p []byte) error {
		if len(p) == 0 {
			writeError(w, notFound())
			return nil
		}
		d, err := wire.DecodeTopicDetails(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, topicDetailsOf(d))
		return nil
	})
}

// flexU64 reads a u64 given as a number or a string (Iggy's MaxTopicSize
// also takes "1 GiB" / "unlimited"; strings are passed to admission).
type flexU64 struct {
	set bool
	n   uint64
	s   string
}

func (f *flexU64) UnmarshalJSON(b []byte) error {
	f.set = true
	if len(b) > 0 && b[0] == '"' {
		return json.Unmarshal(b, &f.s)
	}
	if string(b) == "null" {
		f.set = false
		return nil
	}
	return json.Unmarshal(b, &f.n)
}

func (f flexU64) value() wire.HeaderValue {
	if f.s != "" {
		return wire.StringValue(f.s)
	}
	return wire.Uint64Value(f.n)
}

type createTopicJSON struct {
	Name                 *string           `json:"name"`
	PartitionsCount      *uint32           `json:"partitions_count"`
	CompressionAlgorithm *string           `json:"compression_algorithm"`
	MessageExpiry        *flexU64          `json:"message_expiry"`
	MaxTopicSize         *flexU64          `json:"max_topic_size"`
	Options              map[string]string `json:"options"`
}

// topicOptions folds the named JSON fields into the option keys the
// binary protocol uses (a named field the client left at the server
// default is not sent), then the raw string options.
func topicOptions(compression *string, expiry, maxSize *flexU64, raw map[string]string, create bool) (wire.Options, *apiError) {
	var o wire.Options
	if compression != nil {
		switch *compression {
		case "none", "gzip":
		default:
			return nil, unprocessable("compression_algorithm: unknown compression algorithm %q", *compression)
		}
		if !create || *compression != "none" {
			o = o.With(wire.OptCompressionAlgorithm, wire.StringValue(*compression))
		}
	}
	if expiry != nil && expiry.set && (expiry.s != "" || expiry.n != 0) {
		o = o.With(wire.OptMessageExpiry, expiry.value())
	}
	if maxSize != nil && maxSize.set && (maxSize.s != "" || maxSize.n != 0) {
		o = o.With(wire.OptMaxTopicSize, maxSize.value())
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if _, dup := o.Get(k); dup {
			continue
		}
		o = o.With(k, wire.StringValue(raw[k]))
	}
	return o, nil
}

func (s *Server) createTopic(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id")
	if !ok {
		return
	}
	var req createTopicJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.Name == nil || req.PartitionsCount == nil || req.CompressionAlgorithm == nil || req.MessageExpiry == nil || req.MaxTopicSize == nil {
		writeError(w, unprocessable("missing field: name, partitions_count, compression_algorithm, message_expiry and max_topic_size are required"))
		return
	}
	opts, e := topicOptions(req.CompressionAlgorithm, req.MessageExpiry, req.MaxTopicSize, req.Options, true)
	if e != nil {
		writeError(w, e)
		return
	}
	s.request(w, r, &wire.CreateTopic{StreamID: l[0], PartitionsCount: *req.PartitionsCount, Name: *req.Name, Options: opts},
		func(p []byte) error {
			d, err := wire.DecodeTopicDetails(p)
			if err != nil {
				return err
			}
			writeJSON(w, http.StatusOK, topicDetailsOf(d))
			return nil
		})
}

type updateTopicJSON struct {
	Name                 *string           `json:"name"`
	CompressionAlgorithm *string           `json:"compression_algorithm"`
	MessageExpiry        *flexU64          `json:"message_expiry"`
	MaxTopicSize         *flexU64          `json:"max_topic_size"`
	Options              map[string]string `json:"options"`
}

func (s *Server) updateTopic(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	var req updateTopicJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.Name == nil {
		writeError(w, unprocessable("missing field `name`"))
		return
	}
	opts, e := topicOptions(req.CompressionAlgorithm, req.MessageExpiry, req.MaxTopicSize, req.Options, false)
	if e != nil {
		writeError(w, e)
		return
	}
	s.noContent(w, r, &wire.UpdateTopic{StreamID: l[0], TopicID: l[1], Name: *req.Name, Options: opts})
}

func (s *Server) deleteTopic(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	s.noContent(w, r, &wire.DeleteTopic{StreamID: l[0], TopicID: l[1]})
}

func (s *Server) purgeTopic(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	s.noContent(w, r, &wire.PurgeTopic{StreamID: l[0], TopicID: l[1]})
}

type partitionsJSON struct {
	PartitionsCount *uint32 `json:"partitions_count"`
}

func (s *Server) createPartitions(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	var req partitionsJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.PartitionsCount == nil {
		writeError(w, unprocessable("missing field `partitions_count`"))
		return
	}
	if n := *req.PartitionsCount; n < 1 || n > wire.MaxPartitionsPerRequest {
		writeError(w, codeError(wire.CodeTooManyPartitions))
		return
	}
	s.request(w, r, &wire.CreatePartitions{StreamID: l[0], TopicID: l[1], PartitionsCount: *req.PartitionsCount}, func([]byte) error {
		w.WriteHeader(http.StatusOK)
		return nil
	})
}

func (s *Server) deletePartitions(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	n, set, e := queryU32(r.URL.Query(), "partitions_count")
	if e == nil && !set {
		e = badQuery("partitions_count", &jsonErr{"missing field `partitions_count`"})
	}
	if e != nil {
		writeError(w, e)
		return
	}
	if n < 1 || n > wire.MaxPartitionsPerRequest {
		writeError(w, codeError(wire.CodeTooManyPartitions))
		return
	}
	s.noContent(w, r, &wire.DeletePartitions{StreamID: l[0], TopicID: l[1], PartitionsCount: n})
}

func (s *Server) deleteSegments(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	pid, err := strconv.ParseUint(chi.URLParam(r, "partition_id"), 10, 32)
	if err != nil {
		writeError(w, httpError(http.StatusBadRequest, "invalid_path", "Invalid URL: partition_id: "+err.Error()))
		return
	}
	n, set, e := queryU32(r.URL.Query(), "segments_count")
	if e == nil && !set {
		e = badQuery("segments_count", &jsonErr{"missing field `segments_count`"})
	}
	if e != nil {
		writeError(w, e)
		return
	}
	s.noContent(w, r, &wire.DeleteSegments{StreamID: l[0], TopicID: l[1], PartitionID: uint32(pid), SegmentsCount: n})
}

// ---------------------------------------------------------------------------
// Consumer groups.

func (s *Server) getGroups(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	s.request(w, r, &wire.GetConsumerGroups{StreamID: l[0], TopicID: l[1]}, func(p []byte) error {
		gs, err := wire.DecodeConsumerGroups(p)
		if err != nil {
			return err
		}
		out := make([]groupJSON, 0, len(gs))
		for _, g := range gs {
			out = append(out, groupOf(g))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ID < out[j].ID })
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

func (s *Server) getGroup(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	l, ok := ids(w, r, "stream_id", "topic_id", "group_id")
	if !ok {
		return
	}
	s.request(w, r, &wire.GetConsumerGroup{StreamID: l[0], TopicID: l[1], GroupID: l[2]}, func(p []byte) error {
		if len(p) == 0 {
			writeError(w, notFound())
			return nil
		}
		g, err := wire.DecodeConsumerGroupDetails(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, groupDetailsOf(g))
		return nil
	})
}

func (s *Server) createGroup(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	var req nameJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.Name == nil {
		writeError(w, unprocessable("missing field `name`"))
		return
	}
	s.request(w, r, &wire.CreateConsumerGroup{StreamID: l[0], TopicID: l[1], Name: *req.Name}, func(p []byte) error {
		g, err := wire.DecodeConsumerGroupDetails(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, groupDetailsOf(g))
		return nil
	})
}

func (s *Server) deleteGroup(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id", "group_id")
	if !ok {
		return
	}
	s.noContent(w, r, &wire.DeleteConsumerGroup{StreamID: l[0], TopicID: l[1], GroupID: l[2]})
}

// ---------------------------------------------------------------------------
// Consumer offsets. HTTP consumers are always of kind consumer (Iggy's JSON
// carries no kind).

// consumerID reads consumer_id as a number or a string; Iggy's default is 1.
func consumerID(v string) (wire.Identifier, *apiError) {
	if v == "" {
		return wire.NumericID(1), nil
	}
	return parseID(v)
}

func (s *Server) getOffset(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	q := r.URL.Query()
	cid, e := consumerID(q.Get("consumer_id"))
	if e != nil {
		writeError(w, e)
		return
	}
	pid, _, e := queryU32(q, "partition_id")
	if e != nil {
		writeError(w, e)
		return
	}
	req := wire.GetConsumerOffset{Consumer: wire.SingleConsumer(cid), StreamID: l[0], TopicID: l[1], Partition: wire.SomePartition(pid)}
	s.request(w, r, &req, func(p []byte) error {
		if len(p) == 0 {
			writeError(w, notFound())
			return nil
		}
		o, err := wire.DecodeConsumerOffsetInfo(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, offsetJSON{PartitionID: o.PartitionID, CurrentOffset: o.CurrentOffset, StoredOffset: o.StoredOffset})
		return nil
	})
}

type storeOffsetJSON struct {
	ConsumerID  json.RawMessage `json:"consumer_id"`
	PartitionID *uint32         `json:"partition_id"`
	Offset      *uint64         `json:"offset"`
}

func jsonConsumerID(raw json.RawMessage) (wire.Identifier, *apiError) {
	if len(raw) == 0 || string(raw) == "null" {
		return wire.NumericID(1), nil
	}
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return wire.Identifier{}, unprocessable("consumer_id: %v", err)
		}
		return parseID(s)
	}
	var n uint64
	if err := json.Unmarshal(raw, &n); err != nil || n > math.MaxUint32 {
		return wire.Identifier{}, unprocessable("consumer_id: must be a u32 or a string")
	}
	return wire.NumericID(uint32(n)), nil
}

func (s *Server) storeOffset(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	var req storeOffsetJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.Offset == nil {
		writeError(w, unprocessable("missing field `offset`"))
		return
	}
	cid, e := jsonConsumerID(req.ConsumerID)
	if e != nil {
		writeError(w, e)
		return
	}
	o := wire.StoreConsumerOffset{Consumer: wire.SingleConsumer(cid), StreamID: l[0], TopicID: l[1], Offset: *req.Offset}
	if req.PartitionID != nil {
		o.Partition = wire.SomePartition(*req.PartitionID)
	}
	s.noContent(w, r, &o)
}

func (s *Server) deleteOffset(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id", "consumer_id")
	if !ok {
		return
	}
	pid, set, e := queryU32(r.URL.Query(), "partition_id")
	if e != nil {
		writeError(w, e)
		return
	}
	o := wire.DeleteConsumerOffset{Consumer: wire.SingleConsumer(l[2]), StreamID: l[0], TopicID: l[1]}
	if set {
		o.Partition = wire.SomePartition(pid)
	}
	s.noContent(w, r, &o)
}

// ---------------------------------------------------------------------------
// Messages.

func pollKind(v string) (uint8, bool) {
	switch v {
	case "", "o", "offset":
		return wire.PollOffset, true
	case "t", "timestamp":
		return wire.PollTimestamp, true
	case "f", "first":
		return wire.PollFirst, true
	case "l", "last":
		return wire.PollLast, true
	case "n", "next":
		return wire.PollNext, true
	}
	return 0, false
}

func (s *Server) pollMessages(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	q := r.URL.Query()
	cid, e := consumerID(q.Get("consumer_id"))
	if e != nil {
		writeError(w, e)
		return
	}
	pid, _, e := queryU32(q, "partition_id")
	if e != nil {
		writeError(w, e)
		return
	}
	kind, ok := pollKind(q.Get("kind"))
	if !ok {
		writeError(w, badQuery("kind", &jsonErr{"unknown polling kind " + strconv.Quote(q.Get("kind"))}))
		return
	}
	var value uint64
	if v := q.Get("value"); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			writeError(w, badQuery("value", err))
			return
		}
		value = n
	}
	count := uint32(10)
	if v := q.Get("count"); v != "" {
		n, err := strconv.ParseUint(v, 10, 32)
		if err != nil {
			writeError(w, badQuery("count", err))
			return
		}
		count = uint32(n)
	}
	auto := false
	if v := q.Get("auto_commit"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeError(w, badQuery("auto_commit", err))
			return
		}
		auto = b
	}
	wait, e := pollWait(q.Get("wait"))
	if e != nil {
		writeError(w, e)
		return
	}
	req := wire.PollMessages{Consumer: wire.SingleConsumer(cid), StreamID: l[0], TopicID: l[1], Partition: wire.SomePartition(pid),
		Strategy: wire.PollingStrategy{Kind: kind, Value: value}, Count: count, AutoCommit: auto, WaitMillis: wait}
	s.request(w, r, &req, func(p []byte) error {
		out, err := appendPolled(nil, p)
		if err != nil {
			return err
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(out)
		return nil
	})
}

// pollWait parses the poll route's iggo parameter wait: how long the
// server may hold a poll that finds nothing (long polling), as
// milliseconds ("1500") or a duration ("1.5s", "250ms"); absent or 0: no
// wait. It becomes the binary poll's wait extension.
func pollWait(v string) (uint32, *apiError) {
	if v == "" {
		return 0, nil
	}
	var d time.Duration
	if n, err := strconv.ParseUint(v, 10, 32); err == nil {
		d = time.Duration(n) * time.Millisecond
	} else if d, err = time.ParseDuration(v); err != nil {
		return 0, badQuery("wait", &jsonErr{"want milliseconds or a duration such as 5s, got " + strconv.Quote(v)})
	}
	ms := d / time.Millisecond
	if d < 0 || ms > 1<<32-1 || d > 0 && ms == 0 {
		return 0, badQuery("wait", &jsonErr{"must be 0 or between 1ms and 4294967295ms, got " + strconv.Quote(v)})
	}
	return uint32(ms), nil
}

// maxUnacked bounds the ?ack=none sends in flight on the node; more are
// answered 503 server_busy.
const maxUnacked = 128

func (s *Server) sendMessages(w http.ResponseWriter, r *http.Request) {
	l, ok := ids(w, r, "stream_id", "topic_id")
	if !ok {
		return
	}
	ack := r.URL.Query().Get("ack")
	if ack != "" && ack != "replicated" && ack != "none" {
		writeError(w, badQuery("ack", &jsonErr{"unknown variant, expected `replicated` or `none`"}))
		return
	}
	b, ok := s.readBody(w, r)
	if !ok {
		return
	}
	frame, _, err := sendFrame(b, l[0], l[1])
	if err != nil {
		writeError(w, fromError(err))
		return
	}
	durability := "replicated-memory"
	if persisted, ok := s.b.TopicPersisted(l[0], l[1]); ok && persisted {
		durability = "persisted"
	}
	if ack == "none" {
		if s.cfg.MaxFrame > 0 && len(frame) > s.cfg.MaxFrame {
			writeError(w, httpError(http.StatusRequestEntityTooLarge, "payload_too_large",
				"the request's binary frame exceeds message_bus.max_message_size"))
			return
		}
		if code := s.b.CheckSend(identityOf(r).user, l[0], l[1]); code != 0 {
			writeError(w, codeError(code))
			return
		}
		select {
		case s.unacked <- struct{}{}:
		default:
			e := httpError(http.StatusServiceUnavailable, "server_busy", "the node is at its in-flight write budget; retry with backoff")
			e.retry = true
			writeError(w, e)
			return
		}
		id := identityOf(r)
		sess, e := s.sessions.get(id, func() Session { return s.b.OpenSession(id.addr, id.user) })
		if e != nil {
			<-s.unacked
			writeError(w, e)
			return
		}
		go func() {
			defer func() { <-s.unacked }()
			ctx, cancel := context.WithTimeout(context.Background(), s.cfg.RequestTimeout)
			defer cancel()
			if err := sess.Do(ctx, wire.CmdSendMessages, frame, nil); err != nil {
				s.log.Debug("unacknowledged send failed", zap.Error(err))
			}
		}()
		w.Header().Set("Iggy-Durability", "none")
		w.WriteHeader(http.StatusAccepted)
		return
	}
	s.do(w, r, wire.CmdSendMessages, frame, func(p []byte) error {
		c, err := wire.DecodeSendConfirmations(p)
		out := confirmationsJSON{Confirmations: []confirmationJSON{}}
		if err == nil {
			for _, x := range c {
				out.Confirmations = append(out.Confirmations, confirmationJSON{x.StreamID, x.TopicID, x.PartitionID, x.BaseOffset})
			}
		}
		w.Header().Set("Iggy-Durability", durability)
		writeJSON(w, http.StatusCreated, out)
		return nil
	})
}

// ---------------------------------------------------------------------------
// System.

func (s *Server) getStats(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	s.request(w, r, &wire.GetStats{}, func(p []byte) error {
		st, err := wire.DecodeStats(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, statsOf(st))
		return nil
	})
}

func (s *Server) describeOptions(w http.ResponseWriter, r *http.Request) {
	var scope wire.OptionsScope
	switch chi.URLParam(r, "scope") {
	case "topic":
		scope = wire.ScopeTopic
	case "stream":
		scope = wire.ScopeStream
	case "user":
		scope = wire.ScopeUser
	default:
		writeError(w, codeError(wire.CodeInvalidCommand))
		return
	}
	s.request(w, r, &wire.DescribeOptions{Scope: scope}, func(p []byte) error {
		l, err := wire.DecodeOptionDescriptors(p)
		if err != nil {
			return err
		}
		out := make([]optionSpecJSON, 0, len(l))
		for _, o := range l {
			out = append(out, optionSpecJSON{Key: o.Key, Kind: o.Kind.String(), DefaultValue: o.Default, Description: o.Description})
		}
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

type snapshotJSON struct {
	Compression   *string  `json:"compression"`
	SnapshotTypes []string `json:"snapshot_types"`
}

var snapshotCompressions = map[string]uint8{"Stored": wire.SnapshotStored, "Deflated": wire.SnapshotDeflated,
	"Bzip2": 3, "Zstd": wire.SnapshotZstd, "Lzma": wire.SnapshotLzma, "Xz": wire.SnapshotXz}

var snapshotTypes = map[string]uint8{"FilesystemOverview": wire.SnapshotFilesystemOverview, "ProcessList": wire.SnapshotProcessList,
	"ResourceUsage": wire.SnapshotResourceUsage, "Test": wire.SnapshotTest, "ServerLogs": wire.SnapshotServerLogs,
	"ServerConfig": wire.SnapshotServerConfig, "All": wire.SnapshotAll}

func (s *Server) getSnapshot(w http.ResponseWriter, r *http.Request) {
	var req snapshotJSON
	if !s.body(w, r, &req) {
		return
	}
	if req.Compression == nil || req.SnapshotTypes == nil {
		writeError(w, unprocessable("missing field `compression` or `snapshot_types`"))
		return
	}
	comp, ok := snapshotCompressions[*req.Compression]
	if !ok {
		writeError(w, unprocessable("compression: unknown variant %q", *req.Compression))
		return
	}
	g := wire.GetSnapshotFile{Compression: comp}
	for _, t := range req.SnapshotTypes {
		v, ok := snapshotTypes[t]
		if !ok {
			writeError(w, unprocessable("snapshot_types: unknown variant %q", t))
			return
		}
		g.Types = append(g.Types, v)
	}
	s.request(w, r, &g, func(p []byte) error {
		name := "iggy_snapshot_" + time.Now().Format("20060102_150405") + ".zip"
		w.Header().Set("Content-Type", "application/zip")
		w.Header().Set("Content-Disposition", `attachment; filename="`+name+`"`)
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(p)
		return nil
	})
}

func (s *Server) getClusterMetadata(w http.ResponseWriter, r *http.Request) {
	s.request(w, r, &wire.GetClusterMetadata{}, func(p []byte) error {
		m, err := wire.DecodeClusterMetadata(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, clusterOf(m))
		return nil
	})
}

func (s *Server) getClients(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	s.request(w, r, &wire.GetClients{}, func(p []byte) error {
		l, err := wire.DecodeClientInfos(p)
		if err != nil {
			return err
		}
		out := make([]clientJSON, 0, len(l))
		for _, c := range l {
			out = append(out, clientOf(c))
		}
		sort.Slice(out, func(i, j int) bool { return out[i].ClientID < out[j].ClientID })
		writeJSON(w, http.StatusOK, out)
		return nil
	})
}

func (s *Server) getClient(w http.ResponseWriter, r *http.Request) {
	if !s.readConsistency(w, r) {
		return
	}
	id, err := strconv.ParseUint(chi.URLParam(r, "client_id"), 10, 32)
	if err != nil {
		writeError(w, httpError(http.StatusBadRequest, "invalid_path", "Invalid URL: client_id: "+err.Error()))
		return
	}
	s.request(w, r, &wire.GetClient{ClientID: uint32(id)}, func(p []byte) error {
		if len(p) == 0 {
			writeError(w, notFound())
			return nil
		}
		d, err := wire.DecodeClientDetails(p)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, clientDetailsOf(d))
		return nil
	})
}

// ---------------------------------------------------------------------------
// Helpers.

// body reads and decodes a JSON body into v; false means an error answer
// was written.
func (s *Server) body(w http.ResponseWriter, r *http.Request, v any) bool {
	b, ok := s.readBody(w, r)
	if !ok {
		return false
	}
	if err := decodeJSON(b, v); err != nil {
		writeError(w, fromError(err))
		return false
	}
	return true
}

// noContent runs req and answers 204.
func (s *Server) noContent(w http.ResponseWriter, r *http.Request, req wire.Request) {
	s.request(w, r, req, func([]byte) error {
		w.WriteHeader(http.StatusNoContent)
		return nil
	})
}
