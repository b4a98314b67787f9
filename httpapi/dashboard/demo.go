package dashboard

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"github.com/validmail/validmail/emailcheck"
)

type demoData struct {
	Email  string
	Result *emailcheck.Result
	JSON   string
}

// demoPage serves the public demo: one address at a time, no account, not
// charged, limited per client address, and never a mailbox probe: a
// stranger does not get to point the prober anywhere.
func (d *Dashboard) demoPage(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	wantJSON := strings.Contains(r.Header.Get("Accept"), "application/json")
	email := strings.TrimSpace(r.URL.Query().Get("email"))
	data := demoData{Email: email}
	fail := func(status int, msg string) {
		if wantJSON {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"error": msg})
			return
		}
		d.renderPublic(w, r, status, page{Title: "Try validmail", Error: msg, Field: "email", Data: data})
	}
	if d.cfg.Validator == nil {
		fail(http.StatusNotFound, "The demo is not available on this deployment.")
		return
	}
	if email == "" {
		if wantJSON {
			fail(http.StatusBadRequest, "Give an address in the email query parameter.")
			return
		}
		d.renderPublic(w, r, http.StatusOK, page{Title: "Try validmail", Data: data})
		return
	}
	if len(email) > 1024 {
		fail(http.StatusBadRequest, "That address is longer than 1 KB.")
		return
	}
	if ok, wait := d.allow(r, "demo-ip:"+d.clientKey(r), d.demoLimit()); !ok {
		retryAfter(w, wait)
		fail(http.StatusTooManyRequests, "The demo takes "+strconv.Itoa(d.cfg.DemoRate)+" addresses a minute from one network. Try again in "+humanWait(wait)+", or sign up for an API key.")
		return
	}
	res, err := d.cfg.Validator.Validate(r.Context(), email, emailcheck.WithSource(emailcheck.SourceDemo), emailcheck.WithoutProbe())
	if err != nil {
		d.cfg.Logger.ErrorContext(r.Context(), "dashboard: demo", "err", err)
		fail(http.StatusServiceUnavailable, "The validator is not answering. Try again in a moment.")
		return
	}
	res.Meta.Source = emailcheck.SourceDemo
	if wantJSON {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(res)
		return
	}
	b, _ := json.MarshalIndent(res, "", "  ")
	data.Result, data.JSON = &res, string(b)
	d.renderPublic(w, r, http.StatusOK, page{Title: "Try validmail", Data: data})
}

// renderPublic renders the demo, which has no session.
func (d *Dashboard) renderPublic(w http.ResponseWriter, r *http.Request, status int, p page) {
	d.renderPage(w, r, status, "demo", p)
}
