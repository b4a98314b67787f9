// Command funclen lists the functions of the module that are longer than
// a threshold, counting the lines from the func keyword to the closing
// brace. Test files are skipped, and so are directories whose name starts
// with '.' or '_', testdata directories and other modules (a directory
// below the root with a go.mod of its own).
//
//	go run ./.ci/funclen [-max 120] [dir]
//
// It prints one offender a line, longest first, and exits with status 1
// when there is one.
package main

import (
	"cmp"
	"flag"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// offender is a function longer than the threshold.
type offender struct {
	pos   token.Position
	name  string
	lines int
}

func main() {
	maxLines := flag.Int("max", 120, "the most lines a non-test function may span")
	flag.Parse()
	root := "."
	if flag.NArg() > 0 {
		root = flag.Arg(0)
	}
	found, err := scan(root, *maxLines)
	if err != nil {
		fmt.Fprintln(os.Stderr, "funclen:", err)
		os.Exit(2)
	}
	for _, o := range found {
		fmt.Printf("%s:%d: %s is %d lines (more than %d)\n", o.pos.Filename, o.pos.Line, o.name, o.lines, *maxLines)
	}
	if len(found) > 0 {
		os.Exit(1)
	}
}

// scan returns the functions in the non-test Go files under root that
// span more than maxLines lines, longest first.
func scan(root string, maxLines int) ([]offender, error) {
	fset := token.NewFileSet()
	var found []offender
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && skipDir(path, d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		for _, decl := range f.Decls {
			fn, ok := decl.(*ast.FuncDecl)
			if !ok || fn.Body == nil {
				continue
			}
			start := fset.Position(fn.Pos())
			n := fset.Position(fn.End()).Line - start.Line + 1
			if n > maxLines {
				found = append(found, offender{pos: start, name: funcName(fn), lines: n})
			}
		}
		return nil
	})
	slices.SortStableFunc(found, func(a, b offender) int { return cmp.Compare(b.lines, a.lines) })
	return found, err
}

// skipDir reports whether the walk leaves out the directory at path: the
// go tool's ./... pattern leaves out the same ones, and another module is
// checked on its own.
func skipDir(path, name string) bool {
	if strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "node_modules" {
		return true
	}
	_, err := os.Stat(filepath.Join(path, "go.mod"))
	return err == nil
}

// funcName is fn's name, with its receiver's type for a method.
func funcName(fn *ast.FuncDecl) string {
	if fn.Recv == nil || len(fn.Recv.List) == 0 {
		return fn.Name.Name
	}
	t := fn.Recv.List[0].Type
	if star, ok := t.(*ast.StarExpr); ok {
		t = star.X
	}
	switch r := t.(type) {
	case *ast.IndexExpr:
		t = r.X
	case *ast.IndexListExpr:
		t = r.X
	}
	if id, ok := t.(*ast.Ident); ok {
		return id.Name + "." + fn.Name.Name
	}
	return fn.Name.Name
}
