// Package webui_test drives the /ui console of real iggo-server processes
// (tests/harness) in Debian's chromium, headless, through chromedp: log in,
// create a stream and a topic, send a message from the form and find it in
// the browser, watch a consumer group's lag fall after a commit, watch a
// killed cluster node turn unhealthy, and see a user without permissions
// get only what the API gives it. The screenshots in docs/ui come from
// TestScreenshots (make ui-screenshots), the page-load figures from the
// benchmarks in bench_test.go.
//
// Chromium is required: a machine without it fails these tests (CI
// installs it). As root (CI) chromium runs with --no-sandbox.
package webui_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/client/httpclient"
	"github.com/iggo/iggo/tests/harness"
)

// chromiumPath finds the browser; its absence fails the test.
func chromiumPath(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("chromium is not installed: these tests need Debian's chromium (apt-get install -y chromium; .ci/run installs it)")
	return ""
}

// browser is one headless chromium and a tab.
type browser struct {
	t   testing.TB
	ctx context.Context
}

// newBrowser starts chromium (its own profile directory, a 1400x900
// window) and stops it when the test ends: the allocator's cancel kills
// the process it started, and the cleanup checks it is gone.
func newBrowser(t testing.TB) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Headless,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 900),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		// A headless tab counts as hidden: keep its timers and animation
		// frames at full rate (the page-load figures are taken at frames).
		chromedp.Flag("disable-background-timer-throttling", true),
		chromedp.Flag("disable-backgrounding-occluded-windows", true),
		chromedp.Flag("disable-renderer-backgrounding", true),
	}
	if os.Geteuid() == 0 {
		// Chromium refuses to start as root with its sandbox on.
		opts = append(opts, chromedp.NoSandbox)
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx, chromedp.WithErrorf(t.Logf))
	if err := chromedp.Do(ctx); err != nil {
		cancelTab()
		cancelAlloc()
		t.Fatalf("starting chromium: %v", err)
	}
	proc := chromedp.FromContext(ctx).Browser.Process()
	t.Cleanup(func() {
		cancelTab()
		cancelAlloc()
		if proc == nil {
			return
		}
		// The allocator waits for the process; make sure it is gone.
		if err := proc.Signal(syscall.Signal(0)); err == nil {
			_ = proc.Kill()
		}
	})
	return &browser{t: t, ctx: ctx}
}

// Action is a browser step that returns nothing.
type Action = chromedp.Action[chromedp.Void]

// run runs actions with a generous deadline (the machine is shared).
func (b *browser) run(actions ...Action) {
	b.t.Helper()
	if err := b.try(90*time.Second, actions...); err != nil {
		b.t.Fatalf("browser: %v\npage text:\n%s", err, b.pageText())
	}
}

func (b *browser) try(d time.Duration, actions ...Action) error {
	ctx, cancel := context.WithTimeout(b.ctx, d)
	defer cancel()
	return chromedp.Do(ctx, actions...)
}

// pageText is the visible text of the page (for failure messages).
func (b *browser) pageText() string {
	ctx, cancel := context.WithTimeout(b.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`document.body ? document.body.innerText : ''`))
	if err != nil {
		return "(cannot read the page: " + err.Error() + ")"
	}
	if len(s) > 4000 {
		s = s[:4000] + "…"
	}
	return s
}

// eval evaluates a JavaScript expression (promises awaited).
func eval[T any](b *browser, expr string) T {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, 90*time.Second)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr, chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("browser: evaluating %s: %v\npage text:\n%s", expr, err, b.pageText())
	}
	return v
}

// waitJS waits until expr is true. It asks every 100 ms (a page that
// navigates in between is asked again), for up to 90 s.
func (b *browser) waitJS(expr string) {
	b.t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	var last error
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(b.ctx, 10*time.Second)
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool]("!!("+expr+")"))
		cancel()
		if err == nil && ok {
			return
		}
		last = err
		if b.ctx.Err() != nil {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.t.Fatalf("browser: waiting for %s (last error %v)\npage text:\n%s", expr, last, b.pageText())
}

// text reads the inner text of the first element matching a CSS selector.
func (b *browser) text(sel string) string {
	b.t.Helper()
	return eval[string](b, fmt.Sprintf(`(() => { const e = document.querySelector(%q); return e ? e.innerText : '(no element ' + %q + ')'; })()`, sel, sel))
}

// click clicks the first element matching a CSS selector.
func click(sel string) Action { return chromedp.Click(chromedp.CSS(sel), chromedp.NodeVisible) }

// keys types into the first element matching a CSS selector.
func keys(sel, v string) Action { return chromedp.SendKeys(chromedp.CSS(sel), v, chromedp.NodeVisible) }

// visible waits for an element matching a CSS selector to be visible.
func visible(sel string) Action { return chromedp.WaitVisible(chromedp.CSS(sel)) }

// submit submits a form (its submit event, as a click on its button).
func submit(sel string) Action {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`document.querySelector(%q).requestSubmit()`, sel))
}

// login logs in through the form and waits for the page it leads to.
func (b *browser) login(base, user, password string) {
	b.t.Helper()
	b.run(
		chromedp.Navigate(base+"/ui/"),
		visible(`#login-form`),
		keys(`#login-username`, user),
		keys(`#login-password`, password),
		click(`#login-submit`),
	)
	b.waitJS(`document.body.dataset.page === 'cluster' && document.body.dataset.ready === 'true'`)
}

// flash is the text of the page's message line.
func (b *browser) flash() string {
	return eval[string](b, `document.querySelector('#flash').innerText`)
}

// waitFlash waits for a message containing want.
func (b *browser) waitFlash(want string) {
	b.t.Helper()
	b.waitJS(fmt.Sprintf(`document.querySelector('#flash').innerText.includes(%q)`, want))
}

// confirm clicks the console's confirmation dialog's button.
func (b *browser) confirm() {
	b.t.Helper()
	b.run(visible(`#modal-ok`), click(`#modal-ok`))
}

// setValue sets a form field's value (inputs and selects) and fires
// change.
func setValue(sel, v string) Action {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(() => { const e = document.querySelector(%q); e.value = %q; e.dispatchEvent(new Event('change', {bubbles: true})); return true; })()`, sel, v))
}

// ---------------------------------------------------------------------------
// Servers.

// startUI runs a single node with the console on and root iggy/iggy.
func startUI(t testing.TB, env ...string) *harness.Server {
	t.Helper()
	return harness.Start(t, harness.Options{DefaultRoot: true, Env: append([]string{"IGGY_HTTP_WEB_UI=true"}, env...)})
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// rootHTTP is an HTTP API client logged in as root.
func rootHTTP(t testing.TB, s *harness.Server) *httpclient.Client {
	t.Helper()
	c := httpclient.New(s.HTTPURL())
	if _, err := c.Login(ctxT(t), "iggy", "iggy"); err != nil {
		t.Fatalf("login: %v", err)
	}
	return c
}

// tcpClient is a binary-protocol client of s logged in as user.
func tcpClient(t testing.TB, addr, user, password string) *client.Client {
	t.Helper()
	cfg := client.DefaultConfig()
	cfg.Addresses = []string{addr}
	cfg.Username, cfg.Password = user, password
	cfg.HeartbeatInterval = 0
	cfg.Reconnect.Enabled = false
	c, err := client.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Connect(ctxT(t)); err != nil {
		t.Fatalf("connect %s: %v", addr, err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// call runs an API call and fails the test on an error.
func call(t testing.TB, c *httpclient.Client, method, path string, body, out any) {
	t.Helper()
	if err := c.Call(ctxT(t), method, path, body, out); err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
}

// apiError is the error an API call answers (its reason must show in the
// console).
func apiError(t testing.TB, c *httpclient.Client, method, path string, body any) *httpclient.Error {
	t.Helper()
	err := c.Call(ctxT(t), method, path, body, nil)
	var e *httpclient.Error
	if !errors.As(err, &e) {
		t.Fatalf("%s %s: want an API error, got %v", method, path, err)
	}
	return e
}

func contains(s string, subs ...string) bool {
	for _, x := range subs {
		if !strings.Contains(s, x) {
			return false
		}
	}
	return true
}
