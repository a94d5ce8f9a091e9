package check

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/iggo/iggo/internal/chaos/history"
	"github.com/iggo/iggo/wire"
)

// md records one metadata operation: outcome "ok" (with id >= 0 for
// create/get), "exists", "missing", "info" or "transient".
func (b *builder) md(p int, k history.Kind, name string, outcome string, id int) {
	a := history.Value{Name: name}
	if k == history.CreateTopic || k == history.DeleteTopic || k == history.GetTopic {
		a.Stream = "md"
	}
	b.invoke(p, k, a)
	exists, missing := wire.CodeStreamNameAlreadyExists, wire.CodeStreamIdNotFound
	if a.Stream != "" {
		exists, missing = wire.CodeTopicNameAlreadyExists, wire.CodeTopicIdNotFound
	}
	switch outcome {
	case "ok":
		v := history.Value{}
		if id >= 0 {
			v.ID = history.U32(uint32(id))
		}
		b.ok(p, k, 0, v)
	case "exists":
		b.fail(p, k, int(exists))
	case "missing":
		b.fail(p, k, int(missing))
	case "transient":
		b.fail(p, k, int(wire.CodeTransientNotAccepted))
	default:
		b.info(p, k)
	}
}

func mdMeta() history.Meta { return meta(1, 0) }

func TestMetadataValid(t *testing.T) {
	b := &builder{}
	b.md(0, history.GetStream, "a", "missing", -1)
	b.md(0, history.CreateStream, "a", "ok", 1)
	b.md(1, history.CreateStream, "a", "exists", -1)
	b.md(1, history.GetStream, "a", "ok", 1)
	b.md(0, history.DeleteStream, "a", "ok", -1)
	b.md(1, history.DeleteStream, "a", "missing", -1)
	b.md(1, history.CreateStream, "a", "transient", -1) // proves nothing
	b.md(0, history.CreateStream, "a", "ok", 2)
	b.md(0, history.GetStream, "a", "ok", 2)
	b.md(0, history.CreateTopic, "a", "ok", 0) // a topic named like the stream: another key
	b.md(0, history.GetTopic, "a", "ok", 0)
	expect(t, Check(mdMeta(), b.events, Options{}))
}

func TestMetadataUnknownCreateMayApplyLate(t *testing.T) {
	b := &builder{}
	b.md(0, history.CreateStream, "a", "info", -1)
	b.md(1, history.GetStream, "a", "missing", -1)
	b.md(1, history.GetStream, "a", "ok", 7)
	b.md(1, history.GetStream, "a", "ok", 7)
	b.md(1, history.CreateStream, "a", "exists", -1)
	expect(t, Check(mdMeta(), b.events, Options{}))
}

func TestMetadataUnknownDeleteMayNeverApply(t *testing.T) {
	b := &builder{}
	b.md(0, history.CreateTopic, "x", "ok", 3)
	b.md(0, history.DeleteTopic, "x", "info", -1)
	b.md(1, history.GetTopic, "x", "ok", 3)
	b.md(1, history.GetTopic, "x", "missing", -1)
	expect(t, Check(mdMeta(), b.events, Options{}))
}

func TestMetadataViolations(t *testing.T) {
	cases := map[string]func(b *builder){
		"lost create": func(b *builder) {
			b.md(0, history.CreateStream, "a", "ok", 1)
			b.md(0, history.GetStream, "a", "missing", -1)
		},
		"double create": func(b *builder) {
			b.md(0, history.CreateStream, "a", "ok", 1)
			b.md(1, history.CreateStream, "a", "ok", 2)
		},
		"read after delete": func(b *builder) {
			b.md(0, history.CreateTopic, "t", "ok", 1)
			b.md(0, history.DeleteTopic, "t", "ok", -1)
			b.md(1, history.GetTopic, "t", "ok", 1)
		},
		"wrong id": func(b *builder) {
			b.md(0, history.CreateStream, "a", "ok", 1)
			b.md(1, history.GetStream, "a", "ok", 2)
		},
		"exists but never created": func(b *builder) {
			b.md(1, history.CreateStream, "a", "exists", -1)
		},
		"stale read after unknown create was observed": func(b *builder) {
			b.md(0, history.CreateStream, "a", "info", -1)
			b.md(1, history.GetStream, "a", "ok", 5)
			b.md(1, history.GetStream, "a", "missing", -1)
		},
	}
	for name, build := range cases {
		t.Run(name, func(t *testing.T) {
			b := &builder{}
			b.md(5, history.CreateStream, "unrelated", "ok", 9)
			build(b)
			r := Check(mdMeta(), b.events, Options{})
			expect(t, r, MetadataLinear)
			if r.Illegal[MetadataLinear] == nil {
				t.Fatal("no evidence kept")
			}
			files, err := r.WriteVisualizations(t.TempDir())
			if err != nil || len(files) != 1 {
				t.Fatalf("visualization: %v %v", files, err)
			}
			if st, err := os.Stat(files[0]); err != nil || st.Size() == 0 || filepath.Ext(files[0]) != ".html" {
				t.Errorf("visualization file %v: %v", files[0], err)
			}
		})
	}
}
