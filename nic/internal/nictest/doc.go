package nictest

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/uiod/uiod/nic"
)

// DocumentsPort fails unless go doc of the package in the current directory lists, on
// its type Port, every nic.Port method and the extra methods named: a driver's API must
// be readable from its own documentation, not hidden in an embedded internal type.
func DocumentsPort(t *testing.T, extra ...string) {
	t.Helper()
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".go") || strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "driver")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, typ := range pkg.Types {
		if typ.Name == "Port" {
			for _, m := range typ.Methods {
				listed[m.Name] = m.Doc != ""
			}
		}
	}
	want := extra
	port := reflect.TypeFor[nic.Port]()
	for i := 0; i < port.NumMethod(); i++ {
		want = append(want, port.Method(i).Name)
	}
	for _, m := range want {
		documented, ok := listed[m]
		switch {
		case !ok:
			t.Errorf("go doc lists no method %s on %s.Port", m, pkg.Name)
		case !documented:
			t.Errorf("%s.(*Port).%s has no doc comment", pkg.Name, m)
		}
	}
}
