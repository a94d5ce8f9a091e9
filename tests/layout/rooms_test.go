package layout

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// rooms are the packages below the node (package replica) that must not
// reach back up into it, and whose functions stay short enough to read in
// one pass.
var rooms = []string{"replica/consensus", "replica/partition"}

const maxFuncLines = 100

// TestRoomsNeverImportTheNode: go list -deps of each room holds no
// github.com/iggo/iggo/replica (the node package itself).
func TestRoomsNeverImportTheNode(t *testing.T) {
	const module = "github.com/iggo/iggo/"
	for _, room := range rooms {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+room)
		cmd.Dir = "../.."
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list %s: %v", room, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 5 {
			t.Fatalf("go list %s found only %d packages: the check would prove nothing", room, len(deps))
		}
		for _, d := range deps {
			if d == module+"replica" {
				t.Errorf("%s imports %s", room, d)
			}
		}
	}
}

// TestRoomsShortFunctions: no function or method in a room (tests
// excluded) spans more than maxFuncLines lines.
func TestRoomsShortFunctions(t *testing.T) {
	for _, room := range rooms {
		files, err := filepath.Glob(filepath.Join("../..", room, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: no Go files (%v)", room, err)
		}
		fset := token.NewFileSet()
		funcs := 0
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(fset, f, nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, d := range file.Decls {
				fn, ok := d.(*ast.FuncDecl)
				if !ok || fn.Body == nil {
					continue
				}
				funcs++
				lines := fset.Position(fn.End()).Line - fset.Position(fn.Pos()).Line + 1
				if lines > maxFuncLines {
					t.Errorf("%s: %s is %d lines (at most %d)", fset.Position(fn.Pos()), fn.Name.Name, lines, maxFuncLines)
				}
			}
		}
		if funcs < 10 {
			t.Fatalf("%s: only %d functions parsed: the check would prove nothing", room, funcs)
		}
	}
}
