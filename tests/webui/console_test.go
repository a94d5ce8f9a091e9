package webui_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/iggo/iggo/tests/harness"
)

// TestConsoleStreamsTopicsMessages logs in through the form, creates a
// stream and a topic with the forms, sends a message from the message
// form, finds it again by offset in a fresh page (text, JSON and hex),
// sees the API's refusal of a duplicate stream name, and deletes the topic
// and the stream through the confirmation dialog (cancel keeps them).
func TestConsoleStreamsTopicsMessages(t *testing.T) {
	s := startUI(t)
	api := rootHTTP(t, s)
	base := s.HTTPURL()
	b := newBrowser(t)

	// Not logged in: every page leads to the login form.
	b.run(chromedp.Navigate(base + "/ui/streams"))
	b.waitJS(`location.pathname === '/ui/login' && new URLSearchParams(location.search).get('next') === '/ui/streams'`)
	b.login(base, "iggy", "iggy")
	b.waitJS(`document.querySelector('#whoami').innerText === 'iggy'`)

	// A stream from the form.
	b.run(chromedp.Navigate(base+"/ui/streams"), visible(`#stream-name`),
		keys(`#stream-name`, "orders"), submit(`#create-stream`))
	b.waitFlash("Stream orders created")
	b.waitJS(`[...document.querySelectorAll('#streams tbody a')].some(a => a.innerText === 'orders')`)
	var streams []struct {
		ID   uint32 `json:"id"`
		Name string `json:"name"`
	}
	call(t, api, http.MethodGet, "/streams", nil, &streams)
	if len(streams) != 1 || streams[0].Name != "orders" {
		t.Fatalf("GET /streams after the form: %+v", streams)
	}
	sid := streams[0].ID

	// A duplicate name: the console shows the API's own refusal.
	want := apiError(t, api, http.MethodPost, "/streams", map[string]any{"name": "orders"})
	b.run(keys(`#stream-name`, "orders"), submit(`#create-stream`))
	b.waitFlash(want.Reason)
	if f := b.flash(); !strings.Contains(f, want.Code) {
		t.Fatalf("flash %q lacks the error code %s", f, want.Code)
	}

	// A topic from the stream page's form: 3 partitions, persisted.
	b.run(chromedp.Navigate(fmt.Sprintf("%s/ui/streams/%d", base, sid)), visible(`#topic-name`))
	b.waitJS(`document.querySelector('#stream-title').innerText.startsWith('orders')`)
	b.run(keys(`#topic-name`, "events"), setValue(`#topic-partitions`, "3"),
		setValue(`#topic-durability`, "persisted"), submit(`#create-topic`))
	b.waitFlash("Topic events created")
	b.waitJS(`document.querySelectorAll('#topics tbody tr[data-topic]').length === 1`)
	row := b.text(`#topics tbody tr[data-topic]`)
	if !contains(row, "events", "persisted", "never", "unlimited") {
		t.Fatalf("topic row %q: want name, persisted durability, no expiry, no size cap", row)
	}
	var topic struct {
		ID         uint32 `json:"id"`
		Partitions []struct {
			ID uint32 `json:"id"`
		} `json:"partitions"`
		Options map[string]struct {
			Value string `json:"value"`
		} `json:"options"`
	}
	call(t, api, http.MethodGet, fmt.Sprintf("/streams/%d/topics/events", sid), nil, &topic)
	if len(topic.Partitions) != 3 || topic.Options["durability"].Value != "persisted" {
		t.Fatalf("topic after the form: %+v", topic)
	}
	first := topic.Partitions[0].ID

	// The topic page lists its partitions.
	b.run(chromedp.Navigate(fmt.Sprintf("%s/ui/streams/%d/topics/%d", base, sid, topic.ID)))
	b.waitJS(`document.querySelectorAll('#partitions tbody tr[data-partition]').length === 3`)
	opts := b.text(`#options tbody`)
	if !contains(opts, "durability", "persisted", "consumer_offset_durability", "message_expiry") {
		t.Fatalf("options table %q", opts)
	}

	// Send a message from the form, with a header.
	b.run(chromedp.Navigate(fmt.Sprintf("%s/ui/messages?stream=orders&topic=events&partition=%d", base, first)),
		visible(`#s-payload`))
	b.waitJS(`document.querySelector('#m-info').innerText.includes('Current offset')`)
	b.run(keys(`#s-payload`, `{"order":42,"item":"console"}`),
		keys(`#s-headers`, "source=webui"),
		click(`#s-send`))
	b.waitFlash(fmt.Sprintf("Sent: partition %d, offset 0", first))
	b.waitJS(`document.querySelectorAll('#m-table tbody tr[data-offset]').length === 1`)

	// The API holds it.
	polled, err := api.Poll(ctxT(t), "orders", "events", "1", first, "offset", 0, 10, false)
	if err != nil || len(polled.Messages) != 1 || string(polled.Messages[0].Payload) != `{"order":42,"item":"console"}` {
		t.Fatalf("poll after the form: %+v, %v", polled, err)
	}

	// Found in a fresh page by offset: text, pretty JSON and hex.
	b.run(chromedp.Navigate(fmt.Sprintf("%s/ui/messages?stream=orders&topic=events&partition=%d&kind=offset&value=0&count=10", base, first)))
	b.waitJS(`document.querySelectorAll('#m-table tbody tr[data-offset="0"]').length === 1`)
	msg := b.text(`#m-table tbody tr[data-offset="0"]`)
	if !contains(msg, `{"order":42,"item":"console"}`, "source", "webui") {
		t.Fatalf("message row %q", msg)
	}
	b.run(setValue(`#m-format`, "json"))
	b.waitJS(`document.querySelector('#m-table tbody pre.payload').innerText.includes('\n  "order": 42')`)
	b.run(setValue(`#m-format`, "hex"))
	b.waitJS(`document.querySelector('#m-table tbody pre.payload').innerText.startsWith('7b 22 6f 72')`)

	// Delete the topic: cancel keeps it, confirm deletes it.
	b.run(chromedp.Navigate(fmt.Sprintf("%s/ui/streams/%d", base, sid)))
	b.waitJS(`document.querySelectorAll('#topics tbody tr[data-topic]').length === 1`)
	b.run(click(`#topics tbody tr[data-topic] button.danger`),
		visible(`#modal-cancel`), click(`#modal-cancel`))
	call(t, api, http.MethodGet, fmt.Sprintf("/streams/%d/topics/events", sid), nil, &topic)
	b.run(click(`#topics tbody tr[data-topic] button.danger`))
	b.confirm()
	b.waitFlash("Topic events deleted")
	b.waitJS(`document.querySelector('#topics tbody').innerText.includes('No topics yet')`)
	if e := apiError(t, api, http.MethodGet, fmt.Sprintf("/streams/%d/topics/events", sid), nil); e.Status != http.StatusNotFound {
		t.Fatalf("topic after delete: %+v", e)
	}

	// And the stream, from its own page.
	b.run(click(`#delete-stream`))
	b.confirm()
	b.waitJS(`location.pathname === '/ui/streams'`)
	b.waitJS(`document.querySelector('#streams tbody').innerText.includes('No streams yet')`)

	// Logging out revokes the token: the next page asks for a login.
	b.run(click(`#logout`))
	b.waitJS(`location.pathname === '/ui/login'`)
	b.run(chromedp.Navigate(base + "/ui/streams"))
	b.waitJS(`location.pathname === '/ui/login'`)
}

// TestConsoleOffByDefault: without http.web_ui the API answers /ui as an
// unknown route, and the API itself is unchanged.
func TestConsoleOffByDefault(t *testing.T) {
	s := harness.Start(t, harness.Options{DefaultRoot: true})
	for _, p := range []string{"/ui", "/ui/", "/ui/static/app.js", "/ui/api/summary"} {
		res, err := http.Get(s.HTTPURL() + p)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Fatalf("GET %s with web_ui off: %d, want 404", p, res.StatusCode)
		}
	}
	var streams []any
	call(t, rootHTTP(t, s), http.MethodGet, "/streams", nil, &streams)
}

// TestTokenRenewed: with 20-second tokens, a console left open renews its
// token before it expires (POST /users/refresh-token) and keeps working
// past the first token's expiry instead of falling back to the login page.
func TestTokenRenewed(t *testing.T) {
	s := startUI(t, "IGGY_HTTP_JWT_ACCESS_TOKEN_EXPIRY=20 s")
	b := newBrowser(t)
	b.login(s.HTTPURL(), "iggy", "iggy")
	first := eval[string](b, `JSON.parse(sessionStorage.getItem('iggo.console.session')).token`)
	expiry := eval[float64](b, `JSON.parse(sessionStorage.getItem('iggo.console.session')).expiry`)
	b.waitJS(fmt.Sprintf(`JSON.parse(sessionStorage.getItem('iggo.console.session')).token !== %q`, first))
	// Past the first token's expiry (and the 5 s clock skew) the page still
	// refreshes with the API's answers.
	b.waitJS(fmt.Sprintf(`Date.now() > (%v + 6) * 1000`, expiry))
	b.run(chromedp.Navigate(s.HTTPURL() + "/ui/streams"))
	b.waitJS(`document.body.dataset.page === 'streams' && document.querySelector('#streams tbody').innerText.includes('No streams yet')`)
	if p := eval[string](b, `location.pathname`); p != "/ui/streams" {
		t.Fatalf("on %s after the first token expired", p)
	}
}
