package httpapi_test

import (
	"strings"
	"testing"
)

// X-Request-Id as strangers send it: only the 36-character UUID form is
// kept (lower-cased); braces, a URN, the hyphenless form, a long or
// multi-line value, a list of ids are each replaced by a new id, never
// echoed, and never reach the log. The answer is the same id in the
// header, the body and the log record, also on a problem and a 404.
func TestCallersRequestIDOddValues(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	const id = "6f1c2a9e-3b7d-4c2e-9a51-0d2f8e4b7c13"
	for _, tc := range []struct {
		name, sent, want string // want "" means a new id
	}{
		{"canonical", id, id},
		{"upper case", strings.ToUpper(id), id},
		{"mixed case", "6F1c2A9e-3b7D-4c2E-9a51-0D2f8E4b7C13", id},
		{"braces", "{" + id + "}", ""},
		{"urn", "urn:uuid:" + id, ""},
		{"no hyphens", strings.ReplaceAll(id, "-", ""), ""},
		{"hyphens moved", "6f1c2a9e3-b7d-4c2e-9a51-0d2f8e4b7c13", ""},
		{"36 bytes not hex", "6f1c2a9e-3b7d-4c2e-9a51-0d2f8e4b7c1z", ""},
		{"newline inside", "6f1c2a9e-3b7d-4c2e-9a51\n0d2f8e4b7c13", ""},
		{"two ids", id + ", " + id, ""},
		{"10 KB", strings.Repeat("a", 10<<10), ""},
		{"spaces around", "  " + id + "  ", ""},
		{"non-ASCII of 36 bytes", "6f1c2a9e-3b7d-4c2e-9a51-0d2f8e4b7cé", ""},
	} {
		for _, target := range []string{"/api/v1/account", "/validate?email=", "/nowhere"} {
			r := f.do(t, req{method: "GET", target: target, key: f.key, header: map[string]string{"X-Request-Id": tc.sent}})
			got := r.Header.Get("X-Request-Id")
			switch {
			case tc.want != "" && got != tc.want:
				t.Errorf("%s %s: answered %q, want %q", tc.name, target, got, tc.want)
			case tc.want == "" && (got == tc.sent || strings.EqualFold(got, id)):
				t.Errorf("%s %s: answered %q, want a new id", tc.name, target, got)
			}
			if !strings.Contains(f.logs.String(), `"request_id":"`+got+`"`) {
				t.Errorf("%s %s: no log record with request_id %q", tc.name, target, got)
			}
		}
	}
	logs := f.logs.String()
	for _, bad := range []string{"{" + id, "urn:uuid", strings.Repeat("a", 64), "0d2f8e4b7c1z"} {
		if strings.Contains(logs, bad) {
			t.Errorf("a refused X-Request-Id (%q) reached the log", bad)
		}
	}
}
