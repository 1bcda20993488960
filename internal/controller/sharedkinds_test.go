package controller

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	"github.com/kcm/kcm/internal/controller/garbagecollector"
	"github.com/kcm/kcm/internal/setup"
)

// notShared are kinds a controller keeps whole in the shared cache that the garbage
// collector still watches apart, each with why.
var notShared = map[string]string{}

// Every built-in kind a controller keeps whole in the shared cache (the typed object of a
// For, Owns or Watches in its source) is one the garbage collector watches through that
// cache, unless the cache restricts it: otherwise the API server serves it twice and kcm
// holds two copies of each object (issue 39: VolumeAttributesClass, StorageVersionMigration,
// PodCertificateRequest and DeviceTaintRule were). The kinds are read from the controllers'
// source, so a new controller's kind cannot be forgotten.
func TestCollectorSharesEveryKeptKind(t *testing.T) {
	// Kinds by Go package path and type name.
	byType := map[string]schema.GroupVersionKind{}
	for gvk, typ := range clientgoscheme.Scheme.AllKnownTypes() {
		if gvk.Version == "__internal" {
			continue
		}
		byType[typ.PkgPath()+"."+typ.Name()] = gvk
	}
	restricted := map[schema.GroupVersionKind]bool{}
	for obj := range setup.CacheRestrictions(Registry()) {
		gvks, _, err := clientgoscheme.Scheme.ObjectKinds(obj)
		if err != nil {
			t.Fatal(err)
		}
		for _, gvk := range gvks {
			restricted[gvk] = true
		}
	}
	kept := map[schema.GroupVersionKind]string{}
	files, err := filepath.Glob("*/*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly|parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		imports := map[string]string{}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			alias := path[strings.LastIndex(path, "/")+1:]
			if imp.Name != nil {
				alias = imp.Name.Name
			}
			imports[alias] = path
		}
		f, err = parser.ParseFile(fset, name, src, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			if !ok || (sel.Sel.Name != "For" && sel.Sel.Name != "Owns" && sel.Sel.Name != "Watches") {
				return true
			}
			addr, ok := call.Args[0].(*ast.UnaryExpr)
			if !ok || addr.Op != token.AND {
				return true
			}
			lit, ok := addr.X.(*ast.CompositeLit)
			if !ok {
				return true
			}
			typ, ok := lit.Type.(*ast.SelectorExpr)
			if !ok {
				return true
			}
			pkg, ok := typ.X.(*ast.Ident)
			if !ok {
				return true
			}
			if gvk, ok := byType[imports[pkg.Name]+"."+typ.Sel.Name]; ok {
				kept[gvk] = name
			}
			return true
		})
	}
	if len(kept) < 10 {
		t.Fatalf("found only %d kinds in the controllers' For/Owns/Watches: the scan is broken", len(kept))
	}
	for gvk, where := range kept {
		if restricted[gvk] || garbagecollector.SharesKind(gvk) {
			continue
		}
		if _, ok := notShared[gvk.String()]; ok {
			continue
		}
		t.Errorf("%s: %s keeps it whole in the shared cache, and the garbage collector watches it apart (add it to sharedKinds)", gvk, where)
	}
}
