package httpapi_test

import (
	"crypto/tls"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// openAPIDoc is the part of the document these tests read.
type openAPIDoc struct {
	Servers []struct{ URL string } `json:"servers"`
	Info    struct {
		Contact struct{ Name, URL string }
		License struct{ Name, URL string }
	}
	Tags       []struct{ Name, Description string }
	Paths      map[string]map[string]json.RawMessage
	Components struct {
		Schemas map[string]json.RawMessage
	}
}

// operation is the part of an operation these tests read.
type operation struct {
	OperationID string   `json:"operationId"`
	Tags        []string `json:"tags"`
	Parameters  []struct {
		Name, In string
		Required bool
	}
	Responses map[string]struct {
		Content map[string]json.RawMessage
	}
}

func readDoc(t *testing.T, body []byte) openAPIDoc {
	t.Helper()
	var d openAPIDoc
	if err := json.Unmarshal(body, &d); err != nil {
		t.Fatal(err)
	}
	return d
}

// The served document names where it was served from: the origin the
// request reached and the prefix the handler is mounted under.
func TestOpenAPIServers(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	mux := http.NewServeMux()
	mux.Handle("/email/", http.StripPrefix("/email", f.checked))
	mux.Handle("/", f.checked)
	for _, tc := range []struct {
		name, target, host string
		header             map[string]string
		tls                bool
		want               string
	}{
		{name: "root", target: "/openapi.json", host: "api.example.org", want: "http://api.example.org"},
		{name: "port", target: "/openapi.json", host: "127.0.0.1:8080", want: "http://127.0.0.1:8080"},
		{name: "IPv6", target: "/openapi.json", host: "[::1]:8080", want: "http://[::1]:8080"},
		{name: "TLS", target: "/openapi.json", host: "api.example.org", tls: true, want: "https://api.example.org"},
		{name: "proxy ending TLS", target: "/openapi.json", host: "api.example.org", header: map[string]string{"X-Forwarded-Proto": "https"}, want: "https://api.example.org"},
		{name: "odd proto ignored", target: "/openapi.json", host: "api.example.org", header: map[string]string{"X-Forwarded-Proto": "javascript"}, want: "http://api.example.org"},
		{name: "mounted", target: "/email/openapi.json", host: "api.example.org", want: "http://api.example.org/email"},
		{name: "host with a quote", target: "/openapi.json", host: `a"b.org`, want: "/"},
		{name: "host with a slash, mounted", target: "/email/openapi.json", host: "a/b", want: "/email"},
		{name: "no host", target: "/openapi.json", host: "", want: "/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, _ := http.NewRequest("GET", "http://placeholder"+tc.target, nil)
			r.RequestURI = tc.target
			r.Host = tc.host
			if tc.tls {
				r.TLS = &tls.ConnectionState{}
			}
			for k, v := range tc.header {
				r.Header.Set(k, v)
			}
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, r)
			resp := &response{Code: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
			checkCommon(t, resp)
			if resp.Code != 200 {
				t.Fatalf("status %d", resp.Code)
			}
			d := readDoc(t, resp.Body)
			if len(d.Servers) != 1 || d.Servers[0].URL != tc.want {
				t.Fatalf("servers %+v, want %q", d.Servers, tc.want)
			}
			if v := resp.Header.Get("Vary"); v != "X-Forwarded-Proto" {
				t.Fatalf("Vary %q", v)
			}
		})
	}
}

// The document is one generators take with their defaults: every
// operation has a unique operationId whose generated <Id>Response type
// names no schema, and a tag the document describes; the license and the
// contact are given; a required query parameter is marked required; each
// export format has its own media type.
func TestOpenAPIForGenerators(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{webhooks: true, adminToken: strings.Repeat("t", 32)})
	d := readDoc(t, f.h.OpenAPI())
	if d.Info.License.Name == "" || d.Info.License.URL == "" || d.Info.Contact.URL == "" {
		t.Errorf("info: license %+v, contact %+v", d.Info.License, d.Info.Contact)
	}
	tags := map[string]bool{}
	for _, tg := range d.Tags {
		if tg.Description == "" {
			t.Errorf("tag %s without a description", tg.Name)
		}
		tags[tg.Name] = true
	}
	ids := map[string]string{}
	n := 0
	for path, item := range d.Paths {
		for method, raw := range item {
			if method == "parameters" {
				continue
			}
			var op operation
			if err := json.Unmarshal(raw, &op); err != nil {
				t.Fatal(err)
			}
			n++
			where := strings.ToUpper(method) + " " + path
			if op.OperationID == "" {
				t.Errorf("%s: no operationId", where)
			}
			if other, dup := ids[op.OperationID]; dup {
				t.Errorf("%s and %s share operationId %s", where, other, op.OperationID)
			}
			ids[op.OperationID] = where
			gen := string(unicode.ToUpper(rune(op.OperationID[0]))) + op.OperationID[1:]
			for _, suffix := range []string{"Response", "Params", "JSONBody", "JSONRequestBody"} {
				if _, ok := d.Components.Schemas[gen+suffix]; ok {
					t.Errorf("%s: schema %s%s collides with a generated type", where, gen, suffix)
				}
			}
			if len(op.Tags) != 1 || !tags[op.Tags[0]] {
				t.Errorf("%s: tags %v, want one of the document's", where, op.Tags)
			}
		}
	}
	if n < 20 {
		t.Fatalf("%d operations read", n)
	}
	var validate operation
	if err := json.Unmarshal(d.Paths["/validate"]["get"], &validate); err != nil {
		t.Fatal(err)
	}
	if len(validate.Parameters) != 1 || validate.Parameters[0].Name != "email" || !validate.Parameters[0].Required {
		t.Errorf("GET /validate parameters %+v: email must be required", validate.Parameters)
	}
	var results operation
	if err := json.Unmarshal(d.Paths["/api/v1/batches/{batch_id}/results"]["get"], &results); err != nil {
		t.Fatal(err)
	}
	var types []string
	for mt := range results.Responses["200"].Content {
		types = append(types, mt)
	}
	sortStrings(types)
	if got := strings.Join(types, ","); got != "application/json,application/vnd.openxmlformats-officedocument.spreadsheetml.sheet,application/x-ndjson,text/csv" {
		t.Errorf("results media types %s", got)
	}
}
