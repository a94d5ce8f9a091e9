package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestPayloadRoundTrip(t *testing.T) {
	for _, c := range []struct {
		run  uint64
		seq  int
		size int
	}{{1, 0, minPayload}, {0xdeadbeefcafef00d, 99999999, 128}, {42, 7, 4096}} {
		p := payloadFor(c.run, c.seq, c.size)
		if len(p) != c.size {
			t.Fatalf("payloadFor(%x, %d, %d) has %d bytes", c.run, c.seq, c.size, len(p))
		}
		run, seq, ok := parsePayload(p)
		if !ok || run != c.run || seq != c.seq {
			t.Fatalf("parsePayload(%q) = %x, %d, %v; want %x, %d", p, run, seq, ok, c.run, c.seq)
		}
		if !bytes.Equal(p, payloadFor(c.run, c.seq, c.size)) {
			t.Fatal("payloadFor is not deterministic")
		}
	}
	if bytes.Equal(payloadFor(5, 1, 128)[40:], payloadFor(5, 2, 128)[40:]) {
		t.Fatal("filler does not depend on seq")
	}
	for _, bad := range []string{"", "hello", "iggo-demo run=zzzzzzzzzzzzzzzz seq=00000001 x", "iggo-demo run=0000000000000001 seq=0000000x "} {
		if _, _, ok := parsePayload([]byte(bad)); ok {
			t.Fatalf("parsePayload(%q) accepted a foreign payload", bad)
		}
	}
}

func TestFlags(t *testing.T) {
	env := map[string]string{"IGGO_DEMO_ADDRESSES": "a:1, b:2", "IGGO_DEMO_MESSAGES": "7", "IGGO_DEMO_WAIT": "3s", "IGGO_DEMO_TRANSPORT": "quic"}
	getenv := func(k string) string { return env[k] }
	o, err := parseFlags([]string{"--batch", "3"}, getenv, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(o.addresses, "|") != "a:1|b:2" || o.messages != 7 || o.batch != 3 || o.wait.Seconds() != 3 || o.partitions != 3 || o.transport != "quic" {
		t.Fatalf("parsed %+v", o)
	}
	for _, args := range [][]string{{"--messages", "0"}, {"--payload-size", "10"}, {"--addresses", " , "}, {"extra"}, {"--partitions", "0"}, {"--transport", "udp"}} {
		if _, err := parseFlags(args, getenv, &bytes.Buffer{}); err == nil {
			t.Fatalf("parseFlags(%v) accepted bad input", args)
		}
	}
	env["IGGO_DEMO_BATCH"] = "many"
	if _, err := parseFlags(nil, getenv, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "IGGO_DEMO_BATCH") {
		t.Fatalf("bad $IGGO_DEMO_BATCH: err = %v", err)
	}
}

func TestUnreachableServerExitsWithServerCode(t *testing.T) {
	var out, errb bytes.Buffer
	// Port 1 on loopback: nothing listens there, so every dial is refused.
	code := run([]string{"--addresses", "127.0.0.1:1", "--wait", "1500ms", "--timeout", "1s"}, func(string) string { return "" }, &out, &errb)
	if code != exitServer || !strings.Contains(errb.String(), "FAILED: setup did not succeed") {
		t.Fatalf("exit %d, stderr %q", code, errb.String())
	}
}
