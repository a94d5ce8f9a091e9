package cluster

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/iggo/iggo/client"
	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

const clusterEncKey = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="

// TestEncryptedCluster: three nodes share encryption.key. A topic of each
// durability is written through the cluster; every node (so every backup of
// every partition) polls back the plaintext; the nodes' segment files are
// byte-identical, which with a random nonce per sealed section shows the
// batch was encrypted once, before the prepare, and the backups journaled
// the primary's bytes; no node's data directory holds a payload or header
// in clear; and a node restarted with another key refuses to start.
func TestEncryptedCluster(t *testing.T) {
	c := startCluster(t, harness.ClusterOptions{Env: []string{"IGGY_ENCRYPTION_ENABLED=true", "IGGY_ENCRYPTION_KEY=" + clusterEncKey}})
	specs := []*topicSpec{
		{stream: "enc-r", topic: "t", durability: "replicated", partitions: 2},
		{stream: "enc-p", topic: "t", durability: "persisted", partitions: 1},
	}
	createTopics(t, c, 0, specs)
	ctx := ctxT(t, 3*time.Minute)
	cfg := c.ClusterClientConfig("iggy", "iggy")
	cl, err := client.Dial(ctx, cfg)
	must(t, err, "dial the cluster")
	defer cl.Close()
	hdrs, err := wire.AppendUserHeaders(nil, []wire.HeaderEntry{{Key: wire.StringValue("h"), Value: wire.StringValue("CLUSTER-HEADER-IN-CLEAR")}})
	must(t, err, "headers")
	payload := func(s string, p uint32, i int) []byte {
		return []byte(fmt.Sprintf("CLUSTER-PAYLOAD-IN-CLEAR/%s/%d/%05d", s, p, i))
	}
	const sends, per = 15, 20
	for _, ts := range specs {
		for p := uint32(0); p < ts.partitions; p++ {
			for b := 0; b < sends; b++ {
				msgs := make([]wire.Message, per)
				for i := range msgs {
					msgs[i] = wire.Message{Payload: payload(ts.stream, p, b*per+i)}
					if i%2 == 1 {
						msgs[i].UserHeaders = hdrs
					}
				}
				_, err := cl.SendMessages(ctx, name(ts.stream), name(ts.topic), wire.PartitionByID(p), msgs)
				must(t, err, "send")
			}
		}
	}
	for node := range c.Nodes {
		nc, err := client.Dial(ctx, c.ClientConfig(node, "iggy", "iggy"))
		must(t, err, "dial a node")
		for _, ts := range specs {
			for p := uint32(0); p < ts.partitions; p++ {
				got := pollUntil(t, nc, ts, p, sends*per, 60*time.Second)
				for i, m := range got {
					if m.Offset != uint64(i) || !bytes.Equal(m.Payload, payload(ts.stream, p, i)) {
						t.Fatalf("node %d %s/%d message %d: offset %d payload %q", node, ts.stream, p, i, m.Offset, m.Payload)
					}
					if want := i%2 == 1; want != bytes.Equal(m.UserHeaders, hdrs) {
						t.Fatalf("node %d %s/%d message %d: headers %q", node, ts.stream, p, i, m.UserHeaders)
					}
				}
			}
		}
		_ = nc.Close()
	}
	waitSegmentsEqual(t, c, "encrypted cluster")
	must(t, c.StopAll(30*time.Second), "stop the cluster")
	for _, n := range c.Nodes {
		var files int
		err := filepath.WalkDir(n.DataDir(), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if ext := filepath.Ext(p); (ext == ".wal" || ext == ".log") && strings.Contains(p, "partitions") && len(b) > 0 {
				files++
			}
			for _, marker := range []string{"CLUSTER-PAYLOAD-IN-CLEAR", "CLUSTER-HEADER-IN-CLEAR"} {
				if bytes.Contains(b, []byte(marker)) {
					t.Errorf("node %d: %s in clear in %s", n.ID, marker, p)
				}
			}
			return nil
		})
		must(t, err, "grep")
		if files == 0 {
			t.Fatalf("node %d: no journal or segment file with data: the grep checked nothing", n.ID)
		}
	}

	// Node 2 with another key refuses to start.
	n := c.Nodes[2]
	octx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(octx, c.Options().Binary, "--config", c.ConfigPath, "--replica-id", strconv.Itoa(n.ID))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IGGY_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, "IGGY_PATH="+n.DataDir(), "IGGY_SHARDING_PIN_CORES=false",
		"IGGY_TCP_ADDRESS="+net.JoinHostPort(n.IP, strconv.Itoa(n.TCPPort)),
		"IGGY_ENCRYPTION_ENABLED=true", "IGGY_ENCRYPTION_KEY=AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI=")
	env := cmd.Env
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || !strings.Contains(string(out), "encryption.key is not the key") {
		t.Fatalf("node 2 with another key: %v\n%s", err, out)
	}

	// Wiped and started with another key, node 2 passes its own key check
	// (a new directory) but its peers' handshake refuses it: it never
	// journals batches it could not decrypt.
	c.Nodes[0].Restart()
	c.Nodes[1].Restart()
	must(t, os.RemoveAll(n.DataDir()), "wipe node 2")
	var buf syncBuf
	cmd = exec.Command(c.Options().Binary, "--config", c.ConfigPath, "--replica-id", strconv.Itoa(n.ID), "--with-default-root-credentials")
	cmd.Env, cmd.Stdout, cmd.Stderr = env, &buf, &buf
	must(t, cmd.Start(), "start node 2 with another key")
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	deadline := time.Now().Add(60 * time.Second)
	for !strings.Contains(buf.String(), `"data_key"`) {
		if time.Now().After(deadline) {
			t.Fatalf("node 2 keyed differently was not refused by its peers within 60 s:\n%s", buf.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// syncBuf collects a process's output for polling from the test.
type syncBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuf) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuf) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func pollUntil(t *testing.T, cl *client.Client, ts *topicSpec, p uint32, want int, d time.Duration) []wire.PolledMessage {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		var got []wire.PolledMessage
		var err error
		for len(got) < want {
			var pm wire.PolledMessages
			pm, err = cl.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(wire.NumericID(1)), StreamID: name(ts.stream),
				TopicID: name(ts.topic), Partition: wire.SomePartition(p), Strategy: wire.PollFromOffset(uint64(len(got))), Count: 33})
			if err != nil {
				break
			}
			for _, r := range pm.Records {
				if _, verr := wire.VerifyBatch(r.Bytes()); verr != nil {
					t.Fatalf("%s/%d: polled record fails its checksums: %v", ts.stream, p, verr)
				}
			}
			ms := pm.Messages()
			if len(ms) == 0 {
				break
			}
			got = append(got, ms...)
		}
		cancel()
		if len(got) >= want {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s/%d: %d of %d messages after %v (last error %v)", ts.stream, p, len(got), want, d, err)
		}
		time.Sleep(200 * time.Millisecond)
	}
}
