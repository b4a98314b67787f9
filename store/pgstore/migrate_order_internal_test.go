package pgstore

import (
	"os"
	"slices"
	"strings"
	"testing"
)

// TestNewMigrationsComeAfterReleased guards the one rule migrateTo relies
// on: a schema at version N runs only the migrations numbered above N, so a
// migration added with a number at or below a released one would never run
// on an upgraded database. testdata/released-migrations.txt lists the
// migrations of the last release; a release appends its new ones.
func TestNewMigrationsComeAfterReleased(t *testing.T) {
	raw, err := os.ReadFile("testdata/released-migrations.txt")
	if err != nil {
		t.Fatal(err)
	}
	released := strings.Fields(string(raw))
	if len(released) == 0 {
		t.Fatal("no released migrations listed")
	}
	var names []string
	newest := 0
	for _, m := range migrations() {
		names = append(names, m.name)
		if slices.Contains(released, m.name) {
			newest = max(newest, m.version)
		}
	}
	for _, name := range released {
		if !slices.Contains(names, name) {
			t.Errorf("released migration %s is gone or renamed: an upgraded schema counts on it", name)
		}
	}
	for _, m := range migrations() {
		if !slices.Contains(released, m.name) && m.version <= newest {
			t.Errorf("migration %s is numbered at or below the newest released one (%d): upgraded schemas would skip it", m.name, newest)
		}
	}
}
