package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/rs/cors"
	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/config"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/wire"
)

// Session is one in-process client session of the serving path (the
// binary protocol's connection, without a socket): Do executes a request
// with the body in frame[wire.HeaderSize:] and hands the reply payload to
// fn; refusals are *wire.Error, evictions *wire.EvictionError.
type Session interface {
	Do(ctx context.Context, code wire.CommandCode, frame []byte, fn func(payload []byte) error) error
	Close()
}

// Health is what the health endpoints answer.
type Health struct {
	Live, Ready bool
	// Detail says why the node is not ready.
	Detail string
}

// Backend is the node as the HTTP API sees it.
type Backend interface {
	// OpenSession opens a session of user (authenticated by the API) for a
	// client at addr.
	OpenSession(addr string, user uint32) Session
	// AuthenticatePassword and AuthenticateToken are the binary login's
	// checks against the published metadata (user id, or the code that
	// refuses). expiry is the token's expiry in µs, 0 for never.
	AuthenticatePassword(addr, username, password string) (user uint32, code wire.Code)
	AuthenticateToken(token string) (user uint32, expiry uint64, code wire.Code)
	// LoginAvailable is false while a cluster node's metadata cannot answer
	// a login yet (not bootstrapped, catching up): logins get 503.
	LoginAvailable() bool
	// UserActive reports whether the user exists and is active.
	UserActive(user uint32) bool
	// TokenRevoked reports a logged-out access token; RevokeToken revokes
	// one until expiry (unix seconds) through the metadata group.
	TokenRevoked(id [16]byte) bool
	RevokeToken(ctx context.Context, id [16]byte, expiry uint64) error
	// TopicPersisted reports whether a topic's messages are acknowledged
	// after an fdatasync on a quorum (persisted durability).
	TopicPersisted(stream, topic wire.Identifier) (persisted, ok bool)
	// CheckSend is the send's topic and permission check, answered before
	// an unacknowledged send (?ack=none) runs.
	CheckSend(user uint32, stream, topic wire.Identifier) wire.Code
	// MetadataView is the metadata group's view (the Iggy-View header);
	// IsMetadataPrimary reports this node leading it (linearizable reads).
	MetadataView() (uint32, bool)
	IsMetadataPrimary() bool
	Health() Health
	Metrics() *metrics.Metrics
}

// Config is what the API needs besides the backend.
type Config struct {
	HTTP config.HTTPConfig
	// ClusterSecret is cluster.auth.shared_secret when cluster mode and
	// cluster.auth are on (the JWT key is derived from it when http.jwt has
	// no secret), else empty.
	ClusterSecret string
	// Clustered: the node is one of several (a token must verify on every
	// node for a client to move between them).
	Clustered bool
	// MaxSessions bounds the live credential sessions (Iggy: half of
	// metadata.clients_table_max).
	MaxSessions int
	// RequestTimeout bounds one request's time in the serving path.
	RequestTimeout time.Duration
	// MaxFrame is message_bus.max_message_size: a request whose binary
	// frame would exceed it is refused with 413.
	MaxFrame int
	Logger   *zap.Logger
}

// Server is the HTTP API of one node.
type Server struct {
	cfg      Config
	b        Backend
	log      *zap.Logger
	jwt      *jwtManager
	sessions *sessionTable
	handler  http.Handler
	maxBody  int64
	unacked  chan struct{}

	mu      sync.Mutex
	servers []*http.Server
	wg      sync.WaitGroup
}

// New validates the configuration and builds the router.
func New(cfg Config, b Backend) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = zap.NewNop()
	}
	if cfg.RequestTimeout <= 0 {
		cfg.RequestTimeout = 30 * time.Second
	}
	if cfg.MaxSessions <= 0 {
		cfg.MaxSessions = 4096
	}
	j, err := newJWTManager(cfg.HTTP.JWT, cfg.ClusterSecret, log)
	if err != nil {
		return nil, err
	}
	if jc := cfg.HTTP.JWT; cfg.Clustered && cfg.ClusterSecret == "" && jc.EncodingSecret == "" && jc.DecodingSecret == "" {
		log.Warn("http.jwt: cluster mode without cluster.auth and without http.jwt secrets: each node signs with its own random key, so a token works only on the node that issued it")
	}
	if cfg.HTTP.Metrics.Enabled && !strings.HasPrefix(cfg.HTTP.Metrics.Endpoint, "/") {
		return nil, fmt.Errorf("http.metrics.endpoint: must start with '/', got %q", cfg.HTTP.Metrics.Endpoint)
	}
	s := &Server{cfg: cfg, b: b, log: log, jwt: j, sessions: newSessionTable(cfg.MaxSessions),
		maxBody: int64(cfg.HTTP.MaxRequestSize.Bytes()), unacked: make(chan struct{}, maxUnacked)}
	h, err := s.router()
	if err != nil {
		return nil, err
	}
	s.handler = h
	return s, nil
}

// Handler is the API's handler (tests serve it directly).
func (s *Server) Handler() http.Handler { return s.handler }

// Serve serves ln (TLS per http.tls) until Close.
func (s *Server) Serve(ln net.Listener) error {
	srv := &http.Server{Handler: s.handler, ReadHeaderTimeout: 30 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: zap.NewStdLog(s.log.Named("http"))}
	if t := s.cfg.HTTP.TLS; t.Enabled {
		cert, err := tls.LoadX509KeyPair(t.CertFile, t.KeyFile)
		if err != nil {
			return fmt.Errorf("http.tls: loading cert_file %s and key_file %s: %w", t.CertFile, t.KeyFile, err)
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	return s.serve(srv, ln)
}

// ServeMetrics serves the metrics endpoint without authentication on ln
// (http.metrics.open_address).
func (s *Server) ServeMetrics(ln net.Listener) error {
	mux := http.NewServeMux()
	mux.Handle(s.cfg.HTTP.Metrics.Endpoint, s.metricsHandler())
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 30 * time.Second}
	return s.serve(srv, ln)
}

func (s *Server) serve(srv *http.Server, ln net.Listener) error {
	s.mu.Lock()
	s.servers = append(s.servers, srv)
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			s.log.Error("http listener stopped", zap.Error(err))
		}
	}()
	return nil
}

// Close stops the listeners, waiting up to timeout for requests in flight.
func (s *Server) Close(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	s.mu.Lock()
	srvs := s.servers
	s.servers = nil
	s.mu.Unlock()
	for _, srv := range srvs {
		if err := srv.Shutdown(ctx); err != nil {
			_ = srv.Close()
		}
	}
	s.wg.Wait()
	s.sessions.closeAll()
}

// Sessions is the number of live credential sessions.
func (s *Server) Sessions() int { return s.sessions.len() }

func (s *Server) metricsHandler() http.Handler {
	m := s.b.Metrics()
	if m == nil {
		return http.NotFoundHandler()
	}
	return promhttp.HandlerFor(m.Registry(), promhttp.HandlerOpts{ErrorLog: zap.NewStdLog(s.log.Named("metrics"))})
}

// ---------------------------------------------------------------------------
// Router.

const (
	pingPath = "/ping"
	livePath = "/livez"
	readPath = "/readyz"
)

func (s *Server) router() (http.Handler, error) {
	r := chi.NewRouter()
	r.NotFound(func(w http.ResponseWriter, _ *http.Request) { writeError(w, notFound()) })
	r.MethodNotAllowed(func(w http.ResponseWriter, _ *http.Request) {
		writeError(w, httpError(http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed"))
	})
	r.Use(s.recoverer, s.viewHeader, s.limitBody)

	r.Get(pingPath, func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = io.WriteString(w, "pong")
	})
	r.Get(livePath, s.live)
	r.Get(readPath, s.ready)
	r.Post("/users/login", s.loginUser)
	r.Post("/users/refresh-token", s.refreshToken)
	r.Post("/personal-access-tokens/login", s.loginPAT)

	r.Group(func(r chi.Router) {
		r.Use(s.authenticate)
		if m := s.cfg.HTTP.Metrics; m.Enabled {
			r.Method(http.MethodGet, m.Endpoint, s.metricsHandler())
		}
		r.Delete("/users/logout", s.logoutUser)
		r.Get("/users", s.getUsers)
		r.Post("/users", s.createUser)
		r.Get("/users/{user_id}", s.getUser)
		r.Put("/users/{user_id}", s.updateUser)
		r.Delete("/users/{user_id}", s.deleteUser)
		r.Put("/users/{user_id}/password", s.changePassword)
		r.Put("/users/{user_id}/permissions", s.updatePermissions)

		r.Get("/personal-access-tokens", s.getPATs)
		r.Post("/personal-access-tokens", s.createPAT)
		r.Delete("/personal-access-tokens/{name}", s.deletePAT)

		r.Get("/streams", s.getStreams)
		r.Post("/streams", s.createStream)
		r.Get("/streams/{stream_id}", s.getStream)
		r.Put("/streams/{stream_id}", s.updateStream)
		r.Delete("/streams/{stream_id}", s.deleteStream)
		r.Delete("/streams/{stream_id}/purge", s.purgeStream)

		r.Get("/streams/{stream_id}/topics", s.getTopics)
		r.Post("/streams/{stream_id}/topics", s.createTopic)
		r.Get("/streams/{stream_id}/topics/{topic_id}", s.getTopic)
		r.Put("/streams/{stream_id}/topics/{topic_id}", s.updateTopic)
		r.Delete("/streams/{stream_id}/topics/{topic_id}", s.deleteTopic)
		r.Delete("/streams/{stream_id}/topics/{topic_id}/purge", s.purgeTopic)

		r.Post("/streams/{stream_id}/topics/{topic_id}/partitions", s.createPartitions)
		r.Delete("/streams/{stream_id}/topics/{topic_id}/partitions", s.deletePartitions)
		r.Delete("/streams/{stream_id}/topics/{topic_id}/partitions/{partition_id}", s.deleteSegments)

		r.Get("/streams/{stream_id}/topics/{topic_id}/consumer-groups", s.getGroups)
		r.Post("/streams/{stream_id}/topics/{topic_id}/consumer-groups", s.createGroup)
		r.Get("/streams/{stream_id}/topics/{topic_id}/consumer-groups/{group_id}", s.getGroup)
		r.Delete("/streams/{stream_id}/topics/{topic_id}/consumer-groups/{group_id}", s.deleteGroup)

		r.Get("/streams/{stream_id}/topics/{topic_id}/consumer-offsets", s.getOffset)
		r.Put("/streams/{stream_id}/topics/{topic_id}/consumer-offsets", s.storeOffset)
		r.Delete("/streams/{stream_id}/topics/{topic_id}/consumer-offsets/{consumer_id}", s.deleteOffset)

		r.Get("/streams/{stream_id}/topics/{topic_id}/messages", s.pollMessages)
		r.Post("/streams/{stream_id}/topics/{topic_id}/messages", s.sendMessages)

		r.Get("/stats", s.getStats)
		r.Get("/options/{scope}", s.describeOptions)
		r.Post("/snapshot", s.getSnapshot)
		r.Get("/cluster/metadata", s.getClusterMetadata)
		r.Get("/clients", s.getClients)
		r.Get("/clients/{client_id}", s.getClient)
	})

	var h http.Handler = r
	if s.cfg.HTTP.WebUI {
		var err error
		if h, err = s.webUI(h); err != nil {
			return nil, err
		}
	}
	if c := s.cfg.HTTP.CORS; c.Enabled {
		origins := c.AllowedOrigins
		if len(origins) > 0 && strings.TrimSpace(origins[0]) == "*" {
			origins = []string{"*"}
		}
		h = cors.New(cors.Options{
			AllowedOrigins:      trimAll(origins),
			AllowedMethods:      upperAll(trimAll(c.AllowedMethods)),
			AllowedHeaders:      trimAll(c.AllowedHeaders),
			ExposedHeaders:      trimAll(c.ExposedHeaders),
			AllowCredentials:    c.AllowCredentials,
			AllowPrivateNetwork: c.AllowPrivateNetwork,
		}).Handler(h)
	}
	// Outermost, like Iggy: every request is counted, CORS preflights too.
	count := h
	h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.b.Metrics().HTTPRequest()
		count.ServeHTTP(w, r)
	})
	return h, nil
}

func trimAll(l []string) []string {
	out := make([]string, 0, len(l))
	for _, v := range l {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}

func upperAll(l []string) []string {
	for i := range l {
		l[i] = strings.ToUpper(l[i])
	}
	return l
}

// ---------------------------------------------------------------------------
// Middleware.

func (s *Server) recoverer(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("http handler panicked", zap.Any("panic", v), zap.String("path", r.URL.Path))
				writeError(w, httpError(http.StatusInternalServerError, "error", "internal error"))
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// viewHeader stamps Iggy-View (the metadata view) on successful answers
// other than /ping, as Iggy does.
func (s *Server) viewHeader(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != pingPath {
			if v, ok := s.b.MetadataView(); ok {
				w = &viewWriter{ResponseWriter: w, view: v}
			}
		}
		next.ServeHTTP(w, r)
	})
}

type viewWriter struct {
	http.ResponseWriter
	view  uint32
	wrote bool
}

func (v *viewWriter) WriteHeader(code int) {
	if !v.wrote {
		v.wrote = true
		if code < 400 && v.Header().Get("Iggy-View") == "" {
			v.Header().Set("Iggy-View", strconv.FormatUint(uint64(v.view), 10))
		}
	}
	v.ResponseWriter.WriteHeader(code)
}

func (v *viewWriter) Write(b []byte) (int, error) {
	if !v.wrote {
		v.WriteHeader(http.StatusOK)
	}
	return v.ResponseWriter.Write(b)
}

func (v *viewWriter) Unwrap() http.ResponseWriter { return v.ResponseWriter }

// limitBody enforces http.max_request_size: 413 and Connection: close for
// a larger body (it is not read).
func (s *Server) limitBody(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength > s.maxBody {
			tooLarge(w, s.maxBody)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, s.maxBody)
		next.ServeHTTP(w, r)
	})
}

func tooLarge(w http.ResponseWriter, max int64) {
	w.Header().Set("Connection", "close")
	writeError(w, httpError(http.StatusRequestEntityTooLarge, "payload_too_large",
		fmt.Sprintf("Failed to buffer the request body: length limit of %d bytes exceeded", max)))
}

// readBody reads a JSON request body; errors are rendered.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	ct := r.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
		writeError(w, httpError(http.StatusUnsupportedMediaType, "unsupported_media_type",
			"Expected request with `Content-Type: application/json`"))
		return nil, false
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			tooLarge(w, s.maxBody)
			return nil, false
		}
		writeError(w, httpError(http.StatusBadRequest, "invalid_http_request", "cannot read the request body"))
		return nil, false
	}
	return b, true
}

// decodeJSON decodes b into v: syntax errors are 400, data that does not
// fit the type 422 (Iggy's axum rejections).
func decodeJSON(b []byte, v any) error {
	if err := json.Unmarshal(b, v); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) || len(strings.TrimSpace(string(b))) == 0 {
			return httpError(http.StatusBadRequest, "invalid_json", "Failed to parse the request body as JSON: "+err.Error())
		}
		return unprocessable("Failed to deserialize the JSON body into the target type: %v", err)
	}
	return nil
}

// ---------------------------------------------------------------------------
// Authentication and sessions.

type identityKey struct{}

// identity is the verified credential of a request.
type identity struct {
	user   uint32
	key    string // session-table key: jwt:{jti} or pat:{sha256}
	expiry uint64 // unix seconds, 0 never
	jti    string // JWT only
	addr   string
}

func bearer(r *http.Request) (string, bool) {
	h := r.Header.Get("Authorization")
	t, ok := strings.CutPrefix(h, "Bearer ")
	return strings.TrimSpace(t), ok && strings.TrimSpace(t) != ""
}

// resolve verifies a bearer credential: a self-issued JWT (not revoked),
// or a raw personal access token.
func (s *Server) resolve(tok string, addr string) (identity, *apiError) {
	if v, err := s.jwt.decode(tok); err == nil {
		if s.b.TokenRevoked(tokenID(v.jti)) {
			return identity{}, codeError(wire.CodeUnauthenticated)
		}
		if !s.b.UserActive(v.user) {
			return identity{}, codeError(wire.CodeUnauthenticated)
		}
		return identity{user: v.user, key: "jwt:" + v.jti, expiry: v.expiry, jti: v.jti, addr: addr}, nil
	}
	user, expiry, code := s.b.AuthenticateToken(tok)
	if code != 0 || !s.b.UserActive(user) {
		return identity{}, codeError(wire.CodeUnauthenticated)
	}
	sum := sha256.Sum256([]byte(tok))
	return identity{user: user, key: "pat:" + hex.EncodeToString(sum[:]), expiry: expiry / 1e6, addr: addr}, nil
}

func (s *Server) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, ok := bearer(r)
		if !ok {
			writeError(w, codeError(wire.CodeAccessTokenMissing))
			return
		}
		id, e := s.resolve(tok, r.RemoteAddr)
		if e != nil {
			s.log.Debug("http request refused: credential not valid", zap.String("path", r.URL.Path), zap.String("addr", r.RemoteAddr))
			writeError(w, e)
			return
		}
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), identityKey{}, &id)))
	})
}

func identityOf(r *http.Request) *identity { return r.Context().Value(identityKey{}).(*identity) }

// do runs one request on the caller's session and renders what fails; fn
// gets the reply payload. A session the server closed is dropped so the
// next request opens a fresh one.
func (s *Server) do(w http.ResponseWriter, r *http.Request, code wire.CommandCode, frame []byte, fn func([]byte) error) bool {
	if s.cfg.MaxFrame > 0 && len(frame) > s.cfg.MaxFrame {
		w.Header().Set("Connection", "close")
		writeError(w, httpError(http.StatusRequestEntityTooLarge, "payload_too_large",
			fmt.Sprintf("the request's binary frame of %d bytes exceeds message_bus.max_message_size (%d)", len(frame), s.cfg.MaxFrame)))
		return false
	}
	id := identityOf(r)
	sess, e := s.sessions.get(id, func() Session { return s.b.OpenSession(id.addr, id.user) })
	if e != nil {
		writeError(w, e)
		return false
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.RequestTimeout)
	defer cancel()
	var renderErr error
	err := sess.Do(ctx, code, frame, func(p []byte) error {
		if fn != nil {
			renderErr = fn(p)
		}
		return nil
	})
	if err == nil && renderErr != nil {
		s.log.Error("http: cannot render a reply", zap.Stringer("command", code), zap.Error(renderErr))
		writeError(w, httpError(http.StatusInternalServerError, "error", "cannot decode the server's reply"))
		return false
	}
	if err == nil {
		return true
	}
	var ev *wire.EvictionError
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case errors.As(err, &ev), !isCoded(err):
		s.sessions.drop(id.key, sess)
	}
	writeError(w, fromError(err))
	return false
}

func isCoded(err error) bool {
	c, ok := wire.CodeOf(err)
	return ok && c != 0
}

// request encodes req into a frame and runs it.
func (s *Server) request(w http.ResponseWriter, r *http.Request, req wire.Request, fn func([]byte) error) bool {
	frame, err := req.AppendBody(make([]byte, wire.HeaderSize, wire.HeaderSize+128))
	if err != nil {
		writeError(w, fromError(err))
		return false
	}
	return s.do(w, r, req.Code(), frame, fn)
}

// sessionTable holds one session per live credential.
type sessionTable struct {
	mu  sync.Mutex
	m   map[string]*tableEntry
	max int
}

type tableEntry struct {
	sess    Session
	expiry  uint64
	lastUse time.Time
}

// sessionIdle is how long an unused session must have been idle before a
// full table reclaims it (the next request of its credential opens a new
// one).
const sessionIdle = time.Minute

func newSessionTable(max int) *sessionTable {
	return &sessionTable{m: map[string]*tableEntry{}, max: max}
}

func (t *sessionTable) get(id *identity, open func() Session) (Session, *apiError) {
	now := uint64(time.Now().Unix())
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[id.key]; ok && (e.expiry == 0 || e.expiry > now) {
		e.lastUse = time.Now()
		return e.sess, nil
	}
	if len(t.m) >= t.max {
		var idlest string
		var oldest time.Time
		for k, e := range t.m {
			if e.expiry != 0 && e.expiry <= now {
				e.sess.Close()
				delete(t.m, k)
				continue
			}
			if idlest == "" || e.lastUse.Before(oldest) {
				idlest, oldest = k, e.lastUse
			}
		}
		if len(t.m) >= t.max && idlest != "" && time.Since(oldest) > sessionIdle {
			t.m[idlest].sess.Close()
			delete(t.m, idlest)
		}
	}
	if len(t.m) >= t.max {
		return nil, unavailable()
	}
	e := &tableEntry{sess: open(), expiry: id.expiry, lastUse: time.Now()}
	t.m[id.key] = e
	return e.sess, nil
}

// drop removes key's session if it is still sess.
func (t *sessionTable) drop(key string, sess Session) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if e, ok := t.m[key]; ok && (sess == nil || e.sess == sess) {
		e.sess.Close()
		delete(t.m, key)
	}
}

func (t *sessionTable) len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.m)
}

func (t *sessionTable) closeAll() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, e := range t.m {
		e.sess.Close()
		delete(t.m, k)
	}
}
