package dashboard

import (
	"context"
	"crypto/rand"
	"errors"
	"net/http"
	"time"

	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// While strangers keep an email's failed sign-ins at their cap from
// everywhere ([Config.SignInFailuresPerEmail]), a browser that is not a
// known device of the email is neither refused nor signed in by its
// password alone: the password is checked, the answer is the same
// whether it is right or wrong, and, when it is right, the address is
// mailed a single-use link (15 minutes) that finishes the sign-in in
// that browser only. The link's token is stored hashed together with a
// random nonce kept in a cookie of the browser that signed in, so the
// link opened anywhere else (a mail scanner, a stranger who got hold of
// the mail) signs in nothing. The owner thus reaches her account from a
// new browser during a flood, and the guesses past the cap learn nothing
// (they cost the guesser's network its failures all the same).
//
// These mails have a budget of their own per address, signinMail, which
// only a right password spends; the budget is taken behind the answer,
// with the token, so that the answer's time does not tell either.

const (
	// signinTTL is how long a mailed sign-in link works.
	signinTTL = 15 * time.Minute
	// maxNonce bounds a sign-in nonce cookie worth reading: a nonce is
	// 26 characters ([rand.Text]).
	maxNonce = 64
)

// signinMail is the budget of mailed sign-in links per address: 5, then
// one every 10 minutes.
var signinMail = ratelimit.Limit{PerSecond: 1 / (10 * time.Minute).Seconds(), Burst: 5}

// signinCookie is the name of the cookie holding the browser's nonce.
func (d *Dashboard) signinCookie() string {
	if d.cfg.InsecureCookies {
		return "vm_signin"
	}
	return "__Host-vm_signin"
}

// signinHash is the stored hash of a sign-in link's token opened in the
// browser holding nonce.
func signinHash(token, nonce string) string {
	return store.HashSecret("signin:" + token + ":" + nonce)
}

// nonceOf returns r's sign-in nonce, "" if it has none worth reading.
func (d *Dashboard) nonceOf(r *http.Request) string {
	c, err := r.Cookie(d.signinCookie())
	if err != nil || len(c.Value) > maxNonce {
		return ""
	}
	return c.Value
}

// signinByMail answers an attempt past the email's cap from a new
// browser (see above): right tells whether the password was the
// account's a.
func (d *Dashboard) signinByMail(w http.ResponseWriter, r *http.Request, form authForm, a store.Account, right bool) {
	ctx := r.Context()
	nonce := d.nonceOf(r)
	if nonce == "" {
		nonce = rand.Text()
	}
	http.SetCookie(w, &http.Cookie{
		Name: d.signinCookie(), Value: nonce, Path: "/", MaxAge: int(signinTTL.Seconds()),
		HttpOnly: true, Secure: !d.cfg.InsecureCookies, SameSite: http.SameSiteLaxMode,
	})
	origin := d.origin(r)
	d.later(ctx, ctx.Done(), "sign-in link", func(ctx context.Context) (mail.Message, bool, error) {
		if !right {
			return mail.Message{}, false, nil
		}
		if ok, _ := d.allowKey(ctx, "mail-signin:"+emailKey(a.Email), signinMail); !ok {
			d.cfg.Logger.WarnContext(ctx, "dashboard: mail not sent: its budget is spent", "client", "sign-in link", "recipient", emailKey(a.Email))
			return mail.Message{}, false, nil
		}
		tok := newToken()
		err := d.cfg.Tokens.CreateToken(ctx, store.Token{Hash: signinHash(tok, nonce), Purpose: store.TokenSignin, AccountID: a.ID,
			Expiry: d.cfg.Now().Add(signinTTL)})
		if err != nil {
			return mail.Message{}, false, err
		}
		link := origin + d.path("/login/link") + "?token=" + tok
		return mail.Message{To: a.Email, Subject: "Finish signing in to validmail", Body: "Hello,\n\n" +
			"Your validmail account is receiving many sign-in attempts from elsewhere, so a sign-in from a browser " +
			"it has not seen before is finished by mail. Someone, we hope you, just signed in with the right password.\n\n" +
			"To finish, open this link within 15 minutes in the same browser; it works once:\n\n" + link + "\n\n" +
			"If it was not you, your password is known to someone else: change it (Account, Change your password), " +
			"or ask for a new one, " + origin + d.path("/forgot") + "\n"}, true, nil
	})
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusOK, "login", page{Title: "Sign in", Data: form,
		Flash: "Your account is receiving many sign-in attempts from elsewhere, so this browser signs in by mail: " +
			"if the password was right, we sent a link to finish signing in here (it works 15 minutes). " +
			"If no mail arrives, check the password and try again."})
}

// signinLinkPage is the page a mailed sign-in link opens: its button
// finishes the sign-in, so that a mail scanner fetching links signs in
// nothing.
func (d *Dashboard) signinLinkPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusOK, "signinlink", page{Title: "Finish signing in", Data: tokenForm{Token: r.URL.Query().Get("token")}})
}

// signinLink uses a mailed sign-in link in the browser that asked for
// it: the browser is signed in and becomes a known device of the
// account.
func (d *Dashboard) signinLink(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	w.Header().Set("Cache-Control", "no-store")
	t, err := d.cfg.Tokens.TakeToken(ctx, store.TokenSignin, signinHash(r.PostFormValue("token"), d.nonceOf(r)))
	switch {
	case errors.Is(err, store.ErrTokenInvalid):
		d.render(w, r, http.StatusBadRequest, "signinlink", page{Title: "Finish signing in", Data: tokenForm{},
			Error: "This link has expired, was used already, or was opened in another browser than the one that signed in. Sign in again."})
		return
	case err != nil:
		d.backendError(w, r, "take token", err)
		return
	}
	a, err := d.cfg.Accounts.GetAccount(ctx, t.AccountID)
	if err != nil {
		d.backendError(w, r, "get account", err)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: d.signinCookie(), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: !d.cfg.InsecureCookies, SameSite: http.SameSiteLaxMode})
	// The link stands for the password: a second factor is still asked.
	d.signIn(w, r, a, store.Member{}, "", false)
}
