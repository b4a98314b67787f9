package httpapi

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestRepeatedKey(t *testing.T) {
	for _, tt := range []struct {
		body string
		key  string
		dup  bool
	}{
		{`{"a":1,"b":2}`, "", false},
		{`{"a":1,"a":2}`, "a", true},
		{`{"a":{"b":1},"b":2}`, "", false},
		{`{"a":{"b":1,"b":2}}`, "b", true},
		{`{"a":[{"x":1},{"x":2}],"x":3}`, "", false},
		{`{"a":[1,2],"a":[]}`, "a", true},
		{`[{"k":1},{"k":1}]`, "", false},
		{`{"s":"a","t":"a"}`, "", false},
		{`"plain"`, "", false},
	} {
		key, dup := repeatedKey([]byte(tt.body))
		if key != tt.key || dup != tt.dup {
			t.Errorf("%s: %q %v, want %q %v", tt.body, key, dup, tt.key, tt.dup)
		}
	}
}

// FuzzRepeatedKey: on any valid JSON, a reported repeat is a key that
// appears twice, and a body without one decodes to as many keys as it
// names (checked at the top level).
func FuzzRepeatedKey(f *testing.F) {
	for _, s := range []string{`{"a":1,"a":2}`, `{"a":{"b":[1,{"c":2}]},"d":null}`, `[1,"x",{"y":true}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		if !json.Valid([]byte(body)) {
			return
		}
		key, dup := repeatedKey([]byte(body))
		var top map[string]json.RawMessage
		if json.Unmarshal([]byte(body), &top) != nil {
			return
		}
		dec := json.NewDecoder(strings.NewReader(body))
		dec.Token() // {
		names := 0
		for dec.More() {
			if _, err := dec.Token(); err != nil {
				return
			}
			names++
			var skip json.RawMessage
			if dec.Decode(&skip) != nil {
				return
			}
		}
		if !dup && names != len(top) {
			t.Fatalf("%s: no repeat reported, yet %d names for %d keys", body, names, len(top))
		}
		if dup && key == "" && names == len(top) {
			t.Fatalf("%s: a repeat reported at top level without one", body)
		}
	})
}
