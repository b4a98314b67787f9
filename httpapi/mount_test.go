package httpapi_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestStatusURLUnderMountPrefix mounts the API under prefixes, as a host
// does with http.StripPrefix, and follows the status_url of an accepted
// batch: it names the job's status under the same prefix.
func TestStatusURLUnderMountPrefix(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	for _, tc := range []struct {
		name, prefix, want string
	}{
		{"root", "", "/validate/status/{job_id}"},
		{"one segment", "/email", "/email/validate/status/{job_id}"},
		{"two segments", "/tools/email", "/tools/email/validate/status/{job_id}"},
		{"escaped", "/e%20mail", "/e%20mail/validate/status/{job_id}"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mux := http.NewServeMux()
			if tc.prefix == "" {
				mux.Handle("/", f.checked)
			} else {
				mux.Handle(tc.prefix+"/", http.StripPrefix(strings.ReplaceAll(tc.prefix, "%20", " "), f.checked))
			}
			srv := httptest.NewServer(mux)
			defer srv.Close()
			req, _ := http.NewRequest("POST", srv.URL+tc.prefix+"/validate/async", strings.NewReader(`{"emails":["a@good.com"]}`))
			req.Header.Set("x-api-key", f.key)
			req.Header.Set("Content-Type", "application/json")
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			var m struct {
				StatusURL string   `json:"status_url"`
				JobIDs    []string `json:"job_ids"`
			}
			err = json.NewDecoder(resp.Body).Decode(&m)
			resp.Body.Close()
			if resp.StatusCode != http.StatusAccepted || err != nil {
				t.Fatalf("POST: %d %v", resp.StatusCode, err)
			}
			if m.StatusURL != tc.want {
				t.Fatalf("status_url %q, want %q", m.StatusURL, tc.want)
			}
			// The URL leads to the job.
			req, _ = http.NewRequest("GET", srv.URL+strings.ReplaceAll(m.StatusURL, "{job_id}", m.JobIDs[0]), nil)
			req.Header.Set("x-api-key", f.key)
			resp, err = srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"id":"`+m.JobIDs[0]+`"`) {
				t.Fatalf("GET %s: %d %s", m.StatusURL, resp.StatusCode, body)
			}
		})
	}
}
