package replica

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"go.uber.org/zap"

	"github.com/iggo/iggo/replica/httpapi"
	"github.com/iggo/iggo/replica/intake"
	"github.com/iggo/iggo/replica/metadata"
	"github.com/iggo/iggo/replica/metrics"
	"github.com/iggo/iggo/shard"
	"github.com/iggo/iggo/shard/vfs"
	"github.com/iggo/iggo/vsr"
	"github.com/iggo/iggo/wire"
)

// The HTTP API (package httpapi) runs on shard 0's behalf and reaches the
// node only through httpBackend: local sessions on the connection-serving
// path (local_session.go), the binary login's credential checks, the
// published metadata view, health and metrics.

type httpBackend struct{ n *Node }

// localHTTPSession adapts a LocalSession to httpapi.Session.
type localHTTPSession struct{ *LocalSession }

func (b httpBackend) OpenSession(addr string, user uint32) httpapi.Session {
	return localHTTPSession{b.n.OpenLocalSession(wire.TransportHTTP, addr, user)}
}

// AuthenticatePassword checks an HTTP login from addr under the login guard
// (verification slots, failed-login throttle) like a binary login.
func (b httpBackend) AuthenticatePassword(addr, username, password string) (uint32, wire.Code) {
	u, code := b.n.passwordLogin("http", addr, b.n.store.View(), username, password)
	if u == nil {
		if code == 0 {
			code = wire.CodeInvalidCredentials
		}
		return 0, code
	}
	return u.ID, 0
}

func (b httpBackend) AuthenticateToken(token string) (uint32, uint64, wire.Code) {
	view := b.n.store.View()
	u, code := view.AuthenticateToken(token, nowMicros())
	if u == nil {
		if code == 0 {
			code = wire.CodeInvalidPersonalAccessToken
		}
		return 0, 0, code
	}
	var expiry uint64
	if _, pat, ok := view.TokenByHash(metadata.HashToken(token)); ok {
		expiry = pat.ExpiryAt
	}
	return u.ID, expiry, 0
}

func (b httpBackend) LoginAvailable() bool {
	return !b.n.clustered() || b.n.store.View().Bootstrapped()
}

func (b httpBackend) UserActive(user uint32) bool {
	u := b.n.store.View().User(user)
	return u != nil && u.Status == metadata.UserActive
}

func (b httpBackend) TokenRevoked(id [16]byte) bool {
	return b.n.store.View().AccessTokenRevoked(id, uint64(time.Now().Unix()))
}

// RevokeToken commits the revocation through the metadata group (a backup
// forwards it to the primary like any system command) and waits until this
// node applied it.
func (b httpBackend) RevokeToken(ctx context.Context, id [16]byte, expiry uint64) error {
	done := make(chan uint32, 1)
	t := &task{req: &systemReq{cmd: metadata.RevokeAccessToken{ID: id, Expiry: expiry}}}
	t.then = func(t *task) { done <- t.status }
	if err := b.n.rt.Send(0, t); err != nil {
		return wire.NewError(wire.CodeTransientNotAccepted)
	}
	select {
	case code := <-done:
		if code != 0 {
			return wire.NewError(wire.Code(code))
		}
	case <-ctx.Done():
		return wire.NewError(wire.CodeTransientNotCommitted)
	}
	for !b.n.store.View().AccessTokenRevoked(id, 0) {
		select {
		case <-ctx.Done():
			return wire.NewError(wire.CodeTransientNotCommitted)
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func (b httpBackend) TopicPersisted(stream, topic wire.Identifier) (bool, bool) {
	_, tp, code := b.n.store.View().ResolveTopic(stream, topic)
	if code != 0 || tp == nil {
		return false, false
	}
	return tp.Config.Durability == metadata.DurabilityPersisted, true
}

// CheckSend is conn.send's topic and permission check, for an
// unacknowledged HTTP send answered before the send runs.
func (b httpBackend) CheckSend(user uint32, stream, topic wire.Identifier) wire.Code {
	view := b.n.store.View()
	st, tp, code := view.ResolveTopic(stream, topic)
	if code != 0 {
		return code
	}
	if !view.Allowed(user, metadata.ActionSendMessages, st.ID, tp.ID) {
		return wire.CodeUnauthorized
	}
	return 0
}

func (b httpBackend) MetadataView() (uint32, bool) {
	r, ok := b.n.roles.get(vsr.MetadataGroup)
	return r.View, ok
}

// IsMetadataPrimary reports this node leading the metadata group
// (linearizable reads).
func (b httpBackend) IsMetadataPrimary() bool {
	r, ok := b.n.roles.get(vsr.MetadataGroup)
	return ok && r.IsPrimary
}

func (b httpBackend) Health() httpapi.Health { return b.n.health() }

func (b httpBackend) Metrics() *metrics.Metrics { return b.n.metrics }

// health: live while the node runs; ready once its metadata replica is in
// normal status (and, in a cluster, bootstrapped) and every partition the
// metadata names is open here with its replica in normal status.
func (n *Node) health() httpapi.Health {
	h := httpapi.Health{Live: !n.stopping.Load()}
	if !h.Live {
		h.Detail = "stopping"
		return h
	}
	r, ok := n.roles.get(vsr.MetadataGroup)
	if !ok || r.Status != "normal" {
		h.Detail = "metadata group not in normal status"
		if ok {
			h.Detail += " (" + r.Status + ")"
		}
		return h
	}
	view := n.store.View()
	if n.clustered() && !view.Bootstrapped() {
		h.Detail = "metadata not bootstrapped"
		return h
	}
	for _, st := range view.Streams() {
		for _, tp := range st.Topics() {
			for _, p := range tp.Partitions {
				ns := shard.MustNamespace(st.ID, tp.ID, p.ID)
				v, ok := n.partStats.Load(ns)
				if !ok || v.(*partStats).Revision != p.Revision {
					h.Detail = fmt.Sprintf("partition %d/%d/%d not open", st.ID, tp.ID, p.ID)
					return h
				}
				if pr, ok := n.roles.get(uint64(ns)); !ok || pr.Status != "normal" {
					status := "unknown"
					if ok {
						status = pr.Status
					}
					h.Detail = fmt.Sprintf("partition %d/%d/%d recovering (%s)", st.ID, tp.ID, p.ID, status)
					return h
				}
			}
		}
	}
	h.Ready = true
	return h
}

// MetricsSnapshot implements metrics.Source from published state only.
func (n *Node) MetricsSnapshot(s *metrics.Snapshot) {
	if n.store == nil {
		return
	}
	view := n.store.View()
	c := view.Counts()
	s.Streams, s.Topics, s.Partitions, s.ConsumerGroups = uint64(c.Streams), uint64(c.Topics), uint64(c.Partitions), uint64(c.ConsumerGroups)
	s.Users = uint64(len(view.Users()))
	for _, cn := range n.clients.list() {
		if int(cn.transport) < len(s.ClientsByTransport) {
			s.ClientsByTransport[cn.transport]++
		}
		s.Clients++
	}
	if n.http != nil {
		s.HTTPSessions = uint64(n.http.Sessions())
	}
	type tk struct{ stream, topic uint32 }
	topics := map[tk]*metrics.TopicStat{}
	var order []tk
	n.partStats.Range(func(k, v any) bool {
		ns, ps := k.(shard.Namespace), v.(*partStats)
		s.Segments += uint64(ps.Segments.Load())
		s.Messages += ps.Messages.Load()
		key := tk{ns.Stream(), ns.Topic()}
		t := topics[key]
		if t == nil {
			t = &metrics.TopicStat{Stream: key.stream, Topic: key.topic}
			topics[key] = t
			order = append(order, key)
		}
		t.AppendedMessages += ps.AppendedMsgs.Load()
		t.AppendedBytes += ps.AppendedBytes.Load()
		t.PolledMessages += ps.PolledMsgs.Load()
		t.PolledBytes += ps.PolledBytes.Load()
		t.StoredMessages += ps.Messages.Load()
		t.StoredBytes += ps.Size.Load()
		return true
	})
	for _, k := range order {
		s.TopicStats = append(s.TopicStats, *topics[k])
	}
	if n.rt != nil {
		for _, st := range n.rt.Stats() {
			s.Shards = append(s.Shards, metrics.ShardStat{Shard: st.Shard, Queued: st.Queued,
				Processed: st.Processed, Refused: st.Refused,
				Stopped: st.RefusedStopped, Iterations: st.Iterations, MaxBatch: st.MaxBatch})
		}
	}
	for _, r := range n.GroupRoles() {
		k := metrics.Partition
		if r.Metadata {
			k = metrics.Metadata
		}
		lag := uint64(0)
		if r.Commit > r.Applied {
			lag = r.Commit - r.Applied
		}
		s.Groups = append(s.Groups, metrics.GroupStat{Kind: k, View: r.View, Status: r.Status, Primary: r.IsPrimary, CommitLag: lag})
	}
	if n.ci != nil {
		if g := n.ci.current(); g != nil {
			for _, m := range g.Members() {
				s.Members = append(s.Members, metrics.MemberStat{Name: m.Name, State: m.Liveness.String()})
			}
		}
	}
	for _, sh := range n.shards {
		if sh == nil || sh.stamps.stats == nil {
			continue
		}
		p := sh.stamps.stats
		s.Pools = append(s.Pools, metrics.PoolStat{Shard: sh.id, IdleBytes: p.idleBytes.Load(), IdleCount: p.idleCount.Load(),
			Hits: p.hits.Load(), Misses: p.misses.Load()})
	}
	for _, sh := range n.shards {
		if sh == nil {
			continue
		}
		if b, ok := sh.fs.(*vfs.Bounded); ok {
			st := b.Stats()
			s.Files = append(s.Files, metrics.FileStat{Shard: sh.id, Open: st.Open, Max: st.Max, Reopens: st.Reopens, Closes: st.Closes})
		}
	}
	h := n.health()
	s.Live, s.Ready = h.Live, h.Ready
}

// httpListenAddr is the HTTP bind address: http.address, with the port
// from this node's roster entry in cluster mode.
func (n *Node) httpListenAddr() (string, error) {
	addr := n.cfg.HTTP.Address
	if !n.clustered() {
		return addr, nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return "", fmt.Errorf("replica: http.address %q: %w", addr, err)
	}
	if n.member.Ports.HTTP == nil {
		return "", errors.New("replica: cluster mode with http enabled needs ports.http in this node's cluster.nodes entry")
	}
	return net.JoinHostPort(host, strconv.Itoa(int(*n.member.Ports.HTTP))), nil
}

// bindHTTP builds the HTTP API (its configuration is checked here, with
// the other listeners, before storage is touched) and binds its listener
// and http.metrics.open_address when http.enabled.
func (n *Node) bindHTTP() error {
	hc := n.cfg.HTTP
	if !hc.Enabled {
		return nil
	}
	secret := ""
	if n.clustered() && n.cfg.Cluster.Auth.Enabled {
		secret = n.cfg.Cluster.Auth.SharedSecret
	}
	srv, err := httpapi.New(httpapi.Config{HTTP: hc, ClusterSecret: secret, Clustered: n.clustered() && n.replicaCount > 1,
		MaxSessions:    max(1, n.cfg.Metadata.ClientsTableMax/2),
		RequestTimeout: 30 * time.Second, MaxFrame: int(n.maxFrame), Logger: n.log.Named("http")}, httpBackend{n})
	if err != nil {
		return fmt.Errorf("replica: %w", err)
	}
	ln := n.opts.HTTPListener
	if ln == nil {
		addr, err := n.httpListenAddr()
		if err != nil {
			return err
		}
		if ln, err = net.Listen("tcp", addr); err != nil {
			return fmt.Errorf("replica: binding http %s: %w", addr, err)
		}
	}
	n.httpLn, n.httpBound = n.admitHTTP(ln), ln.Addr().String()
	if a := hc.Metrics.OpenAddress; hc.Metrics.Enabled && a != "" {
		mln, err := net.Listen("tcp", a)
		if err != nil {
			n.closeHTTPListeners()
			return fmt.Errorf("replica: binding http.metrics.open_address %s: %w", a, err)
		}
		n.metricsLn, n.metricsBound = n.admitHTTP(mln), mln.Addr().String()
	}
	n.httpSrv = srv
	return nil
}

// admitHTTP counts HTTP connections against message_bus.connections_max
// (and so the descriptor budget split from it) like every client
// connection; a refused one is closed with a rate-limited line.
func (n *Node) admitHTTP(ln net.Listener) net.Listener {
	return &intake.Listener{Listener: ln, Admission: n.admission, Transport: "http", Refused: func(c net.Conn, r *intake.Refusal) {
		n.clientLog.Warn(evRefused+":"+r.Key, "connection refused", zap.String("limit", r.Key), zap.Int64("value", r.Limit),
			zap.String("transport", "http"), zap.String("addr", c.RemoteAddr().String()))
	}}
}

// closeHTTPListeners closes listeners bindHTTP bound that no server took.
func (n *Node) closeHTTPListeners() {
	if n.http != nil {
		return
	}
	for _, l := range []net.Listener{n.httpLn, n.metricsLn} {
		if l != nil {
			_ = l.Close()
		}
	}
	n.httpLn, n.metricsLn = nil, nil
}

// serveHTTP starts the HTTP API on the bound listeners.
func (n *Node) serveHTTP() error {
	srv := n.httpSrv
	if srv == nil || n.httpLn == nil {
		return nil
	}
	if err := srv.Serve(n.httpLn); err != nil {
		n.closeHTTPListeners()
		return err
	}
	n.http = srv
	if n.metricsLn != nil {
		_ = srv.ServeMetrics(n.metricsLn)
	}
	scheme := "http"
	if n.cfg.HTTP.TLS.Enabled {
		scheme = "https"
	}
	n.log.Info("http api listening", zap.String("address", n.httpBound), zap.String("scheme", scheme),
		zap.String("metrics_open_address", n.metricsBound))
	return nil
}

func (n *Node) stopHTTP() {
	if n.http != nil {
		n.http.Close(n.cfg.Sharding.ShutdownDrainTimeout.Duration + time.Second)
		return
	}
	n.closeHTTPListeners()
}
