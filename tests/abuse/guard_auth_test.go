package abuse

import (
	"bufio"
	"errors"
	"net"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// guardRaw is a hand-driven client connection: it sends frames with
// whatever client id, session and request number the test chooses.
type guardRaw struct {
	t   testing.TB
	nc  net.Conn
	br  *bufio.Reader
	buf []byte
}

func guardRawDial(t testing.TB, addr string) *guardRaw {
	t.Helper()
	nc, err := net.DialTimeout("tcp", addr, 10*time.Second)
	guardMust(t, err, "dial "+addr)
	t.Cleanup(func() { nc.Close() })
	return &guardRaw{t: t, nc: nc, br: bufio.NewReader(nc)}
}

// do sends req under h (size and code filled in) and returns the decoded
// reply: an *wire.Error for a status or rejection, a *wire.EvictionError
// for an eviction, a connection error when the node closed the socket.
func (r *guardRaw) do(h wire.RequestHeader, req wire.Request) ([]byte, error) {
	r.t.Helper()
	frame, err := req.AppendBody(make([]byte, wire.HeaderSize))
	guardMust(r.t, err, "encode request")
	h.Size = uint32(len(frame))
	if h.Operation == 0 {
		h.Operation = req.Code().Operation()
	}
	if h.Operation == wire.OpNonReplicated {
		h.Code = req.Code()
	}
	h.Put(frame[:wire.HeaderSize])
	_ = r.nc.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := r.nc.Write(frame); err != nil {
		return nil, err
	}
	reply, err := wire.ReadFrame(r.br, r.buf, 1<<20)
	if err != nil {
		return nil, err
	}
	_, payload, err := wire.DecodeReply(reply, 1<<20)
	return payload, err
}

// login registers client as user/password and returns the session.
func (r *guardRaw) login(client wire.Uint128, user, password string) (uint64, error) {
	r.t.Helper()
	p, err := r.do(wire.RequestHeader{Client: client, Operation: wire.OpRegister},
		&wire.LoginRegister{Version: wire.ClientVersionInfo{Protocol: wire.CurrentProtocol, SDKName: "guard", SDKVersion: "1"}, Username: user, Password: password})
	if err != nil {
		return 0, err
	}
	lr, err := wire.DecodeLoginReply(p)
	return lr.Session, err
}

func guardEvicted(t testing.TB, err error, reason wire.EvictionReason, what string) {
	t.Helper()
	var ev *wire.EvictionError
	if !errors.As(err, &ev) || ev.Reason != reason {
		t.Fatalf("%s: got %v, want eviction %s", what, err, reason)
	}
}

// TestGuardRootLockout: a user with manage_users cannot rename, deactivate,
// re-password, re-permission or delete root (Iggy 0.9 lets it rename and
// deactivate root); root keeps logging in and can still manage others.
func TestGuardRootLockout(t *testing.T) {
	s := harness.Start(t, harness.Options{DefaultRoot: true})
	ctx := guardCtx(t, 60*time.Second)
	root := guardDial(t, s.Addr, "iggy", "iggy")
	_, err := root.CreateUser(ctx, wire.CreateUser{Username: "admin", Password: "admin-pw", Status: 1,
		Permissions: &wire.Permissions{Global: wire.GlobalPermissions{ManageUsers: true, ReadUsers: true}}})
	guardMust(t, err, "create admin")
	_, err = root.CreateUser(ctx, wire.CreateUser{Username: "bob", Password: "bob-pw", Status: 1})
	guardMust(t, err, "create bob")
	admin := guardDial(t, s.Addr, "admin", "admin-pw")
	rootID := wire.NumericID(0)
	evil := "evil"
	inactive := uint8(2)
	guardWantCode(t, admin.UpdateUser(ctx, rootID, &evil, nil), wire.CodeUnauthorized, "admin renames root")
	guardWantCode(t, admin.UpdateUser(ctx, wire.MustNamedID("iggy"), nil, &inactive), wire.CodeUnauthorized, "admin deactivates root")
	guardWantCode(t, admin.ChangePassword(ctx, rootID, "iggy", "hijacked"), wire.CodeUnauthorized, "admin changes root's password")
	guardWantCode(t, admin.UpdatePermissions(ctx, rootID, &wire.Permissions{}), wire.CodeUnauthorized, "admin strips root's permissions")
	guardWantCode(t, admin.DeleteUser(ctx, rootID), wire.CodeUnauthorized, "admin deletes root")
	guardWantCode(t, root.UpdateUser(ctx, rootID, nil, &inactive), wire.CodeInvalidUserStatus, "root deactivates itself")
	// Admin still manages everyone else.
	guardMust(t, admin.UpdateUser(ctx, wire.MustNamedID("bob"), &evil, nil), "admin renames bob")
	guardMust(t, admin.UpdateUser(ctx, wire.MustNamedID("evil"), nil, &inactive), "admin deactivates bob")
	// Root is untouched and logs in as before.
	again := guardDial(t, s.Addr, "iggy", "iggy")
	me, err := again.GetUser(ctx, rootID)
	guardMust(t, err, "get root")
	if me.Username != "iggy" || me.Status != 1 {
		t.Fatalf("root is now %q with status %d", me.Username, me.Status)
	}
}

// TestGuardClientIDTakeover: a user who presents another user's client id
// — in a login, or in a request on its own session — is refused
// (eviction SessionError, as Iggy refuses a register of a client id owned
// by another user), and the owner's session carries on.
func TestGuardClientIDTakeover(t *testing.T) {
	s := harness.Start(t, harness.Options{DefaultRoot: true})
	ctx := guardCtx(t, 60*time.Second)
	root := guardDial(t, s.Addr, "iggy", "iggy")
	_, err := root.CreateStream(ctx, "s", nil)
	guardMust(t, err, "create stream")
	_, err = root.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.MustNamedID("s"), PartitionsCount: 2, Name: "t"})
	guardMust(t, err, "create topic")
	_, err = root.CreateConsumerGroup(ctx, wire.MustNamedID("s"), wire.MustNamedID("t"), "g")
	guardMust(t, err, "create group")
	perms := &wire.Permissions{Global: wire.GlobalPermissions{ReadStreams: true, ReadTopics: true, PollMessages: true}}
	for _, u := range []string{"alice", "mallory"} {
		_, err := root.CreateUser(ctx, wire.CreateUser{Username: u, Password: u + "-pw", Status: 1, Permissions: perms})
		guardMust(t, err, "create "+u)
	}
	join := &wire.JoinConsumerGroup{StreamID: wire.MustNamedID("s"), TopicID: wire.MustNamedID("t"), GroupID: wire.MustNamedID("g")}
	leave := &wire.LeaveConsumerGroup{StreamID: wire.MustNamedID("s"), TopicID: wire.MustNamedID("t"), GroupID: wire.MustNamedID("g")}

	alice := guardRawDial(t, s.Addr)
	x := wire.Uint128{Lo: 0x1111_2222_3333_4444, Hi: 0x5555}
	sa, err := alice.login(x, "alice", "alice-pw")
	guardMust(t, err, "alice logs in")
	_, err = alice.do(wire.RequestHeader{Client: x, Session: sa, Request: 1}, join)
	guardMust(t, err, "alice joins the group")

	// Mallory logs in presenting alice's client id.
	mallory := guardRawDial(t, s.Addr)
	_, err = mallory.login(x, "mallory", "mallory-pw")
	guardEvicted(t, err, wire.EvictSessionError, "mallory registers alice's client id")
	// Mallory, on her own session, sends a request under alice's client id.
	y := wire.Uint128{Lo: 0x9999}
	sm, err := mallory.login(y, "mallory", "mallory-pw")
	guardMust(t, err, "mallory logs in with her own id")
	_, err = mallory.do(wire.RequestHeader{Client: x, Session: sm, Request: 1}, leave)
	guardEvicted(t, err, wire.EvictSessionError, "mallory's request under alice's client id")

	// Alice's session and membership are intact.
	_, err = alice.do(wire.RequestHeader{Client: x, Session: sa, Request: 2}, leave)
	guardMust(t, err, "alice's next request on her session")
	// The owner may resume its client id on a new connection.
	again := guardRawDial(t, s.Addr)
	if _, err := again.login(x, "alice", "alice-pw"); err != nil {
		t.Fatalf("alice resumes her own client id: %v", err)
	}
	if n := guardCountLines(s.Output(), "panic"); n != 0 {
		t.Fatalf("the server logged %d panics", n)
	}
}

// TestGuardTokenSessions: a session opened with a personal access token
// ends when the token is deleted (Iggy 0.9 keeps it: its sessions record
// only the user); the token no longer logs in; sessions opened with a
// password carry on. A deactivated user's sessions end too.
func TestGuardTokenSessions(t *testing.T) {
	s := harness.Start(t, harness.Options{DefaultRoot: true})
	ctx := guardCtx(t, 60*time.Second)
	root := guardDial(t, s.Addr, "iggy", "iggy")
	_, err := root.CreateUser(ctx, wire.CreateUser{Username: "carol", Password: "carol-pw", Status: 1,
		Permissions: &wire.Permissions{Global: wire.GlobalPermissions{ReadStreams: true}}})
	guardMust(t, err, "create carol")
	carol := guardDial(t, s.Addr, "carol", "carol-pw")
	token, err := carol.CreatePersonalAccessToken(ctx, "ci", 0)
	guardMust(t, err, "create token")
	other, err := carol.CreatePersonalAccessToken(ctx, "other", 0)
	guardMust(t, err, "create a second token")

	byToken := guardDial(t, s.Addr, "", "")
	_, err = byToken.LoginWithToken(ctx, token)
	guardMust(t, err, "log in with the token")
	byOther := guardDial(t, s.Addr, "", "")
	_, err = byOther.LoginWithToken(ctx, other)
	guardMust(t, err, "log in with the second token")
	_, err = byToken.GetStreams(ctx)
	guardMust(t, err, "a request on the token session")

	guardMust(t, carol.DeletePersonalAccessToken(ctx, "ci"), "delete the token")
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := byToken.GetStreams(ctx); err != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the session opened with a deleted token still serves requests")
		}
		time.Sleep(50 * time.Millisecond)
	}
	_, err = carol.GetStreams(ctx)
	guardMust(t, err, "the password session carries on")
	_, err = byOther.GetStreams(ctx)
	guardMust(t, err, "the session of another token carries on")
	fresh := guardDial(t, s.Addr, "", "")
	_, err = fresh.LoginWithToken(ctx, token)
	if err == nil {
		t.Fatal("the deleted token still logs in")
	}
	// Deactivating carol ends the rest of her sessions.
	inactive := uint8(2)
	guardMust(t, root.UpdateUser(ctx, wire.MustNamedID("carol"), nil, &inactive), "deactivate carol")
	deadline = time.Now().Add(20 * time.Second)
	for {
		_, e1 := carol.GetStreams(ctx)
		_, e2 := byOther.GetStreams(ctx)
		if e1 != nil && e2 != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a deactivated user's sessions still serve requests")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
