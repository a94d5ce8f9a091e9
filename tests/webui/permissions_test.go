package webui_test

import (
	"fmt"
	"net/http"
	"testing"

	"github.com/chromedp/chromedp"

	"github.com/iggo/iggo/client/httpclient"
	"github.com/iggo/iggo/wire"
)

// TestUserSeesOnlyWhatItMay: a user allowed to read and poll one stream
// sees that stream (listed from its own permissions, since it may not list
// all streams), its topics and messages; the other stream, the user list
// and the node's stats show the API's refusal; a delete and a send it may
// not do are refused with the API's message and change nothing.
func TestUserSeesOnlyWhatItMay(t *testing.T) {
	s := startUI(t)
	root := tcpClient(t, s.Addr, "iggy", "iggy")
	ctx := ctxT(t)
	open, err := root.CreateStream(ctx, "open", nil)
	must(t, err, "create stream open")
	secret, err := root.CreateStream(ctx, "secret", nil)
	must(t, err, "create stream secret")
	for _, st := range []uint32{open.ID, secret.ID} {
		_, err := root.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.NumericID(st), Name: "t", PartitionsCount: 1})
		must(t, err, "create topic")
		_, err = root.SendMessages(ctx, wire.NumericID(st), named(t, "t"), wire.PartitionByID(0), []wire.Message{{Payload: []byte(fmt.Sprintf("in stream %d", st))}})
		must(t, err, "send")
	}
	_, err = root.CreateUser(ctx, wire.CreateUser{Username: "reader", Password: "reader-pass", Status: wire.UserActive,
		Permissions: &wire.Permissions{Streams: []wire.StreamPermissions{{StreamID: open.ID, ReadStream: true, ReadTopics: true, PollMessages: true}}}})
	must(t, err, "create user")

	// What the API answers the user: the console must show the same.
	reader := httpclient.New(s.HTTPURL())
	if _, err := reader.Login(ctx, "reader", "reader-pass"); err != nil {
		t.Fatal(err)
	}
	listRefused := apiError(t, reader, http.MethodGet, "/streams", nil)
	if listRefused.Status != http.StatusForbidden {
		t.Fatalf("GET /streams as reader: %+v, want 403", listRefused)
	}
	secretRefused := apiError(t, reader, http.MethodGet, fmt.Sprintf("/streams/%d", secret.ID), nil)
	usersRefused := apiError(t, reader, http.MethodGet, "/users", nil)
	statsRefused := apiError(t, reader, http.MethodGet, "/stats", nil)

	base := s.HTTPURL()
	b := newBrowser(t)
	b.login(base, "reader", "reader-pass")
	b.waitJS(`document.querySelector('#whoami').innerText === 'reader'`)
	b.waitJS(fmt.Sprintf(`document.querySelector('#stats').innerText.includes(%q)`, statsRefused.Reason))

	// Streams: only "open", with the reason the full list is refused.
	b.run(chromedp.Navigate(base + "/ui/streams"))
	b.waitJS(`document.querySelectorAll('#streams tbody tr[data-stream]').length === 1`)
	if row := b.text(`#streams tbody tr[data-stream]`); !contains(row, "open") {
		t.Fatalf("stream row %q", row)
	}
	if note := b.text(`#streams-note`); !contains(note, listRefused.Reason, listRefused.Code) {
		t.Fatalf("note %q lacks the API's refusal %q", note, listRefused.Reason)
	}
	if n := eval[int](b, `[...document.querySelectorAll('#streams tbody a')].filter(a => a.innerText === 'secret').length`); n != 0 {
		t.Fatalf("the secret stream is listed")
	}

	// The other stream's page shows the refusal and nothing of it.
	b.run(chromedp.Navigate(fmt.Sprintf("%s/ui/streams/%d", base, secret.ID)))
	b.waitJS(fmt.Sprintf(`document.querySelector('#topics tbody').innerText.includes(%q)`, secretRefused.Reason))
	if n := eval[int](b, `document.querySelectorAll('#topics tbody tr[data-topic]').length`); n != 0 {
		t.Fatalf("%d topics of the secret stream shown", n)
	}

	// Its own stream: topics; a delete it may not do is refused.
	b.run(chromedp.Navigate(fmt.Sprintf("%s/ui/streams/%d", base, open.ID)))
	b.waitJS(`document.querySelectorAll('#topics tbody tr[data-topic]').length === 1`)
	deleteRefused := apiError(t, reader, http.MethodDelete, fmt.Sprintf("/streams/%d/topics/t", open.ID), nil)
	b.run(click(`#topics tbody tr[data-topic] button.danger`))
	b.confirm()
	b.waitFlash(deleteRefused.Reason)
	if _, err := root.GetTopic(ctx, wire.NumericID(open.ID), named(t, "t")); err != nil {
		t.Fatalf("topic after a refused delete: %v", err)
	}

	// Messages: its stream polls; a send is refused; the other stream's
	// poll is refused.
	b.run(chromedp.Navigate(fmt.Sprintf("%s/ui/messages?stream=open&topic=t&partition=0&kind=first", base)))
	b.waitJS(`document.querySelectorAll('#m-table tbody tr[data-offset]').length === 1`)
	if row := b.text(`#m-table tbody tr[data-offset]`); !contains(row, fmt.Sprintf("in stream %d", open.ID)) {
		t.Fatalf("message row %q", row)
	}
	sendRefused := apiError(t, reader, http.MethodPost, "/streams/open/topics/t/messages",
		map[string]any{"partitioning": map[string]any{"kind": "balanced", "value": ""}, "messages": []map[string]any{{"payload": "eA=="}}})
	b.run(keys(`#s-payload`, "not allowed"), click(`#s-send`))
	b.waitFlash(sendRefused.Reason)
	pollRefused := apiError(t, reader, http.MethodGet, "/streams/secret/topics/t/messages?partition_id=0&kind=first", nil)
	b.run(chromedp.Navigate(fmt.Sprintf("%s/ui/messages?stream=secret&topic=t&partition=0&kind=first", base)))
	b.waitJS(fmt.Sprintf(`document.querySelector('#m-table tbody').innerText.includes(%q)`, pollRefused.Reason))

	// Users: its own account and tokens; the user list is refused.
	b.run(chromedp.Navigate(base + "/ui/users"))
	b.waitJS(fmt.Sprintf(`document.querySelector('#users tbody').innerText.includes(%q)`, usersRefused.Reason))
	b.waitJS(`document.querySelector('#me').innerText.includes('reader') && document.querySelector('#pats tbody').innerText.includes('No tokens')`)
	if n := eval[int](b, `document.querySelectorAll('#users tbody tr[data-user]').length`); n != 0 {
		t.Fatalf("%d users listed to a user without read_users", n)
	}
}

// TestUsersAndTokens: root creates a user from the form with one global
// permission, grants it another and a stream's read from the permissions
// editor, and creates a personal access token that then logs in on the
// login page; the API holds every change.
func TestUsersAndTokens(t *testing.T) {
	s := startUI(t)
	api := rootHTTP(t, s)
	base := s.HTTPURL()
	b := newBrowser(t)
	b.login(base, "iggy", "iggy")
	b.run(chromedp.Navigate(base + "/ui/users"))
	b.waitJS(`document.querySelectorAll('#users tbody tr[data-user]').length === 1`)
	b.run(keys(`#create-user input[name=username]`, "ops"), keys(`#create-user input[name=password]`, "ops-password"),
		click(`#create-user input[name=n_read_servers]`), submit(`#create-user`))
	b.waitFlash("User ops created")
	b.waitJS(`document.querySelectorAll('#users tbody tr[data-user]').length === 2`)
	type perms struct {
		Global  map[string]bool           `json:"global"`
		Streams map[string]map[string]any `json:"streams"`
	}
	var u struct {
		ID          uint32 `json:"id"`
		Permissions *perms `json:"permissions"`
	}
	call(t, api, http.MethodGet, "/users/ops", nil, &u)
	if u.Permissions == nil || !u.Permissions.Global["read_servers"] || u.Permissions.Global["send_messages"] {
		t.Fatalf("created user's permissions %+v", u.Permissions)
	}

	b.run(click(fmt.Sprintf(`#users tbody tr[data-user="%d"] button`, u.ID)))
	b.waitJS(`!document.querySelector('#user-card').hidden && document.querySelector('#perm-global input[name=g_read_servers]').checked`)
	b.run(click(`#perm-global input[name=g_send_messages]`),
		setValue(`#perm-streams`, `{"7": {"read_stream": true, "read_topics": true}}`), submit(`#user-perms`))
	b.waitFlash("Permissions of ops saved")
	call(t, api, http.MethodGet, "/users/ops", nil, &u)
	if !u.Permissions.Global["send_messages"] || !u.Permissions.Global["read_servers"] || u.Permissions.Streams["7"]["read_stream"] != true {
		t.Fatalf("permissions after the editor: %+v", u.Permissions)
	}

	// A token from the form, shown once, logs in.
	b.run(keys(`#create-pat input[name=name]`, "console-test"), submit(`#create-pat`))
	b.waitJS(`document.querySelector('#pat-raw code') !== null`)
	token := b.text(`#pat-raw code`)
	var pats []struct {
		Name string `json:"name"`
	}
	call(t, api, http.MethodGet, "/personal-access-tokens", nil, &pats)
	if len(pats) != 1 || pats[0].Name != "console-test" || len(token) < 20 {
		t.Fatalf("tokens %+v, raw %q", pats, token)
	}
	b.waitJS(`[...document.querySelectorAll('#pats tbody td')].some(td => td.innerText === 'console-test')`)
	b.run(click(`#logout`))
	b.waitJS(`location.pathname === '/ui/login'`)
	b.run(keys(`#login-pat`, token), submit(`#pat-form`))
	b.waitJS(`document.body.dataset.page === 'cluster' && document.querySelector('#whoami').innerText === 'iggy'`)
}
