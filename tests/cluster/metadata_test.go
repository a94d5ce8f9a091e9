package cluster

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

// TestMetadataPrimaryKilled: a client creates streams (each with a topic)
// and users one after another while the metadata primary is killed with
// -9 and later restarted. Every acknowledged creation exists on every
// node afterwards, all nodes list the same streams with the same ids and
// topics, ids are never handed out twice, and an unacknowledged creation
// is either there completely or not at all.
func TestMetadataPrimaryKilled(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{})
	leader, view, err := c.WaitPrimary("metadata", 0, 30*time.Second)
	must(t, err, "metadata primary")

	type result struct {
		acked   map[string]uint32 // stream name → id
		unknown map[string]bool
		users   map[string]bool
	}
	res := result{acked: map[string]uint32{}, unknown: map[string]bool{}, users: map[string]bool{}}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		var cl *client.Client
		defer func() {
			if cl != nil {
				_ = cl.Close()
			}
		}()
		for i := 0; i < 2000; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if cl == nil {
				cfg := c.ClusterClientConfig("iggy", "iggy")
				cfg.Addresses = append(append([]string(nil), c.Addrs()[i%3:]...), c.Addrs()[:i%3]...)
				cfg.RequestTimeout, cfg.DialTimeout = 10*time.Second, time.Second
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				cl, err = client.Dial(ctx, cfg)
				cancel()
				if err != nil {
					cl = nil
					time.Sleep(100 * time.Millisecond)
					continue
				}
			}
			name := fmt.Sprintf("md-%04d", i)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			st, err := cl.CreateStream(ctx, name, nil)
			if err == nil {
				_, err = cl.CreateTopic(ctx, wire.CreateTopic{StreamID: wire.MustNamedID(name), PartitionsCount: 2, Name: "t"})
				if err == nil {
					res.acked[name] = st.ID
				}
			}
			if err == nil && i%4 == 0 {
				if _, uerr := cl.CreateUser(ctx, wire.CreateUser{Username: "u-" + name, Password: "pw-123456", Status: 1}); uerr == nil {
					res.users["u-"+name] = true
				}
			}
			cancel()
			if err != nil {
				res.unknown[name] = true
				if _, server := wire.CodeOf(err); !server {
					_ = cl.Close()
					cl = nil
				}
				time.Sleep(50 * time.Millisecond)
			}
		}
	}()
	waitCount := func(n int) {
		t.Helper()
		deadline := time.Now().Add(60 * time.Second)
		for {
			select {
			case <-done:
				t.Fatal("the metadata writer stopped early")
			default:
			}
			// res is written by the writer goroutine; count through the
			// nodes instead of reading it.
			cl := c.Root(t, (leader+1)%3)
			streams, err := cl.GetStreams(context.Background())
			_ = cl.Close()
			if err == nil && len(streams) >= n {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("fewer than %d streams within 60 s", n)
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	waitCount(5)
	t.Logf("kill -9 metadata primary node %d (view %d)", leader, view)
	c.Kill(leader)
	waitCount(15)
	c.Restart(leader, false)
	waitCount(25)
	close(stop)
	<-done

	var ref []string
	for i := range c.Nodes {
		cl := c.Root(t, i)
		var listing []string
		var streams wire.Streams
		for end := time.Now().Add(20 * time.Second); ; time.Sleep(200 * time.Millisecond) {
			streams, err = cl.GetStreams(context.Background())
			must(t, err, "get streams")
			if len(streams) >= len(res.acked) || time.Now().After(end) {
				break
			}
		}
		ids := map[uint32]string{}
		for _, s := range streams {
			if other, dup := ids[s.ID]; dup {
				t.Fatalf("node %d: stream id %d used by %s and %s", i, s.ID, other, s.Name)
			}
			ids[s.ID] = s.Name
			if want, ok := res.acked[s.Name]; ok && want != s.ID {
				t.Fatalf("node %d: stream %s has id %d, acknowledged as %d", i, s.Name, s.ID, want)
			}
			if _, ok := res.acked[s.Name]; !ok && !res.unknown[s.Name] {
				t.Fatalf("node %d: stream %s was never created", i, s.Name)
			}
			listing = append(listing, fmt.Sprintf("%d:%s:%d", s.ID, s.Name, s.TopicsCount))
		}
		for name := range res.acked {
			if _, err := cl.GetTopic(context.Background(), wire.MustNamedID(name), wire.MustNamedID("t")); err != nil {
				t.Fatalf("node %d: acknowledged stream %s or its topic is missing: %v", i, name, err)
			}
		}
		users, err := cl.GetUsers(context.Background())
		must(t, err, "get users")
		have := map[string]bool{}
		for _, u := range users {
			have[u.Username] = true
		}
		for u := range res.users {
			if !have[u] {
				t.Fatalf("node %d: acknowledged user %s is missing", i, u)
			}
		}
		sort.Strings(listing)
		if ref == nil {
			ref = listing
			continue
		}
		if strings.Join(listing, " ") != strings.Join(ref, " ") {
			t.Fatalf("node %d lists streams\n%v\nnode 0 lists\n%v", i, listing, ref)
		}
	}
	t.Logf("%d streams acknowledged, %d unknown, %d users; every node lists the same %d streams", len(res.acked), len(res.unknown), len(res.users), len(ref))
}
