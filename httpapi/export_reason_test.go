package httpapi_test

import (
	"encoding/csv"
	"strings"
	"testing"
)

// The CSV export gives each row's reason and suggestion, the suggestion
// escaped against formulas like every cell from the input.
func TestExportReasonAndSuggestion(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	id, ids := submit(t, f, f.key, "jane@good.com", "=cmd@gmial.com", "nope", "x@servfail.com")
	f.runPool(t)
	waitCompleted(t, f, id)
	resp := f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results?format=csv", key: f.key})
	rows, err := csv.NewReader(strings.NewReader(string(resp.Body))).ReadAll()
	if err != nil || len(rows) != 5 {
		t.Fatalf("CSV %q: %v", resp.Body, err)
	}
	head := rows[0]
	col := func(name string) int {
		for i, h := range head {
			if h == name {
				return i
			}
		}
		t.Fatalf("no column %s in %q", name, head)
		return -1
	}
	reason, suggestion := col("reason"), col("did_you_mean")
	want := []struct{ reason, suggestion string }{
		{"valid", ""},
		{"no_such_domain", "'=cmd@gmail.com"},
		{"invalid_syntax", ""},
		{"dns_servfail", ""},
	}
	for i, w := range want {
		r := rows[i+1]
		if r[0] != ids[i] || r[reason] != w.reason || r[suggestion] != w.suggestion {
			t.Errorf("row %d: %q, want reason %q, did_you_mean %q", i+1, r, w.reason, w.suggestion)
		}
	}
	// JSON Lines carry the same.
	resp = f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results?format=jsonl&status=INVALID_DOMAIN", key: f.key})
	if !strings.Contains(string(resp.Body), `"did_you_mean":"=cmd@gmail.com","reason":"no_such_domain"`) {
		t.Errorf("JSON Lines: %s", resp.Body)
	}
}
