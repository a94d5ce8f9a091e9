package wire

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// iggyPollBody is a poll body as Iggy's SDKs write it: nothing after
// auto_commit.
func iggyPollBody(t *testing.T) []byte {
	t.Helper()
	b, err := (&PollMessages{Consumer: GroupConsumer(NumericID(3)), StreamID: NumericID(1), TopicID: MustNamedID("orders"),
		Partition: SomePartition(2), Strategy: PollFromOffset(77), Count: 10, AutoCommit: true}).AppendBody(nil)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestPollWaitExtension(t *testing.T) {
	base := iggyPollBody(t)
	var plain PollMessages
	if err := plain.DecodeBody(base); err != nil {
		t.Fatal(err)
	}
	if plain.WaitMillis != 0 {
		t.Fatalf("an Iggy body decoded with WaitMillis %d", plain.WaitMillis)
	}
	again, _ := plain.AppendBody(nil)
	if !bytes.Equal(again, base) {
		t.Fatalf("an Iggy body re-encodes differently:\n got %x\nwant %x", again, base)
	}

	with := plain
	with.WaitMillis = 1500
	ext, err := with.AppendBody(nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(ext) != len(base)+PollWaitExtSize || !bytes.Equal(ext[:len(base)], base) {
		t.Fatalf("extension is not the Iggy body plus %d bytes: %x", PollWaitExtSize, ext)
	}
	if tail := ext[len(base):]; tail[0] != 'W' || binary.LittleEndian.Uint32(tail[1:]) != 1500 {
		t.Fatalf("extension bytes %x", tail)
	}
	var got PollMessages
	if err := got.DecodeBody(ext); err != nil || got != with {
		t.Fatalf("decoded %+v (%v), want %+v", got, err, with)
	}

	refused := map[string][]byte{
		"one trailing byte":      append(bytes.Clone(base), 'W'),
		"short wait":             append(bytes.Clone(base), 'W', 1, 0, 0),
		"other tag":              append(bytes.Clone(base), 'X', 1, 0, 0, 0),
		"zero wait":              append(bytes.Clone(base), 'W', 0, 0, 0, 0),
		"bytes after the wait":   append(bytes.Clone(ext), 0),
		"two extensions":         append(bytes.Clone(ext), ext[len(base):]...),
		"tag zero (old garbage)": append(bytes.Clone(base), 0, 0, 0, 0, 0),
	}
	for name, b := range refused {
		var r PollMessages
		err := r.DecodeBody(b)
		if err == nil {
			t.Errorf("%s: accepted (%+v)", name, r)
			continue
		}
		if code, ok := CodeOf(err); !ok || code != CodeInvalidCommand {
			t.Errorf("%s: error %v, want InvalidCommand", name, err)
		}
	}
}

// FuzzPollWaitBody: any tail after an Iggy poll body either decodes as the
// wait extension (exactly 5 bytes, tag 'W', wait > 0, re-encoding to the
// same bytes) or is refused; the Iggy part never changes meaning.
func FuzzPollWaitBody(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{'W', 0x10, 0x27, 0, 0})
	f.Add([]byte{'W', 0, 0, 0, 0})
	f.Add([]byte{'W', 1, 0, 0, 0, 0})
	f.Add([]byte{0})
	f.Fuzz(func(t *testing.T, tail []byte) {
		base := iggyPollBody(&testing.T{})
		var plain PollMessages
		if err := plain.DecodeBody(base); err != nil {
			t.Fatal(err)
		}
		b := append(bytes.Clone(base), tail...)
		var r PollMessages
		err := r.DecodeBody(b)
		if err != nil {
			requireCoded(t, err)
			ok := len(tail) == PollWaitExtSize && tail[0] == PollWaitTag && binary.LittleEndian.Uint32(tail[1:]) != 0
			if ok || len(tail) == 0 {
				t.Fatalf("valid tail %x refused: %v", tail, err)
			}
			return
		}
		if len(tail) == 0 {
			if r != plain {
				t.Fatalf("empty tail changed the poll: %+v", r)
			}
			return
		}
		if len(tail) != PollWaitExtSize || r.WaitMillis == 0 {
			t.Fatalf("tail %x accepted as wait %d", tail, r.WaitMillis)
		}
		want := plain
		want.WaitMillis = r.WaitMillis
		if r != want {
			t.Fatalf("the extension changed Iggy's fields: %+v", r)
		}
		again, _ := r.AppendBody(nil)
		if !bytes.Equal(again, b) {
			t.Fatalf("re-encoding differs: %x vs %x", again, b)
		}
	})
}
