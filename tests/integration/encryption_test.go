package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/iggo/iggo/tests/harness"
	"github.com/iggo/iggo/wire"
)

const (
	encKey      = "AQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQEBAQE="
	otherEncKey = "AgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgI="
)

func encEnv(key string) []string {
	return []string{"IGGY_ENCRYPTION_ENABLED=true", "IGGY_ENCRYPTION_KEY=" + key}
}

// grepData lists the files under dir holding needle, and counts the
// partition journal (.wal) and segment (.log) files with data, so that a
// clean grep is known to have looked at something.
func grepData(t *testing.T, dir string, needle []byte) (hits []string, wals, logs int) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			hits = append(hits, p)
		}
		if len(b) > 0 && strings.Contains(p, string(filepath.Separator)+"partitions"+string(filepath.Separator)) {
			switch filepath.Ext(p) {
			case ".wal":
				wals++
			case ".log":
				logs++
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return hits, wals, logs
}

// refusedStart runs the server on dir with env and expects it to refuse:
// a non-zero exit within a minute, printing want.
func refusedStart(t *testing.T, dir, want string, env ...string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, harness.Binary(t))
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "IGGY_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, append([]string{"IGGY_PATH=" + dir, "IGGY_TCP_ADDRESS=127.0.0.1:0", "IGGY_SHARDING_PIN_CORES=false"}, env...)...)
	out, err := cmd.CombinedOutput()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() == 0 {
		t.Fatalf("server on %s with %v did not refuse to start (%v):\n%s", dir, env, err, out)
	}
	if !strings.Contains(string(out), want) {
		t.Fatalf("refusal does not say %q:\n%s", want, out)
	}
}

// TestEncryptionAtRestProcess runs the real server with encryption.enabled:
// payloads and user headers never reach the data directory in clear (the
// partition journals and segments are grepped after a kill -9, so the
// journal still holds ops past the last checkpoint, and after a clean
// stop), polls return the plaintext across restarts, and a wrong key, a
// missing key or a key on a plaintext directory refuse to start.
func TestEncryptionAtRestProcess(t *testing.T) {
	s := start(t, encEnv(encKey)...)
	ctx := ctxT(t)
	c := s.Root(t)
	_, err := c.CreateStream(ctx, "vault", nil)
	must(t, err, "create stream")
	_, err = c.CreateTopic(ctx, wire.CreateTopic{StreamID: name("vault"), PartitionsCount: 2, Name: "secrets"})
	must(t, err, "create topic")
	hdrs, err := wire.AppendUserHeaders(nil, []wire.HeaderEntry{{Key: wire.StringValue("owner"), Value: wire.StringValue("HEADER-IN-CLEAR-MARKER")}})
	must(t, err, "headers")
	payload := func(p uint32, i int) []byte {
		return []byte(fmt.Sprintf("PAYLOAD-IN-CLEAR-MARKER/%d/%06d/%s", p, i, strings.Repeat("z", i%300)))
	}
	const sends, per = 30, 40
	for p := uint32(0); p < 2; p++ {
		for b := 0; b < sends; b++ {
			msgs := make([]wire.Message, per)
			for i := range msgs {
				msgs[i] = wire.Message{Payload: payload(p, b*per+i)}
				if i%3 == 0 {
					msgs[i].UserHeaders = hdrs
				}
			}
			_, err := c.SendMessages(ctx, name("vault"), name("secrets"), wire.PartitionByID(p), msgs)
			must(t, err, "send")
		}
	}
	check := func(phase string) {
		t.Helper()
		c := s.Root(t)
		for p := uint32(0); p < 2; p++ {
			var got []wire.PolledMessage
			for next := uint64(0); next < sends*per; {
				pm, err := c.PollMessages(ctx, wire.PollMessages{Consumer: wire.SingleConsumer(id(1)), StreamID: name("vault"),
					TopicID: name("secrets"), Partition: wire.SomePartition(p), Strategy: wire.PollFromOffset(next), Count: 77})
				must(t, err, phase+": poll")
				for _, r := range pm.Records {
					if _, err := wire.VerifyBatch(r.Bytes()); err != nil {
						t.Fatalf("%s: polled record fails the checksums an SDK verifies: %v", phase, err)
					}
				}
				ms := pm.Messages()
				if len(ms) == 0 {
					t.Fatalf("%s: partition %d: nothing from offset %d", phase, p, next)
				}
				got = append(got, ms...)
				next = ms[len(ms)-1].Offset + 1
			}
			for i, m := range got {
				if m.Offset != uint64(i) || !bytes.Equal(m.Payload, payload(p, i)) {
					t.Fatalf("%s: partition %d message %d: offset %d, payload %.40q", phase, p, i, m.Offset, m.Payload)
				}
				if hasHdr := i%per%3 == 0; hasHdr != bytes.Equal(m.UserHeaders, hdrs) {
					t.Fatalf("%s: partition %d message %d: headers %q", phase, p, i, m.UserHeaders)
				}
			}
		}
	}
	check("before restart")
	noClear := func(phase string) {
		t.Helper()
		for _, marker := range []string{"PAYLOAD-IN-CLEAR-MARKER", "HEADER-IN-CLEAR-MARKER"} {
			hits, wals, logs := grepData(t, s.DataDir(), []byte(marker))
			if len(hits) > 0 {
				t.Fatalf("%s: %s found in clear in %v", phase, marker, hits)
			}
			if wals == 0 || logs == 0 {
				t.Fatalf("%s: %d journal and %d segment files with data: the grep checked nothing", phase, wals, logs)
			}
		}
	}
	s.Kill()
	noClear("after kill -9")
	s.Restart()
	check("after kill -9 and restart")
	must(t, s.Stop(30*time.Second), "stop")
	noClear("after a clean stop")
	s.Restart()
	check("after a clean restart")
	must(t, s.Stop(30*time.Second), "stop")

	refusedStart(t, s.DataDir(), "encryption.key is not the key", encEnv(otherEncKey)...)
	refusedStart(t, s.DataDir(), "was written with encryption at rest")
	refusedStart(t, s.DataDir(), "encryption.key: must be base64 of exactly 32 bytes", "IGGY_ENCRYPTION_ENABLED=true")
	// Still intact with the right key after the refusals.
	s.Restart()
	check("after the refused starts")
	must(t, s.Stop(30*time.Second), "stop")

	plain := start(t)
	_, err = plain.Root(t).CreateStream(ctx, "open", nil)
	must(t, err, "create stream")
	must(t, plain.Stop(30*time.Second), "stop")
	refusedStart(t, plain.DataDir(), "holds data written without encryption", encEnv(encKey)...)
}
