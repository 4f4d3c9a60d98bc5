package locktorture_test

import (
	"bufio"
	"encoding/json"
	"go/ast"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"io"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
)

// docOrder is the file order doc.go gives: its "- name.go:" lines (a line
// may name several files, "- a.go, b.go: ...").
func docOrder(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	item := regexp.MustCompile(`^//\s+- ([a-z_]+\.go(?:, [a-z_]+\.go)*):`)
	var order []string
	for _, line := range strings.Split(string(b), "\n") {
		if m := item.FindStringSubmatch(line); m != nil {
			order = append(order, strings.Split(m[1], ", ")...)
		}
	}
	if len(order) == 0 {
		t.Fatal("doc.go lists no file order")
	}
	return order
}

// exportData maps each import path of the package's dependencies to its
// compiled export data, as the go command builds it.
func exportData(t *testing.T) map[string]string {
	t.Helper()
	out, err := exec.Command("go", "list", "-export", "-deps", "-json=ImportPath,Export", ".").Output()
	if err != nil {
		t.Fatalf("go list -export: %v", err)
	}
	paths := map[string]string{}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p struct{ ImportPath, Export string }
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		paths[p.ImportPath] = p.Export
	}
	return paths
}

// TestFileOrder: every file of the root package uses only what the files
// before it in doc.go's order declare (its names, and the methods and
// fields of its types), so the package reads top to bottom; and doc.go
// names every file, each once.
func TestFileOrder(t *testing.T) {
	order := docOrder(t)
	rank := map[string]int{}
	for i, f := range order {
		if _, dup := rank[f]; dup {
			t.Errorf("doc.go names %s twice", f)
		}
		rank[f] = i
	}
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, ".", func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, f := range pkgs["locktorture"].Files {
		name := fset.Position(f.Package).Filename
		if _, ok := rank[name]; !ok && name != "doc.go" {
			t.Errorf("doc.go's order does not name %s", name)
		}
		files = append(files, f)
	}
	exports := exportData(t)
	imp := importer.ForCompiler(fset, "gc", func(path string) (io.ReadCloser, error) {
		f, err := os.Open(exports[path])
		if err != nil {
			return nil, err
		}
		return struct {
			io.Reader
			io.Closer
		}{bufio.NewReader(f), f}, nil
	})
	info := &types.Info{Uses: map[*ast.Ident]types.Object{}, Selections: map[*ast.SelectorExpr]*types.Selection{}}
	pkg, err := (&types.Config{Importer: imp}).Check("github.com/locktorture/locktorture", fset, files, info)
	if err != nil {
		t.Fatal(err)
	}
	later := func(at token.Pos, obj types.Object) {
		if obj == nil || obj.Pkg() != pkg || !obj.Pos().IsValid() {
			return
		}
		use, decl := fset.Position(at).Filename, fset.Position(obj.Pos()).Filename
		if rank[decl] > rank[use] {
			t.Errorf("%s uses %s, which %s declares, later in doc.go's order", fset.Position(at), obj.Name(), decl)
		}
	}
	for id, obj := range info.Uses {
		later(id.Pos(), obj)
	}
	for sel, s := range info.Selections {
		later(sel.Sel.Pos(), s.Obj())
	}
}
