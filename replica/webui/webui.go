package webui

import (
	"bytes"
	"crypto/sha256"
	"embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	"go.uber.org/zap"

	"github.com/iggo/iggo/internal/version"
	"github.com/iggo/iggo/wire"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Prefix is where the console is served.
const Prefix = "/ui"

// Options connect the console to the HTTP API that serves it.
type Options struct {
	// Authenticate wraps a handler so that it runs only for a request with
	// a valid bearer credential (the API's own check; refusals are the
	// API's error JSON).
	Authenticate func(http.Handler) http.Handler
	// Run runs req on the requesting credential's session, through the
	// node's command path (permissions included), and hands the reply
	// payload to fn. When the request fails it has written the API's error
	// JSON and returns false.
	Run func(w http.ResponseWriter, r *http.Request, req wire.Request, fn func(payload []byte) error) bool
	// Gatherer is the node's Prometheus registry, nil when
	// http.metrics.enabled is off (the metrics summary then answers 404
	// and the charts say why).
	Gatherer prometheus.Gatherer
	// MetricsEndpoint is http.metrics.endpoint ("" when metrics are off).
	MetricsEndpoint string
	Logger          *zap.Logger
}

// Console is the web console's handler set.
type Console struct {
	opt    Options
	log    *zap.Logger
	pages  map[string]*template.Template
	assets map[string]asset
	// assetVersion is a digest of every asset, appended to their URLs so a
	// new build's pages never run an old script.
	assetVersion string
}

type asset struct {
	body  []byte
	ctype string
	etag  string
}

// bundle are the scripts served joined as bundleName, in this order (each
// later one uses what the earlier ones define).
var bundle = []string{"app.js", "charts.js", "pages.js"}

const bundleName = "console.js"

// pageNames are the templates under templates/, one per page; layout.html
// wraps each.
var pageNames = []string{"login", "cluster", "streams", "stream", "topic", "messages", "groups", "users", "charts"}

// New parses the templates and loads the assets; it fails only when the
// embedded files are broken (a build defect).
func New(opt Options) (*Console, error) {
	if opt.Authenticate == nil || opt.Run == nil {
		return nil, fmt.Errorf("webui: Authenticate and Run are required")
	}
	log := opt.Logger
	if log == nil {
		log = zap.NewNop()
	}
	c := &Console{opt: opt, log: log, pages: map[string]*template.Template{}, assets: map[string]asset{}}
	sum := sha256.New()
	err := fs.WalkDir(staticFS, "static", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := staticFS.ReadFile(p)
		if err != nil {
			return err
		}
		h := sha256.Sum256(b)
		sum.Write(h[:])
		name := strings.TrimPrefix(p, "static/")
		c.assets[name] = asset{body: b, ctype: contentType(name), etag: `"` + hex.EncodeToString(h[:8]) + `"`}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("webui: reading the embedded assets: %w", err)
	}
	// The pages load one script, the three sources joined in order (one
	// request, one parse), so a page starts its API calls sooner.
	var js []byte
	for _, name := range bundle {
		a, ok := c.assets[name]
		if !ok {
			return nil, fmt.Errorf("webui: asset %s missing from the build", name)
		}
		js = append(append(js, a.body...), '\n')
	}
	h := sha256.Sum256(js)
	c.assets[bundleName] = asset{body: js, ctype: contentType(bundleName), etag: `"` + hex.EncodeToString(h[:8]) + `"`}
	c.assetVersion = hex.EncodeToString(sum.Sum(nil)[:6])
	base, err := template.New("layout.html").Funcs(template.FuncMap{
		"asset": func(name string) string { return Prefix + "/static/" + name + "?v=" + c.assetVersion },
	}).ParseFS(templateFS, "templates/layout.html")
	if err != nil {
		return nil, fmt.Errorf("webui: parsing the layout: %w", err)
	}
	for _, name := range pageNames {
		t, err := template.Must(base.Clone()).ParseFS(templateFS, "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("webui: parsing page %s: %w", name, err)
		}
		c.pages[name] = t
	}
	return c, nil
}

func contentType(name string) string {
	switch path.Ext(name) {
	case ".js":
		return "text/javascript; charset=utf-8"
	case ".css":
		return "text/css; charset=utf-8"
	case ".svg":
		return "image/svg+xml"
	case ".png":
		return "image/png"
	}
	return "application/octet-stream"
}

// Wrap serves the console at /ui and /ui/... and hands every other path to
// api.
func (c *Console) Wrap(api http.Handler) http.Handler {
	summary := c.opt.Authenticate(http.HandlerFunc(c.summary))
	lag := c.opt.Authenticate(http.HandlerFunc(c.groupOffsets))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p := r.URL.Path
		if p != Prefix && !strings.HasPrefix(p, Prefix+"/") {
			api.ServeHTTP(w, r)
			return
		}
		rest := strings.TrimPrefix(p, Prefix)
		switch {
		case rest == "/api/summary":
			if !c.method(w, r) {
				return
			}
			summary.ServeHTTP(w, r)
		case rest == "/api/group-offsets":
			if !c.method(w, r) {
				return
			}
			lag.ServeHTTP(w, r)
		case strings.HasPrefix(rest, "/api/"):
			writeError(w, http.StatusNotFound, "not_found", "no such console route")
		case strings.HasPrefix(rest, "/static/"):
			c.static(w, r, strings.TrimPrefix(rest, "/static/"))
		default:
			c.page(w, r, rest)
		}
	})
}

func (c *Console) method(w http.ResponseWriter, r *http.Request) bool {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		writeError(w, http.StatusMethodNotAllowed, "method_not_allowed", "Method not allowed")
		return false
	}
	return true
}

// securityHeaders are on every console answer: scripts and styles only
// from the console itself (no inline code, no CDN), API calls to any node
// of the cluster (the cluster page asks each node for its own figures), no
// framing.
func securityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "+
		"connect-src 'self' http: https:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("X-Frame-Options", "DENY")
}

func (c *Console) static(w http.ResponseWriter, r *http.Request, name string) {
	if !c.method(w, r) {
		return
	}
	a, ok := c.assets[name]
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such console asset")
		return
	}
	h := w.Header()
	securityHeaders(h)
	h.Set("Content-Type", a.ctype)
	h.Set("ETag", a.etag)
	// The pages ask for assets with the build's digest (?v=): a new build
	// asks for new URLs, so those answers never change and are cached for
	// good. Any other URL of an asset is revalidated. (Only code is cached;
	// the data is fetched afresh by every page.)
	if r.URL.Query().Get("v") == c.assetVersion {
		h.Set("Cache-Control", "public, max-age=31536000, immutable")
	} else {
		h.Set("Cache-Control", "no-cache")
	}
	if match := r.Header.Get("If-None-Match"); match == a.etag {
		w.WriteHeader(http.StatusNotModified)
		return
	}
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(a.body)
}

// pageData is what a page template renders with.
type pageData struct {
	Page, Title string
	// Stream and Topic are the path's identifiers on the stream and topic
	// pages (as typed: numeric ids or names).
	Stream, Topic   string
	MetricsEndpoint string
	Metrics         bool
	Version         string
	Prefix          string
}

// route maps a console path (after /ui) to a page and its identifiers.
func route(rest string) (page string, stream, topic string, ok bool) {
	rest = strings.TrimSuffix(rest, "/")
	if rest == "" {
		return "cluster", "", "", true
	}
	parts := strings.Split(strings.TrimPrefix(rest, "/"), "/")
	for _, p := range parts {
		if p == "" {
			return "", "", "", false
		}
	}
	switch {
	case len(parts) == 1:
		switch parts[0] {
		case "login", "cluster", "streams", "messages", "groups", "users", "charts":
			return parts[0], "", "", true
		}
	case len(parts) == 2 && parts[0] == "streams":
		return "stream", parts[1], "", true
	case len(parts) == 4 && parts[0] == "streams" && parts[2] == "topics":
		return "topic", parts[1], parts[3], true
	}
	return "", "", "", false
}

var titles = map[string]string{"login": "Log in", "cluster": "Cluster", "streams": "Streams", "stream": "Stream",
	"topic": "Topic", "messages": "Messages", "groups": "Consumer groups", "users": "Users", "charts": "Charts"}

func (c *Console) page(w http.ResponseWriter, r *http.Request, rest string) {
	if !c.method(w, r) {
		return
	}
	if rest == "" {
		http.Redirect(w, r, Prefix+"/", http.StatusMovedPermanently)
		return
	}
	page, stream, topic, ok := route(rest)
	if !ok {
		writeError(w, http.StatusNotFound, "not_found", "no such console page")
		return
	}
	d := pageData{Page: page, Title: titles[page], Stream: stream, Topic: topic,
		Metrics: c.opt.Gatherer != nil, MetricsEndpoint: c.opt.MetricsEndpoint, Version: version.Version, Prefix: Prefix}
	var buf bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&buf, "layout.html", d); err != nil {
		c.log.Error("webui: rendering a page", zap.String("page", page), zap.Error(err))
		writeError(w, http.StatusInternalServerError, "error", "cannot render the page")
		return
	}
	h := w.Header()
	securityHeaders(h)
	h.Set("Content-Type", "text/html; charset=utf-8")
	// Pages hold no data (the browser fetches it with its token), but a
	// page must never be served from a cache after a new build.
	h.Set("Cache-Control", "no-store")
	if r.Method == http.MethodHead {
		return
	}
	_, _ = w.Write(buf.Bytes())
}

// writeError writes the API's error JSON for the console's own refusals
// (the HTTP status as id, as the API does for its HTTP-layer errors).
func writeError(w http.ResponseWriter, status int, code, reason string) {
	writeJSON(w, status, map[string]any{"id": status, "code": code, "reason": reason, "field": nil})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"id":500,"code":"error","reason":"cannot encode the answer","field":null}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
