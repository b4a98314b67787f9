package dashboard

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi"
)

type demoData struct {
	Email  string
	Result *emailcheck.Result
	JSON   string
}

// demoProblemTitles are the titles of the problems the demo answers,
// as the API titles them.
var demoProblemTitles = map[httpapi.Code]string{
	httpapi.CodeMissingEmail:     "Missing email",
	httpapi.CodeAddressTooLong:   "Address too long",
	httpapi.CodeNotFound:         "Not found",
	httpapi.CodeMethodNotAllowed: "Method not allowed",
	httpapi.CodeRateLimited:      "Rate limited",
	httpapi.CodeUnavailable:      "Service unavailable",
}

// demoProblem is an RFC 9457 problem document shaped as the API's.
type demoProblem struct {
	Type      string       `json:"type"`
	Title     string       `json:"title"`
	Status    int          `json:"status"`
	Detail    string       `json:"detail"`
	Code      httpapi.Code `json:"code"`
	RequestID string       `json:"requestId"`
}

// demoPage serves the public demo: one address at a time, no account, not
// charged, limited per client address, and never a mailbox probe: a
// stranger does not get to point the prober anywhere. For Accept:
// application/json it answers as GET /validate does: the result with a
// requestId, or an application/problem+json document with the API's
// codes; every answer carries X-Request-Id.
func (d *Dashboard) demoPage(w http.ResponseWriter, r *http.Request) {
	id := uuid.NewString()
	w.Header().Set("X-Request-Id", id)
	accept := r.Header.Get("Accept")
	wantJSON := strings.Contains(accept, "application/json") || strings.Contains(accept, "application/problem+json")
	email := strings.TrimSpace(r.URL.Query().Get("email"))
	data := demoData{Email: email}
	fail := func(code httpapi.Code, msg string) {
		if wantJSON {
			body, _ := json.Marshal(demoProblem{Type: httpapi.ProblemTypePrefix + string(code), Title: demoProblemTitles[code],
				Status: code.Status(), Detail: msg, Code: code, RequestID: id})
			w.Header().Set("Content-Type", "application/problem+json")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(code.Status())
			w.Write(append(body, '\n'))
			return
		}
		d.renderPublic(w, r, code.Status(), page{Title: "Try validmail", Error: msg, Field: "email", Data: data})
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		fail(httpapi.CodeMethodNotAllowed, "Method "+r.Method+" is not allowed here; allowed: GET, HEAD.")
		return
	}
	if d.cfg.Validator == nil {
		fail(httpapi.CodeNotFound, "The demo is not available on this deployment.")
		return
	}
	if email == "" {
		if wantJSON {
			fail(httpapi.CodeMissingEmail, "Give an address in the email query parameter.")
			return
		}
		d.renderPublic(w, r, http.StatusOK, page{Title: "Try validmail", Data: data})
		return
	}
	if len(email) > 1024 {
		fail(httpapi.CodeAddressTooLong, "That address is longer than 1 KB.")
		return
	}
	if ok, wait := d.allow(r, "demo-ip:"+d.clientKey(r), d.demoLimit()); !ok {
		retryAfter(w, wait)
		fail(httpapi.CodeRateLimited, "The demo takes "+strconv.Itoa(d.cfg.DemoRate)+" addresses a minute from one network. Try again in "+humanWait(wait)+", or sign up for an API key.")
		return
	}
	res, err := d.cfg.Validator.Validate(r.Context(), email, emailcheck.WithSource(emailcheck.SourceDemo), emailcheck.WithoutProbe())
	if err != nil {
		d.cfg.Logger.ErrorContext(r.Context(), "dashboard: demo", "err", err)
		w.Header().Set("Retry-After", "5")
		fail(httpapi.CodeUnavailable, "The validator is not answering. Try again in a moment.")
		return
	}
	res.Meta.Source = emailcheck.SourceDemo
	// The fields of the result, then requestId, as GET /validate writes
	// them.
	b := res.AppendJSON(nil)
	b = append(b[:len(b)-1], `,"requestId":"`...)
	b = append(b, id...)
	b = append(b, "\"}\n"...)
	if wantJSON {
		w.Header().Set("Content-Type", "application/json")
		w.Write(b)
		return
	}
	var pretty bytes.Buffer
	if json.Indent(&pretty, b, "", "  ") == nil {
		data.JSON = strings.TrimSpace(pretty.String())
	}
	data.Result = &res
	d.renderPublic(w, r, http.StatusOK, page{Title: "Try validmail", Data: data})
}

// renderPublic renders the demo, which has no session.
func (d *Dashboard) renderPublic(w http.ResponseWriter, r *http.Request, status int, p page) {
	d.renderPage(w, r, status, "demo", p)
}
