package dashboard

import (
	"context"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"net/mail"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/alexedwards/scs/v2"
	"github.com/google/uuid"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/store"
)

// Session keys.
const (
	sessAccount = "account"
	sessFlash   = "flash"
)

// page is what every page template receives.
type page struct {
	Title   string
	Prefix  string
	Nav     string // the active navigation entry
	Email   string // the signed-in account's email; empty when signed out
	Flash   string
	Error   string // the page's error, shown at the top and tied to fields
	Field   string // the field the error is about
	Data    any
	Refresh bool // reload every 2 s without JavaScript (a batch in progress)
	// Unconfirmed shows the signed-in account's reminder to confirm its
	// email.
	Unconfirmed bool

	// Links in the footer: the demo, and the API reference page or, on
	// a console without one, the raw OpenAPI document.
	DemoPath, OpenAPIPath, ReferencePath string
	// Billing shows the "Buy credits" entry: the console sells credits.
	Billing bool
	// Role is the signed-in person's role in the account's team (owner,
	// admin, member), which chooses the navigation's entries; Team and
	// Audit say whether the console keeps teams and an audit log.
	Role        string
	Team, Audit bool
	// TwoFactor says whether the console offers two-factor sign-in.
	TwoFactor bool
}

func (d *Dashboard) parseTemplates() error {
	funcs := template.FuncMap{
		"join":    strings.Join,
		"percent": percent,
		"time":    func(t time.Time) string { return formatTime(t) },
		"ms": func(d time.Duration) string {
			if d < time.Millisecond {
				return "under 1 ms"
			}
			return d.Round(time.Millisecond).String()
		},
		"contains": func(list []string, s string) bool {
			for _, v := range list {
				if v == s {
					return true
				}
			}
			return false
		},
	}
	funcs["listBounds"] = d.listBounds
	funcs["num"] = func(n any) string {
		switch v := n.(type) {
		case int:
			return thousands(int64(v))
		case int64:
			return thousands(v)
		}
		return fmt.Sprint(n)
	}
	funcs["inc"] = func(i int) int { return i + 1 }
	funcs["statusName"] = func(s any) string { return statusName(fmt.Sprint(s)) }
	funcs["sub"] = func(a, b int64) int64 { return a - b }
	// Every page has the layout and the partials (*_parts.html).
	layout, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/*_parts.html")
	if err != nil {
		return err
	}
	names, err := templateFiles.ReadDir("templates")
	if err != nil {
		return err
	}
	d.pages = map[string]*template.Template{}
	for _, e := range names {
		if e.Name() == "layout.html" || strings.HasSuffix(e.Name(), "_parts.html") {
			continue
		}
		t, err := template.Must(layout.Clone()).ParseFS(templateFiles, "templates/"+e.Name())
		if err != nil {
			return err
		}
		d.pages[strings.TrimSuffix(e.Name(), ".html")] = t
	}
	return nil
}

// render writes a page with status.
func (d *Dashboard) render(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	if a, ok := r.Context().Value(accountKey{}).(store.Account); ok {
		p.Unconfirmed = a.Unconfirmed
	}
	v := viewerOf(r.Context())
	p.Role = string(v.Role)
	if v.Member.ID != "" {
		p.Email = v.Member.Email
	}
	if p.Email == "" {
		if id := d.sessions.GetString(r.Context(), sessAccount); id != "" {
			if a, err := d.cfg.Accounts.GetAccount(r.Context(), id); err == nil {
				p.Email = a.Email
			}
		}
	}
	if p.Flash == "" {
		p.Flash = d.sessions.PopString(r.Context(), sessFlash)
	}
	d.renderPage(w, r, status, name, p)
}

// renderPage writes a page without reading the session.
func (d *Dashboard) renderPage(w http.ResponseWriter, r *http.Request, status int, name string, p page) {
	t := d.pages[name]
	p.Prefix, p.DemoPath, p.OpenAPIPath = d.cfg.Prefix, d.cfg.DemoPath, d.cfg.OpenAPIPath
	p.Billing = d.cfg.Seller != nil
	p.Team, p.Audit = d.cfg.Team != nil, d.cfg.Audit != nil
	p.TwoFactor = d.cfg.TwoFactor != nil
	if d.reference != nil {
		p.ReferencePath = d.path("/reference")
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if w.Header().Get("Cache-Control") == "" {
		w.Header().Set("Cache-Control", "private, no-cache")
	}
	w.WriteHeader(status)
	name = "layout.html"
	if r.Header.Get("HX-Request") == "true" && r.Header.Get("HX-Boosted") != "true" {
		if t.Lookup("fragment") != nil {
			name = "fragment"
		}
	}
	if err := t.ExecuteTemplate(w, name, p); err != nil {
		d.cfg.Logger.ErrorContext(r.Context(), "dashboard: template", "page", name, "err", err)
	}
}

// fail renders the error page.
func (d *Dashboard) fail(w http.ResponseWriter, r *http.Request, status int, msg string) {
	d.render(w, r, status, "error", page{Title: http.StatusText(status), Error: msg})
}

// backendError logs err and renders a 503 page.
func (d *Dashboard) backendError(w http.ResponseWriter, r *http.Request, op string, err error) {
	d.cfg.Logger.ErrorContext(r.Context(), "dashboard: "+op, "err", err)
	d.fail(w, r, http.StatusServiceUnavailable, "Something on our side is not answering. Try again in a moment.")
}

// flash keeps a message for the next page.
func (d *Dashboard) flash(ctx context.Context, msg string) { d.sessions.Put(ctx, sessFlash, msg) }

// redirect answers 303 See Other to a dashboard path.
func (d *Dashboard) redirect(w http.ResponseWriter, r *http.Request, rel string) {
	http.Redirect(w, r, d.path(rel), http.StatusSeeOther)
}

// authed runs h for a signed-in account; anyone else is sent to the
// sign-in page.
func (d *Dashboard) authed(h func(w http.ResponseWriter, r *http.Request, a store.Account)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		id := d.sessions.GetString(r.Context(), sessAccount)
		var a store.Account
		var err error
		if id != "" && r.Method != http.MethodGet && r.Method != http.MethodHead {
			// The session was loaded before the body was read, which its
			// sender may have made last as long as it liked: a change is
			// made only while the session still exists, so that no
			// request held open across a proof of ownership (which ends
			// the account's other sessions) makes anything after it.
			id, err = d.sessionStillExists(r.Context(), id)
		}
		if id != "" && err == nil {
			a, err = d.cfg.Accounts.GetAccount(r.Context(), id)
		}
		if id == "" || errors.Is(err, store.ErrNotFound) {
			if r.Method == http.MethodGet && r.Header.Get("HX-Request") != "true" {
				http.Redirect(w, r, d.path("/login")+"?next="+urlEscape(r.URL.Path), http.StatusSeeOther)
				return
			}
			w.Header().Set("HX-Redirect", d.path("/login"))
			d.fail(w, r, http.StatusUnauthorized, "Sign in first.")
			return
		}
		if err != nil {
			d.backendError(w, r, "get account", err)
			return
		}
		v, ok, err := d.signedInMember(r.Context(), a)
		if err != nil {
			d.backendError(w, r, "get member", err)
			return
		}
		if !ok {
			// A removed member: signed out.
			if err := d.sessions.Destroy(r.Context()); err != nil {
				d.backendError(w, r, "sign out", err)
				return
			}
			http.Redirect(w, r, d.path("/login"), http.StatusSeeOther)
			return
		}
		ctx := context.WithValue(context.WithValue(r.Context(), accountKey{}, a), viewerKey{}, v)
		if d.enrollOnly(w, r.WithContext(ctx), a) {
			return
		}
		h(w, r.WithContext(ctx), a)
	}
}

// sessionStillExists returns id when the request's session is still in
// the store, "" when it was ended since it was loaded.
func (d *Dashboard) sessionStillExists(ctx context.Context, id string) (string, error) {
	token := d.sessions.Token(ctx)
	if token == "" {
		return "", nil
	}
	cs, ok := d.sessions.Store.(scs.CtxStore)
	if !ok {
		return id, nil
	}
	_, found, err := cs.FindCtx(ctx, token)
	if err != nil {
		return "", err
	}
	if !found {
		return "", nil
	}
	return id, nil
}

// accountKey is the context key of the signed-in account, for render.
type accountKey struct{}

// plainAddress reports whether s is one email address without a display
// name, as a form field should hold it.
func plainAddress(s string) bool {
	a, err := mail.ParseAddress(s)
	return err == nil && a.Address == s && len(s) <= 254
}

type authForm struct {
	Email, Next string
}

func (d *Dashboard) signupPage(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "signup", page{Title: "Create your account", Data: authForm{}})
}

func (d *Dashboard) loginPage(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "login", page{Title: "Sign in", Flash: doneMessages[r.URL.Query().Get("done")],
		Data: authForm{Next: safeNext(d.cfg.Prefix, r.URL.Query().Get("next"))}})
}

// welcome is the page of a confirmed account's first sign-in: its first
// key, shown once.
type welcome struct {
	Credits int64
	Key     string
	Base    string // the service's address, for the example
}

// signup creates an account and mails its confirmation link; an email
// that has an account already gets a note saying so instead. Both answer
// the same page, so that the form tells no one which addresses have
// accounts.
func (d *Dashboard) signup(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := strings.TrimSpace(r.PostFormValue("email"))
	password := r.PostFormValue("password")
	form := authForm{Email: email}
	refuse := func(status int, field, msg string) {
		d.render(w, r, status, "signup", page{Title: "Create your account", Error: msg, Field: field, Data: form})
	}
	if ok, wait := d.allow(r, "signup-ip:"+d.clientKey(r), d.signupLimit()); !ok {
		retryAfter(w, wait)
		refuse(http.StatusTooManyRequests, "", "Too many accounts were created from your network. Try again in "+humanWait(wait)+".")
		return
	}
	if !plainAddress(email) {
		refuse(http.StatusUnprocessableEntity, "email", "Enter an email address like jane@example.com.")
		return
	}
	if d.disposable(ctx, email) {
		refuse(http.StatusUnprocessableEntity, "email", "This address belongs to a disposable email service. Sign up with an address you keep.")
		return
	}
	if msg := d.passwordProblem(password); msg != "" {
		refuse(http.StatusUnprocessableEntity, "password", msg)
		return
	}
	// The hash is computed either way: both answers take as long.
	hash, err := d.hasher.hash(ctx, password)
	if err != nil {
		d.backendError(w, r, "hash password", err)
		return
	}
	// A member of a team signs in with its address already: the sign-up
	// is answered as for an account's address.
	member, err := d.memberExists(ctx, email)
	if err != nil {
		d.backendError(w, r, "look up member", err)
		return
	}
	var a store.Account
	if member {
		err = store.ErrEmailTaken
	} else {
		a, err = d.cfg.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: email, PasswordHash: hash, Unconfirmed: d.confirm})
	}
	switch {
	case errors.Is(err, store.ErrEmailTaken):
		d.mailExisting(ctx, r, email)
	case err != nil:
		d.backendError(w, r, "create account", err)
		return
	default:
		if err := d.mailConfirmation(ctx, r, a); err != nil {
			// The account exists: its owner can sign in and ask again.
			d.cfg.Logger.ErrorContext(ctx, "dashboard: confirmation link", "account_id", a.ID, "err", err)
		}
	}
	d.render(w, r, http.StatusOK, "sent", page{Title: "Check your inbox", Data: sentPage{Email: email, Confirm: d.confirm}})
}

// disposable reports whether the service's own validator classifies email
// as a throwaway address: such an address would earn the sign-up credits
// and be gone tomorrow. It asks without a mailbox probe; when no validator
// is configured, or the validation fails, it lets the address through, as
// the confirmation mail still has to reach it.
func (d *Dashboard) disposable(ctx context.Context, email string) bool {
	if d.cfg.Validator == nil {
		return false
	}
	res, err := d.cfg.Validator.Validate(ctx, email, emailcheck.WithoutProbe())
	if err != nil {
		return false
	}
	return res.Validations.IsDisposable || res.Confidence.Status == emailcheck.StatusDisposable
}

func (d *Dashboard) login(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := strings.TrimSpace(r.PostFormValue("email"))
	password := r.PostFormValue("password")
	form := authForm{Email: email, Next: safeNext(d.cfg.Prefix, r.PostFormValue("next"))}
	refuse := func(status int, msg string) {
		d.render(w, r, status, "login", page{Title: "Sign in", Error: msg, Field: "password", Data: form})
	}
	verdict, wait, succeeded := d.signinAllowed(r, email)
	if verdict == signinRefused {
		retryAfter(w, wait)
		refuse(http.StatusTooManyRequests, "Too many sign-in attempts. Try again in "+humanWait(wait)+".")
		return
	}
	// The same work whether or not an account has the email: the
	// lookup, a password hash read (for a fresh account id, which the
	// store does not know, when there is none) and a verification.
	a, err := d.cfg.Accounts.GetAccountByEmail(ctx, email)
	id := a.ID
	if errors.Is(err, store.ErrNotFound) {
		id = uuid.NewString()
	}
	hash := ""
	var member store.Member
	if errors.Is(err, store.ErrNotFound) && d.cfg.Team != nil {
		// A member signs in with their own email and password.
		member, a, hash, err = d.memberLogin(ctx, email)
	}
	if hash == "" && (err == nil || errors.Is(err, store.ErrNotFound)) {
		hash, err = d.cfg.Passwords.PasswordHash(ctx, id)
		if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
	}
	if err != nil {
		d.backendError(w, r, "sign in", err)
		return
	}
	if hash == "" {
		// No such account, or one without a password: spend the same
		// time as a wrong password would.
		hash = d.hasher.dummyHash(ctx)
		a = store.Account{}
	}
	ok, err := d.hasher.verify(ctx, password, hash)
	if err != nil {
		if ctx.Err() != nil {
			return
		}
		d.cfg.Logger.ErrorContext(ctx, "dashboard: a stored password hash cannot be read", "account_id", a.ID, "err", err)
	}
	if verdict == signinByMail {
		// The mailed link signs in the account's owner: a member waits
		// for the window instead.
		d.signinByMail(w, r, form, a, ok && a.ID != "" && member.ID == "")
		return
	}
	if !ok || a.ID == "" {
		refuse(http.StatusUnauthorized, "The email or the password is wrong.")
		return
	}
	succeeded()
	// The first sign-in of a confirmed account shows its first key; a
	// login with a second factor is asked for its code first.
	d.signIn(w, r, a, member, form.Next, true)
}

// welcome creates the account's first key and shows it, once.
func (d *Dashboard) welcome(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	k, secret, err := d.cfg.Accounts.CreateKey(ctx, store.CreateKeyParams{AccountID: a.ID, Name: "First key"})
	if err != nil {
		d.backendError(w, r, "create key", err)
		return
	}
	d.audit(ctx, a, "key.created", keyDetail(k))
	bal, _ := d.cfg.Ledger.Balance(ctx, a.ID)
	w.Header().Set("Cache-Control", "no-store")
	base := "https://" + r.Host
	if r.TLS == nil && d.cfg.InsecureCookies {
		base = "http://" + r.Host
	}
	d.render(w, r, http.StatusOK, "welcome", page{Title: "Welcome", Email: a.Email, Nav: "overview", Data: welcome{Credits: bal, Key: secret, Base: base}})
}

// logout ends the session. It keeps none: the note on the sign-in page
// comes from the address, so that a sign-out without a session (or by a
// stranger) writes nothing.
func (d *Dashboard) logout(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if d.sessions.Token(ctx) != "" {
		if err := d.sessions.Destroy(ctx); err != nil {
			d.backendError(w, r, "sign out", err)
			return
		}
	}
	http.Redirect(w, r, d.path("/login")+"?done=signed-out", http.StatusSeeOther)
}

// safeNext returns next when it is a path inside the dashboard, else "".
func safeNext(prefix, next string) string {
	if next == "" || !strings.HasPrefix(next, prefix+"/") || strings.HasPrefix(next, "//") || strings.ContainsAny(next, "\\\r\n") {
		return ""
	}
	if path.Clean(next) != strings.TrimSuffix(next, "/") && path.Clean(next)+"/" != next {
		return ""
	}
	return next
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// humanWait is a wait in words: "12 seconds", "3 minutes".
func humanWait(d time.Duration) string {
	s := int(d.Round(time.Second).Seconds())
	switch {
	case s <= 1:
		return "a second"
	case s < 90:
		return strconv.Itoa(s) + " seconds"
	}
	return strconv.Itoa((s+59)/60) + " minutes"
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04 UTC")
}

func percent(part, whole int) int {
	if whole <= 0 {
		return 0
	}
	return part * 100 / whole
}

func urlEscape(s string) string {
	r := strings.NewReplacer("%", "%25", "&", "%26", "?", "%3F", "#", "%23", " ", "%20", "+", "%2B")
	return r.Replace(s)
}
