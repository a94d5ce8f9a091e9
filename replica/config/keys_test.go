package config

import (
	"fmt"
	"go/ast"
	"go/token"
	"go/types"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/pelletier/go-toml/v2"
	"golang.org/x/tools/go/packages"
)

// schemaLeaf is one configuration key of the schema: its dotted path with
// array elements written "[]" (cluster.nodes[].ports.tcp), and the Go field
// that holds it (the struct type's name inside package config and the field
// name).
type schemaLeaf struct {
	key    string
	owner  string
	field  string
	fvalue reflect.StructField
}

// schemaLeaves walks Config and returns every leaf key.
func schemaLeaves() []schemaLeaf {
	var out []schemaLeaf
	var walk func(t reflect.Type, prefix string)
	walk = func(t reflect.Type, prefix string) {
		for i := 0; i < t.NumField(); i++ {
			f := t.Field(i)
			key := tomlKey(f)
			if !f.IsExported() || key == "" {
				continue
			}
			path := joinKey(prefix, key)
			switch {
			case isLeaf(f.Type):
				out = append(out, schemaLeaf{key: path, owner: t.Name(), field: f.Name, fvalue: f})
			case f.Type.Kind() == reflect.Struct:
				walk(f.Type, path)
			case f.Type.Kind() == reflect.Slice:
				walk(f.Type.Elem(), path+"[]")
			}
		}
	}
	walk(reflect.TypeFor[Config](), "")
	return out
}

// fieldRef names a struct field of package config.
type fieldRef struct{ owner, field string }

// funcRef names a function or method of package config (owner is the
// receiver's type name, empty for a plain function).
type funcRef struct{ owner, name string }

const configPkg = "github.com/iggo/iggo/replica/config"

// notAccessorFiles are the files of package config whose reads of a field
// say nothing about the server acting on it: validation, loading and the
// runtime file touch every key.
var notAccessorFiles = map[string]bool{"validate.go": true, "load.go": true, "runtime.go": true, "refuse.go": true}

// readFields loads every non-test package of the module with type
// information and returns the config fields the server reads: a field
// selected (x.Field, not as the target of an assignment) in non-test code
// outside package config, or inside a function of package config (outside
// validation, loading and the runtime file) that such code calls, directly
// or through other such functions.
func readFields(t *testing.T) map[fieldRef][]string {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// Only packages that depend on package config, directly or not, can
	// name its types: list the module with its imports first (cheap), then
	// type-check just those.
	list, err := packages.Load(&packages.Config{Mode: packages.NeedName | packages.NeedImports | packages.NeedDeps, Dir: root, Env: os.Environ()}, "./...")
	if err != nil {
		t.Fatalf("listing the module's packages: %v", err)
	}
	dependsOnConfig := map[string]bool{}
	var depends func(p *packages.Package) bool
	depends = func(p *packages.Package) bool {
		if v, ok := dependsOnConfig[p.PkgPath]; ok {
			return v
		}
		dependsOnConfig[p.PkgPath] = false
		v := p.PkgPath == configPkg
		for _, imp := range p.Imports {
			if depends(imp) {
				v = true
			}
		}
		dependsOnConfig[p.PkgPath] = v
		return v
	}
	var patterns []string
	for _, p := range list {
		if depends(p) {
			patterns = append(patterns, p.PkgPath)
		}
	}
	if len(patterns) < 3 {
		t.Fatalf("only %v depend on %s: the listing is broken", patterns, configPkg)
	}
	cfg := &packages.Config{
		Mode: packages.NeedName | packages.NeedFiles | packages.NeedSyntax | packages.NeedTypes | packages.NeedTypesInfo,
		Dir:  root,
		Env:  os.Environ(),
	}
	pkgs, err := packages.Load(cfg, patterns...)
	if err != nil {
		t.Fatalf("loading the module's packages: %v", err)
	}
	if packages.PrintErrors(pkgs) > 0 {
		t.Fatal("the module's packages do not type-check")
	}
	reads := map[fieldRef][]string{}
	// Inside package config: what each accessor function selects and calls.
	innerFields := map[funcRef][]fieldRef{}
	innerCalls := map[funcRef][]funcRef{}
	var roots []funcRef
	for _, p := range pkgs {
		inConfig := p.PkgPath == configPkg
		for _, file := range p.Syntax {
			name := p.Fset.Position(file.Pos()).Filename
			if strings.HasSuffix(name, "_test.go") {
				continue
			}
			base := filepath.Base(name)
			if inConfig && notAccessorFiles[base] {
				continue
			}
			assigned := assignedSelectors(file)
			ast.Inspect(file, func(n ast.Node) bool {
				fd, ok := n.(*ast.FuncDecl)
				if !ok {
					return true
				}
				self := funcRef{name: fd.Name.Name}
				if fd.Recv != nil && len(fd.Recv.List) == 1 {
					self.owner = recvName(fd.Recv.List[0].Type)
				}
				ast.Inspect(fd, func(n ast.Node) bool {
					switch x := n.(type) {
					case *ast.SelectorExpr:
						if assigned[x] {
							return true
						}
						sel := p.TypesInfo.Selections[x]
						if sel == nil {
							return true
						}
						owner, pkg := namedOf(sel.Recv())
						if pkg != configPkg {
							return true
						}
						switch sel.Kind() {
						case types.FieldVal:
							fr := fieldRef{owner, sel.Obj().Name()}
							if inConfig {
								innerFields[self] = append(innerFields[self], fr)
							} else {
								pos := p.Fset.Position(x.Pos())
								reads[fr] = append(reads[fr], fmt.Sprintf("%s:%d", relPath(root, pos.Filename), pos.Line))
							}
						case types.MethodVal:
							fr := funcRef{owner, sel.Obj().Name()}
							if inConfig {
								innerCalls[self] = append(innerCalls[self], fr)
							} else {
								roots = append(roots, fr)
							}
						}
					case *ast.Ident:
						obj, ok := p.TypesInfo.Uses[x].(*types.Func)
						if !ok || obj.Pkg() == nil || obj.Pkg().Path() != configPkg {
							return true
						}
						if sig, _ := obj.Type().(*types.Signature); sig != nil && sig.Recv() != nil {
							return true // methods are handled as selections
						}
						fr := funcRef{name: obj.Name()}
						if inConfig {
							innerCalls[self] = append(innerCalls[self], fr)
						} else {
							roots = append(roots, fr)
						}
					}
					return true
				})
				return false
			})
		}
	}
	seen := map[funcRef]bool{}
	for len(roots) > 0 {
		f := roots[len(roots)-1]
		roots = roots[:len(roots)-1]
		if seen[f] {
			continue
		}
		seen[f] = true
		for _, fr := range innerFields[f] {
			reads[fr] = append(reads[fr], "config."+f.String())
		}
		roots = append(roots, innerCalls[f]...)
	}
	return reads
}

func (f funcRef) String() string {
	if f.owner == "" {
		return f.name
	}
	return f.owner + "." + f.name
}

func relPath(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return r
	}
	return p
}

// assignedSelectors are the selector expressions written to (x.F = v,
// x.F++), which do not count as reads.
func assignedSelectors(file *ast.File) map[*ast.SelectorExpr]bool {
	out := map[*ast.SelectorExpr]bool{}
	ast.Inspect(file, func(n ast.Node) bool {
		switch s := n.(type) {
		case *ast.AssignStmt:
			if s.Tok == token.DEFINE {
				return true
			}
			for _, l := range s.Lhs {
				if sel, ok := l.(*ast.SelectorExpr); ok {
					out[sel] = true
				}
			}
		case *ast.IncDecStmt:
			if sel, ok := s.X.(*ast.SelectorExpr); ok {
				out[sel] = true
			}
		}
		return true
	})
	return out
}

func recvName(e ast.Expr) string {
	switch x := e.(type) {
	case *ast.StarExpr:
		return recvName(x.X)
	case *ast.Ident:
		return x.Name
	case *ast.IndexExpr:
		return recvName(x.X)
	}
	return ""
}

func namedOf(t types.Type) (name, pkg string) {
	for {
		p, ok := t.(*types.Pointer)
		if !ok {
			break
		}
		t = p.Elem()
	}
	n, ok := types.Unalias(t).(*types.Named)
	if !ok || n.Obj().Pkg() == nil {
		return "", ""
	}
	return n.Obj().Name(), n.Obj().Pkg().Path()
}

// defaultKeys lists every key the shipped default.toml sets, with array
// elements written "[]".
func defaultKeys(t *testing.T) []string {
	var doc map[string]any
	if err := toml.Unmarshal(DefaultTOML(), &doc); err != nil {
		t.Fatal(err)
	}
	set := map[string]bool{}
	var walk func(v any, prefix string, schema reflect.Type)
	walk = func(v any, prefix string, schema reflect.Type) {
		switch x := v.(type) {
		case map[string]any:
			if schema != nil && isLeaf(schema) {
				set[prefix] = true
				return
			}
			for k, child := range x {
				var ft reflect.Type
				if schema != nil {
					if f, ok := fieldByKey(derefStruct(schema), k); ok {
						ft = f.Type
					}
				}
				walk(child, joinKey(prefix, k), ft)
			}
		case []any:
			if len(x) > 0 {
				if _, ok := x[0].(map[string]any); ok {
					var et reflect.Type
					if schema != nil && schema.Kind() == reflect.Slice {
						et = schema.Elem()
					}
					for _, item := range x {
						walk(item, prefix+"[]", et)
					}
					return
				}
			}
			set[prefix] = true
		default:
			set[prefix] = true
		}
	}
	walk(doc, "", reflect.TypeFor[Config]())
	keys := make([]string, 0, len(set))
	for k := range set {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func derefStruct(t reflect.Type) reflect.Type {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	return t
}

// TestEveryKeyHonouredOrRefused walks every key of the schema (which
// includes every key of the shipped default.toml, checked first) and fails
// for a key that the server neither reads nor refuses: the field must be
// read by non-test code outside package config (found with go/packages and
// go/types, not a hand-kept list), or the key must be on the refusal table
// (Refused), whose every entry is proven here to make LoadFrom fail with a
// problem naming the key when set to a non-default value, or sit under a
// gate (Gated) whose own key is refused.
func TestEveryKeyHonouredOrRefused(t *testing.T) {
	leaves := schemaLeaves()
	byKey := map[string]schemaLeaf{}
	for _, l := range leaves {
		byKey[l.key] = l
	}
	for _, k := range defaultKeys(t) {
		if _, ok := byKey[k]; !ok {
			t.Errorf("default.toml sets %s, which the schema does not have", k)
		}
	}

	refused := map[string]Refusal{}
	for _, r := range Refused {
		if _, ok := byKey[r.Key]; !ok {
			t.Errorf("Refused names %s, which the schema does not have", r.Key)
		}
		refused[r.Key] = r
		checkRefusal(t, r)
	}
	for _, g := range Gated {
		if _, ok := refused[g.Gate]; !ok {
			t.Errorf("Gated: %s is gated by %s, which is no longer refused: the keys under it must now be read by the server (then drop the gate)", g.Prefix, g.Gate)
		}
	}

	reads := readFields(t)
	// Anti-vacuity: reads the analysis must see, through a call into this
	// package's accessors, and one it must not count (validation only).
	for fr, file := range map[fieldRef]string{
		{"LoggingConfig", "Retention"}:      "replica/logging.go",
		{"EncryptionConfig", "Key"}:         "replica/atrest.go",
		{"ShardingConfig", "InboxCapacity"}: "config.ShardingConfig.RuntimeConfig",
	} {
		if !slices.ContainsFunc(reads[fr], func(w string) bool { return strings.HasPrefix(w, file) }) {
			t.Errorf("the analysis misses the read of %s.%s in %s (found %v)", fr.owner, fr.field, file, reads[fr])
		}
	}
	if w := reads[fieldRef{"PartitionConfig", "DedupClientsMax"}]; !slices.ContainsFunc(w, func(w string) bool { return strings.HasPrefix(w, "replica/node.go") }) {
		t.Errorf("partition.dedup_clients_max must be read by the partition groups' config (replica/node.go): %v", w)
	}
	var honoured, refusedN, gatedN int
	for _, l := range leaves {
		where, read := reads[fieldRef{l.owner, l.field}]
		_, isRefused := refused[l.key]
		gate, isGated := gateOf(l.key)
		switch {
		case read && isRefused:
			// A key the server reads may still refuse values it cannot
			// serve.
			honoured++
		case read:
			honoured++
		case isRefused:
			refusedN++
		case isGated:
			gatedN++
			_ = gate
		default:
			t.Errorf("%s (%s.%s) is accepted and ignored: no non-test code outside replica/config reads it and it is not refused (add it to Refused with the reason, or honour it)", l.key, l.owner, l.field)
		}
		if testing.Verbose() {
			switch {
			case read:
				t.Logf("honoured %-55s %s", l.key, where[0])
			case isRefused:
				t.Logf("refused  %-55s unless %v", l.key, defaultValue(t, l.key))
			case isGated:
				t.Logf("gated    %-55s by %s", l.key, gate)
			}
		}
	}
	t.Logf("%d keys: %d honoured, %d refused unless default, %d inert behind a refused gate", len(leaves), honoured, refusedN, gatedN)
	if honoured == 0 || refusedN == 0 {
		t.Fatal("the walk classified nothing: the analysis is broken")
	}
}

// checkRefusal proves one refusal: loading with the key set to a
// non-default value (through its IGGY_* variable) fails naming the key,
// while the default loads.
func checkRefusal(t *testing.T, r Refusal) {
	t.Helper()
	env := []string{envName(r.Key) + "=" + r.Probe}
	_, _, err := LoadFrom("", env)
	if err == nil {
		t.Errorf("%s = %s is on the refusal table, but loads", r.Key, r.Probe)
		return
	}
	if !strings.Contains(err.Error(), r.Key+": ") {
		t.Errorf("%s = %s refuses, but the message does not name the key: %v", r.Key, r.Probe, err)
	}
	if r.Reason == "" || !strings.Contains(err.Error(), r.Reason) {
		t.Errorf("%s: the refusal does not say why (%q): %v", r.Key, r.Reason, err)
	}
}

// envName is the IGGY_* variable of a key (array elements are index 0).
func envName(key string) string {
	k := strings.ReplaceAll(key, "[]", ".0")
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(k, ".", "_"))
}

func gateOf(key string) (string, bool) {
	for _, g := range Gated {
		if key == g.Prefix || strings.HasPrefix(key, g.Prefix+".") {
			return g.Gate, true
		}
	}
	return "", false
}

func defaultValue(t *testing.T, key string) any {
	v, ok := fieldAt(reflect.ValueOf(Default()).Elem(), key)
	if !ok {
		t.Fatalf("no field for %s", key)
	}
	if v.Kind() == reflect.Pointer && v.IsNil() {
		return "unset"
	}
	return v.Interface()
}
