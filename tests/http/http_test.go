// Package http_test drives the HTTP API of real iggo-server processes
// (tests/harness): every route's status and JSON, JWT expiry, refresh and
// logout, personal access tokens, permissions, CORS, HTTPS, body limits
// and bad input, messages crossing between HTTP and TCP byte for byte, a
// 3-node cluster through a backup, and a real Prometheus scraping /metrics.
package http_test

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/client/httpclient"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

func ctxT(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// start runs a single node with root iggy/iggy and extra environment.
func start(t *testing.T, env ...string) *harness.Server {
	t.Helper()
	return harness.Start(t, harness.Options{DefaultRoot: true, Env: env})
}

func root(t *testing.T, s *harness.Server) *httpclient.Client {
	t.Helper()
	c := httpclient.New(s.HTTPURL())
	if _, err := c.Login(ctxT(t), "iggy", "iggy"); err != nil {
		t.Fatalf("login: %v", err)
	}
	return c
}

// expect runs a request and checks its status; the body is returned.
func expect(t *testing.T, c *httpclient.Client, method, path string, body any, status int) httpclient.Response {
	t.Helper()
	r, err := c.Do(ctxT(t), method, path, body)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if r.Status != status {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, r.Status, status, r.Body)
	}
	return r
}

// errorOf decodes Iggy's error JSON and checks the code name.
func errorOf(t *testing.T, r httpclient.Response, id uint32, code string) {
	t.Helper()
	var e struct {
		ID     uint32  `json:"id"`
		Code   string  `json:"code"`
		Reason string  `json:"reason"`
		Field  *string `json:"field"`
	}
	if err := json.Unmarshal(r.Body, &e); err != nil {
		t.Fatalf("error body %q: %v", r.Body, err)
	}
	if e.ID != id || e.Code != code || e.Reason == "" {
		t.Fatalf("error %+v, want id %d code %s", e, id, code)
	}
	if !strings.Contains(r.Header.Get("Content-Type"), "application/json") {
		t.Fatalf("error content type %q", r.Header.Get("Content-Type"))
	}
}

func decode[T any](t *testing.T, r httpclient.Response) T {
	t.Helper()
	var v T
	d := json.NewDecoder(bytes.NewReader(r.Body))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatalf("decoding %s: %v", r.Body, err)
	}
	return v
}

type obj = map[string]any

func TestRoutes(t *testing.T) {
	s := start(t, "IGGY_HTTP_MAX_REQUEST_SIZE=64 KiB")
	anon := httpclient.New(s.HTTPURL())

	// Health and ping need no token; ping carries no Iggy-View.
	r := expect(t, anon, "GET", "/ping", nil, 200)
	if string(r.Body) != "pong" || r.Header.Get("Iggy-View") != "" {
		t.Fatalf("ping: %q view %q", r.Body, r.Header.Get("Iggy-View"))
	}
	expect(t, anon, "GET", "/livez", nil, 200)
	if v := decode[obj](t, expect(t, anon, "GET", "/readyz", nil, 200)); v["status"] != "ready" {
		t.Fatalf("readyz %v", v)
	}

	// Login: wrong password is Iggy's 400 invalid_credentials; no token 401.
	errorOf(t, expect(t, anon, "POST", "/users/login", obj{"username": "iggy", "password": "nope"}, 400), 42, "invalid_credentials")
	errorOf(t, expect(t, anon, "GET", "/streams", nil, 401), 77, "access_token_missing")
	forged := httpclient.New(s.HTTPURL())
	forged.Token = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIwIn0.c2lnbmF0dXJl"
	errorOf(t, expect(t, forged, "GET", "/streams", nil, 401), 40, "unauthenticated")

	c := root(t, s)
	// Streams.
	st := decode[obj](t, expect(t, c, "POST", "/streams", obj{"name": "orders"}, 200))
	if st["name"] != "orders" || st["size"] != "0 B" || st["topics_count"] != json.Number("0") {
		t.Fatalf("created stream %v", st)
	}
	r = expect(t, c, "GET", "/streams", nil, 200)
	if r.Header.Get("Iggy-View") == "" {
		t.Fatal("no Iggy-View header on a success")
	}
	if l := decode[[]obj](t, r); len(l) != 1 || l[0]["name"] != "orders" {
		t.Fatalf("streams %v", l)
	}
	errorOf(t, expect(t, c, "POST", "/streams", obj{"name": "orders"}, 400), 1012, "stream_name_already_exists")
	expect(t, c, "PUT", "/streams/orders", obj{"name": "orders2"}, 204)
	if d := decode[obj](t, expect(t, c, "GET", "/streams/0", nil, 200)); d["name"] != "orders2" {
		t.Fatalf("stream after update %v", d)
	}
	errorOf(t, expect(t, c, "GET", "/streams/missing", nil, 404), 404, "not_found")

	// Topics, partitions, segments.
	tp := decode[obj](t, expect(t, c, "POST", "/streams/orders2/topics",
		obj{"name": "events", "partitions_count": 2, "compression_algorithm": "none", "message_expiry": 0, "max_topic_size": 0}, 200))
	if tp["partitions_count"] != json.Number("2") || len(tp["partitions"].([]any)) != 2 || tp["compression_algorithm"] != "none" {
		t.Fatalf("created topic %v", tp)
	}
	opts := tp["options"].(map[string]any)
	if o := opts["segment_size"].(map[string]any); o["explicit"] != false || o["value"] != "1073741824" {
		t.Fatalf("topic options %v", opts)
	}
	expect(t, c, "PUT", "/streams/orders2/topics/events", obj{"name": "events", "message_expiry": 3600000000}, 204)
	if d := decode[obj](t, expect(t, c, "GET", "/streams/orders2/topics/events", nil, 200)); d["message_expiry"] != json.Number("3600000000") {
		t.Fatalf("topic after update %v", d)
	}
	if l := decode[[]obj](t, expect(t, c, "GET", "/streams/orders2/topics", nil, 200)); len(l) != 1 {
		t.Fatalf("topics %v", l)
	}
	expect(t, c, "POST", "/streams/orders2/topics/events/partitions", obj{"partitions_count": 2}, 200)
	if d := decode[obj](t, expect(t, c, "GET", "/streams/orders2/topics/events", nil, 200)); d["partitions_count"] != json.Number("4") {
		t.Fatalf("after create partitions %v", d)
	}
	expect(t, c, "DELETE", "/streams/orders2/topics/events/partitions?partitions_count=2", nil, 204)
	errorOf(t, expect(t, c, "POST", "/streams/orders2/topics/events/partitions", obj{"partitions_count": 0}, 400), 2015, "too_many_partitions")
	expect(t, c, "DELETE", "/streams/orders2/topics/events/partitions/0?segments_count=1", nil, 204)
	expect(t, c, "DELETE", "/streams/orders2/topics/events/partitions?", nil, 400)

	// Messages: send by partition id, key and balanced; poll with every
	// strategy; auto-commit moves the stored offset.
	for i := 0; i < 3; i++ {
		conf, dur, err := c.Send(ctxT(t), "orders2", "events", httpclient.PartitionID(1),
			[]httpclient.Message{{Payload: []byte("m" + strconv.Itoa(i))}})
		if err != nil || len(conf) != 1 || conf[0].PartitionID != 1 || conf[0].BaseOffset != uint64(i) || dur != "replicated-memory" {
			t.Fatalf("send %d: %v %+v %q", i, err, conf, dur)
		}
	}
	if conf, _, err := c.Send(ctxT(t), "orders2", "events", httpclient.MessagesKey([]byte("k")), []httpclient.Message{{Payload: []byte("k")}}); err != nil ||
		conf[0].PartitionID != wire.PartitionForKey([]byte("k"), 2) {
		t.Fatalf("keyed send: %v %+v", err, conf)
	}
	if _, _, err := c.Send(ctxT(t), "orders2", "events", httpclient.Balanced(), []httpclient.Message{{Payload: []byte("b")}}); err != nil {
		t.Fatalf("balanced send: %v", err)
	}
	poll := func(kind string, value uint64, count uint32, auto bool) httpclient.Polled {
		p, err := c.Poll(ctxT(t), "orders2", "events", "7", 1, kind, value, count, auto)
		if err != nil {
			t.Fatalf("poll %s: %v", kind, err)
		}
		return p
	}
	all := poll("first", 0, 10, false)
	if all.PartitionID != 1 || len(all.Messages) < 3 || string(all.Messages[0].Payload) != "m0" || all.Count != uint32(len(all.Messages)) {
		t.Fatalf("poll first %+v", all)
	}
	if p := poll("offset", 1, 1, false); len(p.Messages) != 1 || string(p.Messages[0].Payload) != "m1" {
		t.Fatalf("poll offset %+v", p)
	}
	if p := poll("last", 0, 1, false); len(p.Messages) != 1 || p.Messages[0].Header.Offset != all.CurrentOffset {
		t.Fatalf("poll last %+v", p)
	}
	if p := poll("timestamp", all.Messages[1].Header.Timestamp, 10, false); len(p.Messages) == 0 {
		t.Fatalf("poll timestamp %+v", p)
	}
	if p := poll("next", 0, 2, true); len(p.Messages) != 2 || string(p.Messages[1].Payload) != "m1" {
		t.Fatalf("poll next %+v", p)
	}
	if p := poll("next", 0, 1, true); len(p.Messages) != 1 || string(p.Messages[0].Payload) != "m2" {
		t.Fatalf("poll next after auto-commit %+v", p)
	}
	expect(t, c, "GET", "/streams/orders2/topics/events/messages?kind=sideways", nil, 400)

	// Consumer offsets.
	off := decode[obj](t, expect(t, c, "GET", "/streams/orders2/topics/events/consumer-offsets?consumer_id=7&partition_id=1", nil, 200))
	if off["stored_offset"] != json.Number("2") || off["partition_id"] != json.Number("1") {
		t.Fatalf("offset after auto-commit %v", off)
	}
	expect(t, c, "PUT", "/streams/orders2/topics/events/consumer-offsets", obj{"consumer_id": "app", "partition_id": 1, "offset": 1}, 204)
	off = decode[obj](t, expect(t, c, "GET", "/streams/orders2/topics/events/consumer-offsets?consumer_id=app&partition_id=1", nil, 200))
	if off["stored_offset"] != json.Number("1") {
		t.Fatalf("stored offset %v", off)
	}
	expect(t, c, "DELETE", "/streams/orders2/topics/events/consumer-offsets/app?partition_id=1", nil, 204)
	errorOf(t, expect(t, c, "GET", "/streams/orders2/topics/events/consumer-offsets?consumer_id=app&partition_id=1", nil, 404), 404, "not_found")

	// Consumer groups.
	g := decode[obj](t, expect(t, c, "POST", "/streams/orders2/topics/events/consumer-groups", obj{"name": "workers"}, 200))
	if g["name"] != "workers" || g["members_count"] != json.Number("0") {
		t.Fatalf("group %v", g)
	}
	if l := decode[[]obj](t, expect(t, c, "GET", "/streams/orders2/topics/events/consumer-groups", nil, 200)); len(l) != 1 {
		t.Fatalf("groups %v", l)
	}
	expect(t, c, "GET", "/streams/orders2/topics/events/consumer-groups/workers", nil, 200)
	expect(t, c, "DELETE", "/streams/orders2/topics/events/consumer-groups/workers", nil, 204)
	errorOf(t, expect(t, c, "GET", "/streams/orders2/topics/events/consumer-groups/workers", nil, 404), 404, "not_found")

	// Purges and deletes.
	expect(t, c, "DELETE", "/streams/orders2/topics/events/purge", nil, 204)
	if p := poll("first", 0, 10, false); len(p.Messages) != 0 {
		t.Fatalf("poll after purge %+v", p)
	}
	expect(t, c, "DELETE", "/streams/orders2/purge", nil, 204)
	expect(t, c, "DELETE", "/streams/orders2/topics/events", nil, 204)
	errorOf(t, expect(t, c, "DELETE", "/streams/orders2/topics/events", nil, 404), 2010, "topic_id_not_found")
	expect(t, c, "DELETE", "/streams/orders2", nil, 204)

	// Users and their permissions.
	u := decode[obj](t, expect(t, c, "POST", "/users", obj{"username": "alice", "password": "secret1", "status": "active",
		"permissions": obj{"global": obj{"read_streams": true}, "streams": nil}}, 200))
	if u["username"] != "alice" || u["status"] != "active" || u["permissions"].(map[string]any)["global"].(map[string]any)["read_streams"] != true {
		t.Fatalf("created user %v", u)
	}
	if me := decode[obj](t, expect(t, c, "GET", "/users/me", nil, 200)); me["username"] != "iggy" {
		t.Fatalf("me %v", me)
	}
	if l := decode[[]obj](t, expect(t, c, "GET", "/users", nil, 200)); len(l) != 2 {
		t.Fatalf("users %v", l)
	}
	expect(t, c, "PUT", "/users/alice", obj{"username": "alice2", "status": "active"}, 204)
	expect(t, c, "PUT", "/users/alice2/password", obj{"current_password": "secret1", "new_password": "secret2"}, 204)
	expect(t, c, "PUT", "/users/alice2/permissions", obj{"permissions": obj{"global": obj{"read_streams": true, "manage_streams": true},
		"streams": obj{"5": obj{"read_stream": true, "topics": obj{"2": obj{"read_topic": true}}}}}}, 204)
	d := decode[obj](t, expect(t, c, "GET", "/users/alice2", nil, 200))
	perms := d["permissions"].(map[string]any)
	if perms["global"].(map[string]any)["manage_streams"] != true || perms["streams"].(map[string]any)["5"].(map[string]any)["topics"].(map[string]any)["2"] == nil {
		t.Fatalf("permissions %v", perms)
	}
	alice := httpclient.New(s.HTTPURL())
	if _, err := alice.Login(ctxT(t), "alice2", "secret2"); err != nil {
		t.Fatalf("alice login: %v", err)
	}
	expect(t, alice, "GET", "/streams", nil, 200)
	errorOf(t, expect(t, alice, "GET", "/users", nil, 403), 41, "unauthorized")
	expect(t, c, "PUT", "/users/alice2/permissions", obj{"permissions": nil}, 204)
	errorOf(t, expect(t, alice, "GET", "/streams", nil, 403), 41, "unauthorized")
	errorOf(t, expect(t, alice, "POST", "/streams", obj{"name": "nope"}, 403), 41, "unauthorized")
	expect(t, c, "DELETE", "/users/alice2", nil, 204)
	errorOf(t, expect(t, alice, "GET", "/streams", nil, 401), 40, "unauthenticated")

	// Personal access tokens; a PAT works as bearer and for login.
	pat := decode[obj](t, expect(t, c, "POST", "/personal-access-tokens", obj{"name": "ci-token", "expiry": 0}, 200))
	raw, _ := pat["token"].(string)
	if raw == "" {
		t.Fatalf("pat %v", pat)
	}
	if l := decode[[]obj](t, expect(t, c, "GET", "/personal-access-tokens", nil, 200)); len(l) != 1 || l[0]["name"] != "ci-token" || l[0]["expiry_at"] != nil {
		t.Fatalf("pats %v", l)
	}
	bearer := httpclient.New(s.HTTPURL())
	bearer.Token = raw
	expect(t, bearer, "GET", "/stats", nil, 200)
	viaPAT := httpclient.New(s.HTTPURL())
	if id, err := viaPAT.LoginWithToken(ctxT(t), raw); err != nil || id.UserID != 0 {
		t.Fatalf("pat login: %v %+v", err, id)
	}
	errorOf(t, expect(t, anon, "POST", "/personal-access-tokens/login", obj{"token": "nope"}, 401), 53, "invalid_personal_access_token")
	expect(t, c, "DELETE", "/personal-access-tokens/ci-token", nil, 204)
	errorOf(t, expect(t, bearer, "GET", "/stats", nil, 401), 40, "unauthenticated")

	// System routes.
	stats := decode[obj](t, expect(t, c, "GET", "/stats", nil, 200))
	if _, ok := stats["memory_usage"].(string); !ok || stats["iggy_server_version"] == "" {
		t.Fatalf("stats %v", stats)
	}
	if l := decode[[]obj](t, expect(t, c, "GET", "/options/topic", nil, 200)); len(l) == 0 || l[0]["key"] == nil {
		t.Fatalf("options %v", l)
	}
	errorOf(t, expect(t, c, "GET", "/options/nothing", nil, 400), 3, "invalid_command")
	md := decode[obj](t, expect(t, c, "GET", "/cluster/metadata", nil, 200))
	node := md["nodes"].([]any)[0].(map[string]any)
	_, hport, _ := strings.Cut(s.HTTPAddr, ":")
	if node["role"] != "leader" || node["status"] != "healthy" || node["endpoints"].(map[string]any)["http"] != json.Number(hport) {
		t.Fatalf("cluster metadata %v (http %s)", md, hport)
	}
	tcp := s.Root(t)
	me, err := tcp.GetMe(ctxT(t))
	if err != nil {
		t.Fatal(err)
	}
	cl := decode[[]obj](t, expect(t, c, "GET", "/clients", nil, 200))
	if len(cl) != 1 || cl[0]["transport"] != "TCP" {
		t.Fatalf("clients %v", cl)
	}
	if one := decode[obj](t, expect(t, c, "GET", "/clients/"+strconv.Itoa(int(me.ClientID)), nil, 200)); one["client_id"] != json.Number(strconv.Itoa(int(me.ClientID))) {
		t.Fatalf("client %v", one)
	}
	expect(t, c, "GET", "/clients/999999", nil, 404)
	r = expect(t, c, "POST", "/snapshot", obj{"compression": "Deflated", "snapshot_types": []string{"Test", "ServerConfig"}}, 200)
	if zr, err := zip.NewReader(bytes.NewReader(r.Body), int64(len(r.Body))); err != nil || len(zr.File) != 2 ||
		r.Header.Get("Content-Type") != "application/zip" || !strings.HasPrefix(r.Header.Get("Content-Disposition"), "attachment") {
		t.Fatalf("snapshot: %v, headers %v", err, r.Header)
	}

	// Bad input: Iggy's statuses with the error JSON, the server unharmed.
	bad := func(method, path, ctype string, body []byte, status int) httpclient.Response {
		t.Helper()
		req, _ := http.NewRequestWithContext(ctxT(t), method, s.HTTPURL()+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+c.Token)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var buf bytes.Buffer
		_, _ = buf.ReadFrom(resp.Body)
		if resp.StatusCode != status {
			t.Fatalf("%s %s: %d, want %d: %s", method, path, resp.StatusCode, status, buf.Bytes())
		}
		return httpclient.Response{Status: resp.StatusCode, Header: resp.Header, Body: buf.Bytes()}
	}
	errorOf(t, bad("POST", "/streams", "application/json", []byte(`{"name":`), 400), 400, "invalid_json")
	errorOf(t, bad("POST", "/streams", "application/json", []byte(`{"name": 42}`), 422), 422, "invalid_json")
	errorOf(t, bad("POST", "/streams", "text/plain", []byte(`{"name":"x"}`), 415), 415, "unsupported_media_type")
	big := bytes.Repeat([]byte("a"), 100<<10)
	r = bad("POST", "/streams", "application/json", append(append([]byte(`{"name":"`), big...), '"', '}'), 413)
	errorOf(t, r, 413, "payload_too_large")
	errorOf(t, bad("GET", "/no/such/route", "", nil, 404), 404, "not_found")
	errorOf(t, bad("PATCH", "/streams", "", nil, 405), 405, "method_not_allowed")
	errorOf(t, expect(t, c, "GET", "/streams/"+strings.Repeat("x", 300), nil, 400), 6, "invalid_identifier")
	expect(t, c, "GET", "/streams", nil, 200)
}
