package dashboard

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/store"
)

// How long the mailed links work, and how often one address is mailed.
const (
	confirmTTL = 48 * time.Hour
	resetTTL   = time.Hour
	// mailTimeout bounds one message's delivery to the relay, and
	// mailsInFlight the messages on their way at once.
	mailTimeout   = 30 * time.Second
	mailsInFlight = 32
)

// newToken returns a random token for a link: 32 bytes, base64url.
func newToken() string {
	var b [32]byte
	rand.Read(b[:])
	return base64.RawURLEncoding.EncodeToString(b[:])
}

// validBaseURL reports whether s is an origin: http(s)://host[:port].
func validBaseURL(s string) bool {
	u, err := url.Parse(s)
	return err == nil && (u.Scheme == "https" || u.Scheme == "http") && u.Host != "" &&
		u.Path == "" && u.RawQuery == "" && u.Fragment == "" && u.User == nil
}

// origin returns the origin the links in mail start with: BaseURL, or
// without a mailer the request's own.
func (d *Dashboard) origin(r *http.Request) string {
	if d.cfg.BaseURL != "" {
		return d.cfg.BaseURL
	}
	if r.TLS == nil && d.cfg.InsecureCookies {
		return "http://" + r.Host
	}
	return "https://" + r.Host
}

// send mails m in the background, unless too many messages are on their
// way already. The pages that mail answer at once and the same whatever
// happens to the message (a failure is logged), so that neither their
// words nor their timing tell whether an address has an account. A
// message still on its way when the process ends is lost; its recipient
// can ask again.
func (d *Dashboard) send(ctx context.Context, m mail.Message) {
	d.later(ctx, nil, m.Subject, func(context.Context) (mail.Message, bool, error) { return m, true, nil })
}

// later is send for a message whose making needs the store: build runs
// in the background, with the message's time bound, once after is closed
// (nil: at once), and returns the message and whether to send it (false:
// there is nothing to send), or an error, logged. A form whose answer
// must not depend on what the store holds (whether an address has an
// account) does the lookup there, after its request's end (after: the
// request context's Done), so that the work does not compete with the
// answer either.
func (d *Dashboard) later(ctx context.Context, after <-chan struct{}, what string, build func(context.Context) (mail.Message, bool, error)) {
	select {
	case d.sending <- struct{}{}:
	default:
		d.cfg.Logger.ErrorContext(ctx, "dashboard: mail not sent: too many messages on their way", "subject", what)
		return
	}
	ctx = context.WithoutCancel(ctx)
	go func() {
		defer func() { <-d.sending }()
		if after != nil {
			// A moment past the request's end, so that the answer is
			// on its way before this work starts.
			<-after
			time.Sleep(time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(ctx, mailTimeout)
		defer cancel()
		m, ok, err := build(ctx)
		if err != nil {
			d.cfg.Logger.ErrorContext(ctx, "dashboard: mail not made", "subject", what, "err", err)
			return
		}
		if !ok {
			return
		}
		if err := d.mailer.Send(ctx, m); err != nil {
			d.cfg.Logger.ErrorContext(ctx, "dashboard: mail not sent", "subject", m.Subject, "err", err)
		}
	}()
}

// mailLink creates a token of the purpose for the account and returns
// the link that uses it.
func (d *Dashboard) mailLink(ctx context.Context, r *http.Request, a store.Account, purpose store.TokenPurpose, ttl time.Duration, rel string) (string, error) {
	return d.linkAt(ctx, d.origin(r), a, purpose, ttl, rel)
}

// linkAt is mailLink on the console's origin.
func (d *Dashboard) linkAt(ctx context.Context, origin string, a store.Account, purpose store.TokenPurpose, ttl time.Duration, rel string) (string, error) {
	tok := newToken()
	err := d.cfg.Tokens.CreateToken(ctx, store.Token{Hash: store.HashSecret(tok), Purpose: purpose, AccountID: a.ID, Expiry: d.cfg.Now().Add(ttl)})
	if err != nil {
		return "", err
	}
	return origin + d.path(rel) + "?token=" + tok, nil
}

// dummyLink does the work of mailLink for an address without an account:
// the same store write, for a fresh account id, which the store refuses
// (no account has it). It returns an unusable link of the same length.
func (d *Dashboard) dummyLink(ctx context.Context, r *http.Request, purpose store.TokenPurpose, ttl time.Duration, rel string) (string, error) {
	link, err := d.mailLink(ctx, r, store.Account{ID: uuid.NewString()}, purpose, ttl, rel)
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	return link, err
}

// mailConfirmation sends the account's email a link that confirms it.
func (d *Dashboard) mailConfirmation(ctx context.Context, r *http.Request, a store.Account) error {
	if !d.mayMail(ctx, r, a.Email, mailOther) {
		return nil
	}
	link, err := d.mailLink(ctx, r, a, store.TokenConfirm, confirmTTL, "/confirm")
	if err != nil {
		return err
	}
	body := "Hello,\n\nSomeone, we hope you, created a validmail account with this address.\n\n" +
		"To confirm it, open this link within 48 hours:\n\n" + link + "\n\n"
	if a.Unconfirmed {
		body += "Your free credits arrive when you confirm.\n\n"
	}
	body += "If it was not you, ignore this message: the address is confirmed only with this link and the password chosen at sign-up.\n"
	d.send(ctx, mail.Message{To: a.Email, Subject: "Confirm your email for validmail", Body: body})
	return nil
}

// mailExisting tells an address that has an account that someone tried
// to create another.
func (d *Dashboard) mailExisting(ctx context.Context, r *http.Request, email string) {
	if !d.mayMail(ctx, r, email, mailOther) {
		return
	}
	// A new account's confirmation stores a token: so much work here too.
	if _, err := d.dummyLink(ctx, r, store.TokenConfirm, confirmTTL, "/confirm"); err != nil {
		d.cfg.Logger.ErrorContext(ctx, "dashboard: token store", "err", err)
	}
	body := "Hello,\n\nSomeone, perhaps you, tried to create a validmail account with this address, " +
		"but you already have an account.\n\nSign in: " + d.origin(r) + d.path("/login") + "\n" +
		"Forgot your password? Ask for a new one: " + d.origin(r) + d.path("/forgot") + "\n\n" +
		"If it was not you, ignore this message: nothing has changed.\n"
	d.send(ctx, mail.Message{To: email, Subject: "You already have a validmail account", Body: body})
}

// confirmed runs h for an account whose email is confirmed; others are
// told to confirm it first.
func (d *Dashboard) confirmed(h func(w http.ResponseWriter, r *http.Request, a store.Account)) func(w http.ResponseWriter, r *http.Request, a store.Account) {
	return func(w http.ResponseWriter, r *http.Request, a store.Account) {
		if a.Unconfirmed {
			d.render(w, r, http.StatusForbidden, "error", page{Title: "Confirm your email first", Email: a.Email,
				Error: "Confirm your email first: follow the link we sent to " + a.Email + ". You can ask for a new link on the overview."})
			return
		}
		h(w, r, a)
	}
}

// tokenForm is the data of the pages a mailed link opens.
type tokenForm struct {
	Token string
}

func (d *Dashboard) confirmPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusOK, "confirm", page{Title: "Confirm your email", Data: tokenForm{Token: r.URL.Query().Get("token")}})
}

// confirmEmail uses a confirmation link: the account is confirmed, gets
// its signup credits and is signed in, its first key shown. Unless this
// browser is signed in to the account already, the form needs the
// account's password too: a link that reaches someone who did not sign
// up (an account created with their address by another) confirms nothing.
func (d *Dashboard) confirmEmail(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	form := tokenForm{Token: r.PostFormValue("token")}
	w.Header().Set("Cache-Control", "no-store")
	refuse := func(status int, field, msg string) {
		d.render(w, r, status, "confirm", page{Title: "Confirm your email", Error: msg, Field: field, Data: form})
	}
	t, err := d.cfg.Tokens.TakeToken(ctx, store.TokenConfirm, store.HashSecret(form.Token))
	switch {
	case errors.Is(err, store.ErrTokenInvalid):
		form.Token = ""
		refuse(http.StatusBadRequest, "", "This link has expired or was used already. Sign in and ask for a new one on the overview.")
		return
	case err != nil:
		d.backendError(w, r, "take token", err)
		return
	}
	owner := d.sessions.GetString(ctx, sessAccount) == t.AccountID && d.sessions.GetString(ctx, sessMember) == ""
	if !owner {
		ok, wait := d.allowKey(ctx, "password-check:"+t.AccountID, passwordCheckLimit)
		if ok {
			ok = d.passwordMatches(ctx, t.AccountID, r.PostFormValue("password"))
		}
		if !ok {
			// The link stays usable for another try.
			if err := d.cfg.Tokens.CreateToken(ctx, t); err != nil && !errors.Is(err, store.ErrNotFound) {
				d.backendError(w, r, "create token", err)
				return
			}
			if wait > 0 {
				retryAfter(w, wait)
				refuse(http.StatusTooManyRequests, "password", "Too many attempts. Try again in "+humanWait(wait)+".")
				return
			}
			refuse(http.StatusUnprocessableEntity, "password", "That is not the password of the account. Enter the one you chose at sign-up.")
			return
		}
	}
	keepSession := ""
	if owner {
		keepSession = d.sessionID(ctx)
	}
	keep := r.PostFormValue("keep") == "1"
	held, _, err := d.proveOwnership(ctx, t.AccountID, keepSession, keep)
	if err != nil {
		// The link stays usable for another try.
		if err := d.cfg.Tokens.CreateToken(ctx, t); err != nil && !errors.Is(err, store.ErrNotFound) {
			d.cfg.Logger.ErrorContext(ctx, "dashboard: confirmation link not restored", "account_id", t.AccountID, "err", err)
		}
		d.backendError(w, r, "confirm account", err)
		return
	}
	a, err := d.cfg.Accounts.GetAccount(ctx, t.AccountID)
	if err != nil {
		d.backendError(w, r, "get account", err)
		return
	}
	if !owner {
		// Signed in by the link and the password: a second factor is
		// still asked.
		d.flash(ctx, strings.TrimSpace("Your email is confirmed. "+holdingsNote(held, keep)))
		d.signIn(w, r, a, store.Member{}, "", true)
		return
	}
	keys, err := d.cfg.Accounts.ListKeys(ctx, a.ID)
	if err != nil {
		d.backendError(w, r, "list keys", err)
		return
	}
	note := holdingsNote(held, keep)
	if !slices.ContainsFunc(keys, func(k store.Key) bool { return !k.Revoked() }) {
		if note != "" {
			d.flash(ctx, note)
		}
		d.welcome(w, r, a)
		return
	}
	d.flash(ctx, strings.TrimSpace("Your email is confirmed. "+note))
	d.redirect(w, r, "/")
}

// passwordMatches reports whether password is the account's; an account
// without a password matches nothing, in the time a wrong one takes.
func (d *Dashboard) passwordMatches(ctx context.Context, accountID, password string) bool {
	hash, err := d.cfg.Passwords.PasswordHash(ctx, accountID)
	if err != nil || hash == "" {
		hash = d.hasher.dummyHash(ctx)
		accountID = ""
	}
	ok, _ := d.hasher.verify(ctx, password, hash)
	return ok && accountID != ""
}

// resendConfirmation mails a new confirmation link.
func (d *Dashboard) resendConfirmation(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	if !a.Unconfirmed {
		d.redirect(w, r, "/")
		return
	}
	if err := d.mailConfirmation(ctx, r, a); err != nil {
		d.backendError(w, r, "create token", err)
		return
	}
	d.flash(ctx, "We sent a new link to "+a.Email+". It works for 48 hours.")
	d.redirect(w, r, "/")
}

func (d *Dashboard) forgotPage(w http.ResponseWriter, r *http.Request) {
	d.render(w, r, http.StatusOK, "forgot", page{Title: "Forgot your password?", Data: authForm{}})
}

// forgot mails a reset link to an account's email. The answer is the
// same whether an account has the email or not.
func (d *Dashboard) forgot(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	email := strings.TrimSpace(r.PostFormValue("email"))
	refuse := func(status int, msg string) {
		d.render(w, r, status, "forgot", page{Title: "Forgot your password?", Error: msg, Field: "email", Data: authForm{Email: email}})
	}
	if ok, wait := d.allow(r, "forgot:"+d.clientKey(r), forgotLimit); !ok {
		retryAfter(w, wait)
		refuse(http.StatusTooManyRequests, "Too many requests from your network. Try again in "+humanWait(wait)+".")
		return
	}
	if !plainAddress(email) {
		refuse(http.StatusUnprocessableEntity, "Enter an email address like jane@example.com.")
		return
	}
	// The request does the same work whether or not an account has the
	// address: the budgets, then a message enqueued. The lookup, the
	// token and the mail happen behind, so that neither the answer nor
	// its time depends on what the store holds.
	if d.mayMail(ctx, r, email, mailReset) {
		origin := d.origin(r)
		d.later(ctx, ctx.Done(), "reset link", func(ctx context.Context) (mail.Message, bool, error) {
			a, err := d.cfg.Accounts.GetAccountByEmail(ctx, email)
			if errors.Is(err, store.ErrNotFound) {
				return mail.Message{}, false, nil
			}
			if err != nil {
				return mail.Message{}, false, err
			}
			link, err := d.linkAt(ctx, origin, a, store.TokenReset, resetTTL, "/reset")
			if err != nil {
				return mail.Message{}, false, err
			}
			return mail.Message{To: a.Email, Subject: "Set a new validmail password", Body: "Hello,\n\n" +
				"Someone, we hope you, asked to set a new password for the validmail account of this address.\n\n" +
				"To choose one, open this link within an hour; it works once:\n\n" + link + "\n\n" +
				"If it was not you, ignore this message: your password stays as it is.\n"}, true, nil
		})
	}
	d.render(w, r, http.StatusOK, "sent", page{Title: "Check your inbox", Data: sentPage{Email: email, Reset: true}})
}

// sentPage is the answer of the forms that mail: the same whether or not
// an account has the address.
type sentPage struct {
	Email   string
	Reset   bool // a reset link, not a confirmation
	Confirm bool // accounts start unconfirmed
}

func (d *Dashboard) resetPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusOK, "reset", page{Title: "Choose a new password", Data: tokenForm{Token: r.URL.Query().Get("token")}})
}

// reset uses a reset link: the new password replaces the old, the
// account's sessions all end, and the email counts as confirmed (the
// link reached it).
func (d *Dashboard) reset(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	form := tokenForm{Token: r.PostFormValue("token")}
	password := r.PostFormValue("password")
	w.Header().Set("Cache-Control", "no-store")
	refuse := func(status int, field, msg string) {
		d.render(w, r, status, "reset", page{Title: "Choose a new password", Error: msg, Field: field, Data: form})
	}
	if msg := d.passwordProblem(password); msg != "" {
		refuse(http.StatusUnprocessableEntity, "password", msg)
		return
	}
	hash, err := d.hasher.hash(ctx, password)
	if err != nil {
		d.backendError(w, r, "hash password", err)
		return
	}
	t, err := d.cfg.Tokens.TakeToken(ctx, store.TokenReset, store.HashSecret(form.Token))
	switch {
	case errors.Is(err, store.ErrTokenInvalid):
		form.Token = ""
		refuse(http.StatusBadRequest, "", "This link has expired or was used already. Ask for a new one.")
		return
	case err != nil:
		d.backendError(w, r, "take token", err)
		return
	}
	if err := d.setPassword(ctx, t.AccountID, hash, ""); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			refuse(http.StatusBadRequest, "", "This link has expired or was used already. Ask for a new one.")
			return
		}
		d.backendError(w, r, "set password", err)
		return
	}
	// The link reached the address: that proves it, as a confirmation
	// does; what an unconfirmed account held is removed (the sessions
	// have ended already) unless the form says to keep it.
	if _, _, err := d.proveOwnership(ctx, t.AccountID, "", r.PostFormValue("keep") == "1"); err != nil {
		if err := d.cfg.Tokens.CreateToken(ctx, t); err != nil && !errors.Is(err, store.ErrNotFound) {
			d.cfg.Logger.ErrorContext(ctx, "dashboard: reset link not restored", "account_id", t.AccountID, "err", err)
		}
		d.backendError(w, r, "confirm account at reset", err)
		return
	}
	if d.sessions.GetString(ctx, sessAccount) != "" {
		// This browser's session ended with the others, or belongs to
		// another account: either way, sign in anew.
		if err := d.sessions.Destroy(ctx); err != nil {
			d.backendError(w, r, "sign out", err)
			return
		}
	}
	http.Redirect(w, r, d.path("/login")+"?done=reset", http.StatusSeeOther)
}

// setPassword stores the account's new password hash and ends every
// session of the account but keepID.
func (d *Dashboard) setPassword(ctx context.Context, accountID, hash, keepID string) error {
	if err := d.cfg.Passwords.SetPasswordHash(ctx, accountID, hash); err != nil {
		return err
	}
	return d.cfg.Sessions.DeleteAccountSessions(ctx, accountID, keepID)
}

// passwordProblem returns what is wrong with a new password, or "".
func (d *Dashboard) passwordProblem(password string) string {
	if err := d.hasher.check(password); err != nil {
		if errors.Is(err, ErrPasswordCommon) {
			return "That password is one of the most common ones; choose another."
		}
		return "Choose a password of 8 to 128 characters."
	}
	return ""
}

func (d *Dashboard) accountPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	d.render(w, r, http.StatusOK, "account", page{Title: "Account", Nav: "account", Email: a.Email, Data: d.accountView(r.Context(), a)})
}

// changePassword replaces the password of the signed-in account, after
// checking the current one, and ends every other session of the account.
func (d *Dashboard) changePassword(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	refuse := func(status int, field, msg string) {
		d.render(w, r, status, "account", page{Title: "Account", Nav: "account", Email: a.Email, Error: msg, Field: field, Data: d.accountView(ctx, a)})
	}
	current, password := r.PostFormValue("current"), r.PostFormValue("password")
	if ok, wait := d.allowKey(ctx, "password-check:"+a.ID, passwordCheckLimit); !ok {
		retryAfter(w, wait)
		refuse(http.StatusTooManyRequests, "current", "Too many attempts. Try again in "+humanWait(wait)+".")
		return
	}
	if !d.passwordMatches(ctx, a.ID, current) {
		refuse(http.StatusUnprocessableEntity, "current", "Your current password is not that one.")
		return
	}
	if msg := d.passwordProblem(password); msg != "" {
		refuse(http.StatusUnprocessableEntity, "password", msg)
		return
	}
	hash, err := d.hasher.hash(ctx, password)
	if err != nil {
		d.backendError(w, r, "hash password", err)
		return
	}
	// A new token for this browser, then every other session ends.
	if err := d.sessions.RenewToken(ctx); err != nil {
		d.backendError(w, r, "renew session", err)
		return
	}
	if err := d.setPassword(ctx, a.ID, hash, d.sessionID(ctx)); err != nil {
		d.backendError(w, r, "set password", err)
		return
	}
	d.flash(ctx, "Your password is changed. Every other session of your account is signed out.")
	d.redirect(w, r, "/account")
}

// doneMessages are the notes the sign-in page shows after a flow that
// ends signed out (?done=), so that no session is kept to carry them.
var doneMessages = map[string]string{
	"signed-out":   "You are signed out.",
	"confirmed":    "Your email is confirmed: sign in to start.",
	"reset":        "Your password is changed and every session of your account is signed out: sign in with the new one.",
	"code-expired": "The sign-in was not finished in time, or too many codes were wrong: sign in again.",
}
