package stepwise

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// internalPackages are packages under internal/ whose types a public
// API could be tempted to show: it shows none (nor any other internal
// package's, which the compiler would refuse to callers anyway).
var internalPackages = []string{"engine", "store", "service", "mcpserver", "action", "workflow", "secret"}

// TestAPIShowsNoInternalType reads the package's source: no exported
// function, method, type or exported field mentions a type of an
// internal package.
func TestAPIShowsNoInternalType(t *testing.T) {
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		internal := map[string]bool{} // local import names of internal packages
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, p := range internalPackages {
				if path == "stepwise.dev/stepwise/"+p {
					local := p
					if imp.Name != nil {
						local = imp.Name.Name
					}
					internal[local] = true
				}
			}
		}
		check := func(where string, n ast.Node) {
			checked++
			ast.Inspect(n, func(n ast.Node) bool {
				if sel, ok := n.(*ast.SelectorExpr); ok {
					if id, ok := sel.X.(*ast.Ident); ok && internal[id.Name] {
						t.Errorf("%s: %s shows %s.%s", fset.Position(n.Pos()), where, id.Name, sel.Sel.Name)
					}
				}
				return true
			})
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Name.IsExported() && (d.Recv == nil || exportedRecv(d.Recv)) {
					check(d.Name.Name, d.Type)
				}
			case *ast.GenDecl:
				for _, spec := range d.Specs {
					ts, ok := spec.(*ast.TypeSpec)
					if !ok || !ts.Name.IsExported() {
						continue
					}
					st, ok := ts.Type.(*ast.StructType)
					if !ok {
						check(ts.Name.Name, ts.Type)
						continue
					}
					for _, field := range st.Fields.List {
						for _, n := range field.Names {
							if n.IsExported() {
								check(ts.Name.Name+"."+n.Name, field.Type)
							}
						}
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d declarations: the test reads the wrong files", checked)
	}
}

func exportedRecv(r *ast.FieldList) bool {
	typ := r.List[0].Type
	if star, ok := typ.(*ast.StarExpr); ok {
		typ = star.X
	}
	id, ok := typ.(*ast.Ident)
	return ok && id.IsExported()
}
