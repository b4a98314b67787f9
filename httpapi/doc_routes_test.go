package httpapi

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestDocListsEveryRoute: the package doc's endpoint tables name every
// route the handler serves, and no other: each "METHOD /path" given to
// ServeMux in the package's code is a line of a table in doc.go.
func TestDocListsEveryRoute(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	pattern := regexp.MustCompile(`HandleFunc\("((?:GET|POST|PUT|DELETE|PATCH) /[^"]*)"`)
	var served []string
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range pattern.FindAllStringSubmatch(string(src), -1) {
			served = append(served, m[1])
		}
	}
	doc, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	line := regexp.MustCompile(`(?m)^//\t(GET|POST|PUT|DELETE|PATCH) +(/[^ ?]*)`)
	var documented []string
	for _, m := range line.FindAllStringSubmatch(string(doc), -1) {
		documented = append(documented, m[1]+" "+m[2])
	}
	slices.Sort(served)
	slices.Sort(documented)
	if len(served) < 20 {
		t.Fatalf("found only %d routes in the code: %q", len(served), served)
	}
	for _, r := range served {
		if !slices.Contains(documented, r) {
			t.Errorf("route %s is served but not in the package doc's tables", r)
		}
	}
	for _, r := range documented {
		if !slices.Contains(served, r) {
			t.Errorf("the package doc lists %s, which is not served", r)
		}
	}
}
