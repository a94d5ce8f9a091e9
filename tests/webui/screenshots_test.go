package webui_test

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"image/png"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/iggo/iggo/tests/harness"
)

// screenshotDir is where TestScreenshots writes its PNGs: the README's
// docs/ui with `make ui-screenshots`, a temporary directory otherwise.
var screenshotDir = flag.String("ui.screenshots", "", "directory for the console screenshots (default: a temporary one)")

// chartSamples is how many one-second samples the charts page draws before
// its screenshot (make ui-screenshots waits for a fuller picture).
var chartSamples = flag.Int("ui.chart-samples", 8, "samples the charts draw before their screenshot")

// shot is one page of the console as the README shows it.
type shot struct {
	name, path string
	// ready is true once the page shows its data.
	ready string
	// before runs on the page before the screenshot (clicks, typing).
	before func(b *browser)
}

// TestScreenshots renders every page of the console against a 3-node
// cluster holding the demo data, with traffic running, and saves a PNG of
// each (then one of the cluster page with a node killed). Each image must
// decode as a PNG of the window's width.
func TestScreenshots(t *testing.T) {
	dir := *screenshotDir
	if dir == "" {
		dir = t.TempDir()
	}
	must(t, os.MkdirAll(dir, 0o755), "screenshot dir")
	c := harness.StartCluster(t, harness.ClusterOptions{Env: []string{"IGGY_HTTP_WEB_UI=true"}})
	root := c.Root(t, 0)
	d := populate(t, root)
	consume(t, c.Root(t, 0), d)
	ctx, cancel := context.WithCancel(context.Background())
	done := traffic(ctx, t, c.Root(t, 0), d, 3*time.Minute)
	t.Cleanup(func() { cancel(); <-done })

	base := "http://" + c.Nodes[0].HTTPAddr
	b := newBrowser(t)
	b.login(base, "iggy", "iggy")
	ev := fmt.Sprintf("/ui/streams/%d/topics/%d", d.Orders, d.Events)
	shots := []shot{
		{name: "cluster", path: "/ui/", ready: `document.querySelectorAll('#nodes tbody tr[data-node]').length === 3 &&
			[...document.querySelectorAll('#nodes tbody tr[data-node] td:nth-child(9)')].every(td => /\d/.test(td.innerText)) &&
			document.querySelector('#stats .cards') !== null`},
		{name: "streams", path: "/ui/streams", ready: `document.querySelectorAll('#streams tbody tr[data-stream]').length === 2`},
		{name: "stream", path: fmt.Sprintf("/ui/streams/%d", d.Orders), ready: `document.querySelectorAll('#topics tbody tr[data-topic]').length === 2`},
		{name: "topic", path: ev, ready: `document.querySelectorAll('#partitions tbody tr[data-partition]').length === 3`},
		{name: "messages", path: fmt.Sprintf("/ui/messages?stream=orders&topic=events&partition=%d&kind=offset&value=0&count=10&format=json", d.Partitions[0]),
			ready: `document.querySelectorAll('#m-table tbody tr[data-offset]').length === 10`},
		{name: "groups", path: fmt.Sprintf("/ui/groups?stream=orders&topic=events&group=%d", d.Group),
			ready: `document.querySelectorAll('#lag tbody tr[data-partition]').length === 3 && document.querySelectorAll('#members tbody tr[data-member]').length === 1`},
		{name: "users", path: "/ui/users", ready: `document.querySelectorAll('#users tbody tr[data-user]').length === 2 && document.querySelectorAll('#pats tbody tr').length === 1`,
			before: func(b *browser) {
				b.run(click(`#users tbody tr[data-user="1"] button`))
				b.waitJS(`!document.querySelector('#user-card').hidden && document.querySelector('#perm-streams').value.includes('read_stream')`)
			}},
		{name: "charts", path: "/ui/charts", ready: fmt.Sprintf(`document.querySelectorAll('#chart-messages path.series').length === 2 &&
			document.querySelectorAll('#chart-latency path.series').length === 3 && document.querySelectorAll('#chart-messages path.series')[0].getAttribute('d').split('L').length > %d`, *chartSamples)},
	}
	for _, s := range shots {
		b.run(chromedp.Navigate(base + s.path))
		b.waitJS(s.ready)
		if s.before != nil {
			s.before(b)
		}
		save(t, b, filepath.Join(dir, s.name+".png"))
	}

	// A node killed: gossip marks it, the page follows within its refresh.
	c.Kill(2)
	b.run(chromedp.Navigate(base + "/ui/"))
	b.waitJS(`(() => { const r = document.querySelector('#nodes tbody tr[data-node="node-2"]'); return r && r.dataset.status !== 'healthy'; })()`)
	save(t, b, filepath.Join(dir, "cluster-node-down.png"))
}

// save writes a full-page PNG and checks it decodes at the window's width.
func save(t *testing.T, b *browser, path string) {
	t.Helper()
	// Let the last paint (charts, fonts) settle.
	b.run(chromedp.Sleep(300 * time.Millisecond))
	ctx, cancel := context.WithTimeout(b.ctx, 60*time.Second)
	defer cancel()
	img, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	must(t, err, "screenshot "+path)
	cfg, err := png.DecodeConfig(bytes.NewReader(img))
	if err != nil {
		t.Fatalf("%s: not a PNG: %v", path, err)
	}
	if cfg.Width != 1400 || cfg.Height < 300 {
		t.Fatalf("%s: %dx%d, want 1400 wide and at least 300 high", path, cfg.Width, cfg.Height)
	}
	must(t, os.WriteFile(path, img, 0o644), "write "+path)
	t.Logf("%s: %dx%d, %d bytes", path, cfg.Width, cfg.Height, len(img))
}
