package controller_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestWorkqueueNamesPinned reads, from the source, every name a controller passes to
// setup.Queue or setup.TypedQueue, default controllers or not: each is upstream's
// (upstreamQueues) or one of kcm's own (kcmOnlyQueues), and every kcmOnlyQueues entry is still
// used. README.md's monitoring section tells dashboards what to read for each upstream queue
// kcm does not have (a row of its table) and names each of kcm's own.
func TestWorkqueueNamesPinned(t *testing.T) {
	names := sourceQueueNames(t)
	if len(names) == 0 {
		t.Fatal("found no setup.Queue call under internal/controller")
	}
	for name, where := range names {
		if _, ok := upstreamQueues[name]; !ok && !slices.Contains(kcmOnlyQueues, name) {
			t.Errorf("%s names its work queue %q: neither upstream's (upstreamQueues) nor in kcmOnlyQueues", where, name)
		}
	}
	for _, q := range kcmOnlyQueues {
		if _, ok := names[q]; !ok {
			t.Errorf("kcmOnlyQueues lists %q, which no controller passes to setup.Queue", q)
		}
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for q := range upstreamQueues {
		_, used := names[q]
		row := strings.Contains(string(readme), "\n| `"+q+"` |")
		switch {
		case !used && !row:
			t.Errorf("upstream's queue %q has no kcm queue and no row in README.md's table of what to read instead", q)
		case used && row:
			t.Errorf("README.md's table says upstream's queue %q has no kcm queue, but kcm names one so", q)
		}
	}
	for _, q := range kcmOnlyQueues {
		if !strings.Contains(string(readme), "`"+q+"`") {
			t.Errorf("README.md does not name kcm's own queue %q", q)
		}
	}
}

// sourceQueueNames maps each queue name passed to setup.Queue or setup.TypedQueue in the
// controller packages to where it is passed. A name is a string literal, a package-level
// string constant, or a sum of those.
func sourceQueueNames(t *testing.T) map[string]string {
	t.Helper()
	dirs, err := filepath.Glob("*")
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]string{}
	fset := token.NewFileSet()
	for _, dir := range dirs {
		if info, err := os.Stat(dir); err != nil || !info.IsDir() {
			continue
		}
		pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			consts := map[string]ast.Expr{}
			for _, f := range pkg.Files {
				for _, decl := range f.Decls {
					if g, ok := decl.(*ast.GenDecl); ok && g.Tok == token.CONST {
						for _, spec := range g.Specs {
							v := spec.(*ast.ValueSpec)
							for i, n := range v.Names {
								if i < len(v.Values) {
									consts[n.Name] = v.Values[i]
								}
							}
						}
					}
				}
			}
			var eval func(ast.Expr) (string, bool)
			eval = func(e ast.Expr) (string, bool) {
				switch e := e.(type) {
				case *ast.BasicLit:
					s, err := strconv.Unquote(e.Value)
					return s, err == nil
				case *ast.Ident:
					if v, ok := consts[e.Name]; ok {
						return eval(v)
					}
				case *ast.BinaryExpr:
					l, lok := eval(e.X)
					r, rok := eval(e.Y)
					return l + r, lok && rok && e.Op == token.ADD
				}
				return "", false
			}
			for _, f := range pkg.Files {
				ast.Inspect(f, func(n ast.Node) bool {
					call, ok := n.(*ast.CallExpr)
					if !ok || len(call.Args) != 1 {
						return true
					}
					fun := call.Fun
					if idx, ok := fun.(*ast.IndexExpr); ok {
						fun = idx.X
					}
					sel, ok := fun.(*ast.SelectorExpr)
					if !ok || (sel.Sel.Name != "Queue" && sel.Sel.Name != "TypedQueue") {
						return true
					}
					if x, ok := sel.X.(*ast.Ident); !ok || x.Name != "setup" {
						return true
					}
					where := fset.Position(call.Pos()).String()
					name, ok := eval(call.Args[0])
					if !ok {
						t.Errorf("%s: the queue name is not a string constant this test can read", where)
						return true
					}
					names[name] = where
					return true
				})
			}
		}
	}
	return names
}
