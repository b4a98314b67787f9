package httpapi

import (
	"encoding/json"
	"net/http/httptest"
	"testing"

	"github.com/validmail/validmail/emailcheck"
)

// writeValidation writes the bytes encoding/json gives for the result
// beside the request id.
func TestWriteValidation(t *testing.T) {
	h := &Handler{}
	canonical := "janedoe@gmail.com"
	for _, r := range []emailcheck.Result{
		{Email: "jane@gmail.com", Confidence: emailcheck.Confidence{Score: 90, Status: emailcheck.StatusLikely, CanonicalEmail: &canonical, EquivalentDomains: []string{"gmail.com"}}},
		{Email: "<script>\x00\xff", Meta: emailcheck.Meta{Source: "api", LatencyMS: 7}},
		{Email: "probed@x.org", SMTP: &emailcheck.SMTPResult{}},
	} {
		c := &call{id: newRequestID()}
		rec := httptest.NewRecorder()
		h.writeValidation(rec, c, &r)
		want, err := json.Marshal(struct {
			emailcheck.Result
			RequestID string `json:"requestId"`
		}{r, c.id})
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Body.String(); got != string(want)+"\n" {
			t.Errorf("\n got %s\nwant %s", got, want)
		}
		if rec.Header().Get("Content-Type") != "application/json" || rec.Code != 200 {
			t.Errorf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
		}
	}
}
