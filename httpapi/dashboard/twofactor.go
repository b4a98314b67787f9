package dashboard

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"html/template"
	"image/png"
	"net/http"
	"strings"
	"time"

	"github.com/pquerna/otp"
	"github.com/pquerna/otp/hotp"
	"github.com/pquerna/otp/totp"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// Two-factor sign-in ([Config.TwoFactor]): every login (an account's
// owner, or a member) may add a TOTP authenticator (RFC 6238: 6 digits,
// 30-second steps, SHA-1, as every authenticator app reads an otpauth
// URI) on /account/totp, confirmed with a current code, and gets
// recoveryCodeCount single-use recovery codes, shown once and stored
// hashed. A login with a second factor signs in in two steps: the
// password (or the mailed sign-in link, or a confirmation link) leaves a
// pending sign-in in the session, which grants nothing, and /login/code
// finishes it with a current code or a recovery code within pendingTTL.
// A code is accepted once: the store keeps the last step used
// ([store.TwoFactor.UseTOTPStep]). Code attempts are bounded per login in
// the deployment's limiter (codeLimit), and a pending sign-in ends after
// maxPendingTries wrong codes. An owner may require a second factor of
// the whole team: a login without one is then sent to add it right
// after signing in and may use nothing else until it has.

// Session keys of a pending sign-in and of a login that must add a
// second factor.
const (
	sessPendingAccount = "pending_account"
	sessPendingMember  = "pending_member"
	sessPendingNext    = "pending_next"
	sessPendingUntil   = "pending_until"
	sessPendingTries   = "pending_tries"
	sessPendingWelcome = "pending_welcome"
	sessPendingMark    = "pending_mark"
	sessEnroll         = "totp_enroll"
	sessTOTPSetup      = "totp_setup" // the otpauth URI being set up
)

const (
	// pendingTTL is how long a pending sign-in waits for its code.
	pendingTTL = 5 * time.Minute
	// maxPendingTries is how many wrong codes end a pending sign-in.
	maxPendingTries = 5
	// recoveryCodeCount is how many recovery codes a login gets.
	recoveryCodeCount = 10
	// recoveryCodeLen is a recovery code's length without its dashes:
	// 16 base32 characters, 80 bits.
	recoveryCodeLen = 16
	// totpIssuer names the service in authenticator apps.
	totpIssuer = "validmail"
	// maxCodeInput bounds a code field worth reading.
	maxCodeInput = 64
)

// codeLimit bounds the second-factor codes tried per login, wherever
// they come from: 10, then one every 30 seconds.
var codeLimit = ratelimit.Limit{PerSecond: 1.0 / 30, Burst: 10}

// totpOpts are the code parameters of every authenticator.
var totpOpts = hotp.ValidateOpts{Digits: otp.DigitsSix, Algorithm: otp.AlgorithmSHA1}

// loginID names a login for its second factor: the account's id for
// its owner, the member's id for a member.
func loginID(a store.Account, m store.Member) string {
	if m.ID != "" {
		return m.ID
	}
	return a.ID
}

// loginEmail is the address a login signs in with.
func loginEmail(a store.Account, m store.Member) string {
	if m.ID != "" {
		return m.Email
	}
	return a.Email
}

// signIn is where every way of signing in ends once the password (or a
// mailed link) is right: a login with a second factor gets a pending
// sign-in and the code page; any other is signed in. welcome asks for
// the first key's page of a confirmed owner without keys.
func (d *Dashboard) signIn(w http.ResponseWriter, r *http.Request, a store.Account, m store.Member, next string, welcome bool) {
	ctx := r.Context()
	if d.cfg.TwoFactor != nil {
		_, err := d.cfg.TwoFactor.TOTP(ctx, loginID(a, m))
		switch {
		case err == nil:
			mark, err := d.passwordMark(ctx, a, m)
			if err != nil {
				d.backendError(w, r, "password", err)
				return
			}
			if err := d.sessions.RenewToken(ctx); err != nil {
				d.backendError(w, r, "renew session", err)
				return
			}
			for _, k := range []string{sessAccount, sessMember, sessEnroll, sessTOTPSetup} {
				d.sessions.Remove(ctx, k)
			}
			d.sessions.Put(ctx, sessPendingAccount, a.ID)
			d.sessions.Put(ctx, sessPendingMember, m.ID)
			d.sessions.Put(ctx, sessPendingNext, next)
			d.sessions.Put(ctx, sessPendingUntil, d.cfg.Now().Add(pendingTTL).Unix())
			d.sessions.Put(ctx, sessPendingTries, 0)
			d.sessions.Put(ctx, sessPendingWelcome, welcome)
			d.sessions.Put(ctx, sessPendingMark, mark)
			d.redirect(w, r, "/login/code")
			return
		case !errors.Is(err, store.ErrNotFound):
			d.backendError(w, r, "second factor", err)
			return
		}
	}
	d.finishSignIn(w, r, a, m, next, welcome, false)
}

// finishSignIn signs a login in: a new session token, the known device
// and network; then, when its team requires a second factor it has not
// (hasTOTP), the page to add one; else the first key's page (welcome)
// or next.
func (d *Dashboard) finishSignIn(w http.ResponseWriter, r *http.Request, a store.Account, m store.Member, next string, welcome, hasTOTP bool) {
	ctx := r.Context()
	if err := d.sessions.RenewToken(ctx); err != nil {
		d.backendError(w, r, "renew session", err)
		return
	}
	d.sessions.Put(ctx, sessAccount, a.ID)
	as := a
	if m.ID != "" {
		d.sessions.Put(ctx, sessMember, m.ID)
		as.Email = m.Email
	}
	d.rememberDevice(w, r, as)
	d.rememberNetwork(ctx, r, as)
	if d.cfg.TwoFactor != nil && !hasTOTP {
		required, err := d.cfg.TwoFactor.TeamTOTP(ctx, a.ID)
		if err != nil {
			d.backendError(w, r, "team second factor", err)
			return
		}
		if required {
			d.sessions.Put(ctx, sessEnroll, true)
			d.flash(ctx, "Your team requires two-factor sign-in: add an authenticator to continue.")
			d.redirect(w, r, "/account/totp")
			return
		}
	}
	if welcome && m.ID == "" && !a.Unconfirmed {
		keys, err := d.cfg.Accounts.ListKeys(ctx, a.ID)
		if err != nil {
			d.backendError(w, r, "list keys", err)
			return
		}
		if len(keys) == 0 {
			d.welcome(w, r, a)
			return
		}
	}
	http.Redirect(w, r, cmpOr(next, d.path("/")), http.StatusSeeOther)
}

// enrollOnly reports whether the request's login must add a second
// factor before anything else (see mustEnroll), and answers it when so:
// pages send it to /account/totp, other requests get 403.
func (d *Dashboard) enrollOnly(w http.ResponseWriter, r *http.Request, a store.Account) bool {
	if d.cfg.TwoFactor == nil {
		return false
	}
	if p := r.URL.Path; p == d.path("/account/totp") || strings.HasPrefix(p, d.path("/account/totp/")) {
		return false
	}
	ctx := r.Context()
	must, err := d.mustEnroll(ctx, a, viewerOf(ctx).Member)
	if err != nil {
		d.backendError(w, r, "team second factor", err)
		return true
	}
	if !must {
		return false
	}
	if r.Method == http.MethodGet && r.Header.Get("HX-Request") != "true" {
		d.redirect(w, r, "/account/totp")
		return true
	}
	d.fail(w, r, http.StatusForbidden, "Your team requires two-factor sign-in: add an authenticator on your account page first.")
	return true
}

// codeAllowed takes one code attempt of the login from its budget. A
// failing limiter refuses: a guess at a code is never let through.
func (d *Dashboard) codeAllowed(ctx context.Context, login string) (bool, time.Duration) {
	dec, err := d.limits.buckets.Allow(ctx, "totp-code:"+login, codeLimit)
	if err != nil {
		d.cfg.Logger.WarnContext(ctx, "dashboard: rate limiter failed; a second-factor code refused", "err", err)
		return false, time.Minute
	}
	return dec.Allowed, dec.RetryAfter
}

// normalizeCode returns a typed code without spaces and dashes, in
// lower case.
func normalizeCode(s string) string {
	if len(s) > maxCodeInput {
		return ""
	}
	return strings.ToLower(strings.NewReplacer(" ", "", "-", "", "\t", "").Replace(s))
}

// matchStep returns the time step, one either side of now's, whose code
// is code, or false.
func matchStep(secret, code string, now time.Time) (int64, bool) {
	if len(code) != 6 {
		return 0, false
	}
	step := now.Unix() / 30
	for _, s := range []int64{step, step - 1, step + 1} {
		want, err := hotp.GenerateCodeCustom(secret, uint64(s), totpOpts)
		if err == nil && subtle.ConstantTimeCompare([]byte(want), []byte(code)) == 1 {
			return s, true
		}
	}
	return 0, false
}

// recoveryHash is the stored hash of a normalized recovery code.
func recoveryHash(code string) string { return store.HashSecret("recovery:" + code) }

// checkCode uses a current code (once) or a recovery code (once) of
// the login, reporting whether it was right and whether it was a
// recovery code.
func (d *Dashboard) checkCode(ctx context.Context, login, typed string) (ok, recovery bool, err error) {
	code := normalizeCode(typed)
	if code == "" {
		return false, false, nil
	}
	t, err := d.cfg.TwoFactor.TOTP(ctx, login)
	if errors.Is(err, store.ErrNotFound) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	if len(code) == recoveryCodeLen {
		ok, err := d.cfg.TwoFactor.UseRecoveryCode(ctx, login, recoveryHash(code))
		if errors.Is(err, store.ErrNotFound) {
			err = nil
		}
		return ok, true, err
	}
	step, match := matchStep(t.Secret, code, d.cfg.Now())
	if !match {
		return false, false, nil
	}
	ok, err = d.cfg.TwoFactor.UseTOTPStep(ctx, login, step)
	if errors.Is(err, store.ErrNotFound) {
		err = nil
	}
	return ok, false, err
}

// pendingSignIn is the session's pending sign-in, if it is still live.
type pendingSignIn struct {
	AccountID, MemberID, Next string
	Mark                      string // passwordMark when it began
	Tries                     int
	Welcome                   bool
}

func (d *Dashboard) pending(ctx context.Context) (pendingSignIn, bool) {
	p := pendingSignIn{
		AccountID: d.sessions.GetString(ctx, sessPendingAccount),
		MemberID:  d.sessions.GetString(ctx, sessPendingMember),
		Next:      d.sessions.GetString(ctx, sessPendingNext),
		Tries:     d.sessions.GetInt(ctx, sessPendingTries),
		Welcome:   d.sessions.GetBool(ctx, sessPendingWelcome),
		Mark:      d.sessions.GetString(ctx, sessPendingMark),
	}
	until := d.sessions.GetInt64(ctx, sessPendingUntil)
	return p, p.AccountID != "" && d.cfg.Now().Unix() < until
}

// dropPending ends the session's pending sign-in.
func (d *Dashboard) dropPending(ctx context.Context) {
	for _, k := range []string{sessPendingAccount, sessPendingMember, sessPendingNext, sessPendingUntil, sessPendingTries, sessPendingWelcome, sessPendingMark} {
		d.sessions.Remove(ctx, k)
	}
}

const codePrompt = "Enter the 6-digit code your authenticator app shows, or one of your recovery codes."

// codePage is the second step of a sign-in.
func (d *Dashboard) codePage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	if _, ok := d.pending(r.Context()); !ok {
		d.redirect(w, r, "/login")
		return
	}
	d.render(w, r, http.StatusOK, "logincode", page{Title: "Two-factor sign-in", Flash: codePrompt})
}

// signinCode finishes a pending sign-in with a code.
func (d *Dashboard) signinCode(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	w.Header().Set("Cache-Control", "no-store")
	p, ok := d.pending(ctx)
	if !ok {
		d.dropPending(ctx)
		http.Redirect(w, r, d.path("/login")+"?done=code-expired", http.StatusSeeOther)
		return
	}
	refuse := func(status int, msg string) {
		d.render(w, r, status, "logincode", page{Title: "Two-factor sign-in", Flash: codePrompt, Error: msg, Field: "code"})
	}
	login := cmpOr(p.MemberID, p.AccountID)
	if ok, wait := d.codeAllowed(ctx, login); !ok {
		retryAfter(w, wait)
		refuse(http.StatusTooManyRequests, "Too many codes were tried. Try again in "+humanWait(wait)+".")
		return
	}
	a, m, found, err := d.pendingLogin(ctx, p)
	if err != nil {
		d.backendError(w, r, "get account", err)
		return
	}
	if !found {
		d.dropPending(ctx)
		http.Redirect(w, r, d.path("/login")+"?done=code-expired", http.StatusSeeOther)
		return
	}
	right, recovery, err := d.checkCode(ctx, login, r.PostFormValue("code"))
	if err != nil {
		d.backendError(w, r, "check code", err)
		return
	}
	if !right {
		if p.Tries+1 >= maxPendingTries {
			d.dropPending(ctx)
			http.Redirect(w, r, d.path("/login")+"?done=code-expired", http.StatusSeeOther)
			return
		}
		d.sessions.Put(ctx, sessPendingTries, p.Tries+1)
		refuse(http.StatusUnauthorized, "That code is wrong, or was used already. Wait for the next code and try again.")
		return
	}
	d.dropPending(ctx)
	if recovery {
		d.flash(ctx, "You signed in with a recovery code, which now works no more. Keep the others safe, or set up your authenticator anew on your account page.")
	}
	d.finishSignIn(w, r, a, m, p.Next, p.Welcome, true)
}

// pendingLogin loads a pending sign-in's account and member: found
// false when either is gone, or when the login's password changed since
// the sign-in began (a reset ends it as it ends the login's sessions,
// on every instance: the mark is in the session, the hash in the store).
func (d *Dashboard) pendingLogin(ctx context.Context, p pendingSignIn) (store.Account, store.Member, bool, error) {
	a, err := d.cfg.Accounts.GetAccount(ctx, p.AccountID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Account{}, store.Member{}, false, nil
	}
	if err != nil {
		return store.Account{}, store.Member{}, false, err
	}
	var m store.Member
	if p.MemberID != "" {
		if d.cfg.Team == nil {
			return store.Account{}, store.Member{}, false, nil
		}
		m, err = d.cfg.Team.Member(ctx, a.ID, p.MemberID)
		if errors.Is(err, store.ErrNotFound) {
			return store.Account{}, store.Member{}, false, nil
		}
		if err != nil {
			return store.Account{}, store.Member{}, false, err
		}
	}
	mark, err := d.passwordMark(ctx, a, m)
	if err != nil {
		return store.Account{}, store.Member{}, false, err
	}
	if subtle.ConstantTimeCompare([]byte(mark), []byte(p.Mark)) != 1 {
		return store.Account{}, store.Member{}, false, nil
	}
	return a, m, true, nil
}

// passwordMark is a fingerprint of the login's password hash ("" for
// none): a pending sign-in keeps the one it began with, and ends when
// the password changes.
func (d *Dashboard) passwordMark(ctx context.Context, a store.Account, m store.Member) (string, error) {
	hash := m.PasswordHash
	if m.ID == "" {
		h, err := d.cfg.Passwords.PasswordHash(ctx, a.ID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		hash = h
	}
	sum := sha256.Sum256([]byte("validmail pending sign-in\x00" + hash))
	return hex.EncodeToString(sum[:16]), nil
}

// totpData is what the second-factor page shows.
type totpData struct {
	Enabled  bool
	Left     int          // recovery codes left
	URI      string       // the otpauth URI being set up
	Link     template.URL // the same, as a link's target
	Secret   string       // its secret, to type in
	QR       template.URL // its QR code, a data: URL
	Codes    []string     // the new recovery codes, shown once
	Required bool         // the team requires a second factor
	Password bool         // the login disables with its password too
}

// totpPage shows the login's second factor, or sets one up: a new
// secret is kept in the session until a code confirms it.
func (d *Dashboard) totpPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	d.renderTOTP(w, r, a, http.StatusOK, "", "")
}

func (d *Dashboard) renderTOTP(w http.ResponseWriter, r *http.Request, a store.Account, status int, errMsg, field string) {
	ctx := r.Context()
	w.Header().Set("Cache-Control", "no-store")
	m := viewerOf(ctx).Member
	var data totpData
	required, err := d.cfg.TwoFactor.TeamTOTP(ctx, a.ID)
	if err != nil {
		d.backendError(w, r, "team second factor", err)
		return
	}
	data.Required = required
	t, err := d.cfg.TwoFactor.TOTP(ctx, loginID(a, m))
	switch {
	case err == nil:
		data.Enabled, data.Left = true, len(t.RecoveryHashes)
		// Enabled in another session: nothing is left to enroll.
		d.sessions.Remove(ctx, sessEnroll)
	case errors.Is(err, store.ErrNotFound):
		key, err := d.setupKey(ctx, loginEmail(a, m))
		if err != nil {
			d.backendError(w, r, "new second factor", err)
			return
		}
		data.URI, data.Secret, data.QR = key.URL(), key.Secret(), qrImage(key)
		// The URI is made here, of the issuer, the login's address and
		// the key, all escaped by otp: a safe link.
		data.Link = template.URL(key.URL())
	default:
		d.backendError(w, r, "second factor", err)
		return
	}
	d.render(w, r, status, "totp", page{Title: "Two-factor sign-in", Nav: "account", Error: errMsg, Field: field, Data: data})
}

// setupKey returns the key being set up in this session, made now if
// there is none.
func (d *Dashboard) setupKey(ctx context.Context, email string) (*otp.Key, error) {
	if u := d.sessions.GetString(ctx, sessTOTPSetup); u != "" {
		if key, err := otp.NewKeyFromURL(u); err == nil && key.AccountName() == email {
			return key, nil
		}
	}
	key, err := totp.Generate(totp.GenerateOpts{Issuer: totpIssuer, AccountName: email, Rand: rand.Reader})
	if err != nil {
		return nil, err
	}
	d.sessions.Put(ctx, sessTOTPSetup, key.URL())
	return key, nil
}

// qrImage is the key's QR code as a PNG data: URL, or "" if it cannot be
// drawn.
func qrImage(key *otp.Key) template.URL {
	img, err := key.Image(240, 240)
	if err != nil {
		return ""
	}
	var b bytes.Buffer
	if err := png.Encode(&b, img); err != nil {
		return ""
	}
	return template.URL("data:image/png;base64," + base64.StdEncoding.EncodeToString(b.Bytes()))
}

// newRecoveryCodes returns recoveryCodeCount codes as shown (four
// groups of four) and their hashes.
func newRecoveryCodes() (shown, hashes []string) {
	for range recoveryCodeCount {
		c := strings.ToLower(rand.Text()[:recoveryCodeLen])
		shown = append(shown, c[0:4]+"-"+c[4:8]+"-"+c[8:12]+"-"+c[12:16])
		hashes = append(hashes, recoveryHash(c))
	}
	return shown, hashes
}

// enableTOTP confirms the key being set up with a current code, stores
// it and shows the recovery codes, once.
func (d *Dashboard) enableTOTP(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	m := viewerOf(ctx).Member
	login := loginID(a, m)
	// A login that has a factor keeps it: replacing one is turning it
	// off (with a proof) and on again, so that a stale setup page (of a
	// forgotten tab or a stolen cookie) cannot swap the key and mint
	// recovery codes.
	switch _, err := d.cfg.TwoFactor.TOTP(ctx, login); {
	case err == nil:
		d.totpExists(w, r, a)
		return
	case !errors.Is(err, store.ErrNotFound):
		d.backendError(w, r, "second factor", err)
		return
	}
	u := d.sessions.GetString(ctx, sessTOTPSetup)
	key, err := otp.NewKeyFromURL(u)
	if u == "" || err != nil || key.AccountName() != loginEmail(a, m) {
		d.renderTOTP(w, r, a, http.StatusConflict, "This setup has expired: scan the new code below.", "code")
		return
	}
	if ok, wait := d.codeAllowed(ctx, login); !ok {
		retryAfter(w, wait)
		d.renderTOTP(w, r, a, http.StatusTooManyRequests, "Too many codes were tried. Try again in "+humanWait(wait)+".", "code")
		return
	}
	step, ok := matchStep(key.Secret(), normalizeCode(r.PostFormValue("code")), d.cfg.Now())
	if !ok {
		d.renderTOTP(w, r, a, http.StatusUnprocessableEntity, "That is not the code your app shows now. Check the app's clock and try the next code.", "code")
		return
	}
	shown, hashes := newRecoveryCodes()
	err = d.cfg.TwoFactor.EnableTOTP(ctx, store.TOTP{LoginID: login, AccountID: a.ID, Secret: key.Secret(), RecoveryHashes: hashes, LastStep: step})
	if errors.Is(err, store.ErrTOTPExists) { // enabled meanwhile elsewhere
		d.totpExists(w, r, a)
		return
	}
	if err != nil {
		d.backendError(w, r, "enable second factor", err)
		return
	}
	d.sessions.Remove(ctx, sessTOTPSetup)
	d.sessions.Remove(ctx, sessEnroll)
	d.enroll.has.forget(login)
	d.audit(ctx, a, "totp.enabled", loginEmail(a, m))
	w.Header().Set("Cache-Control", "no-store")
	d.render(w, r, http.StatusOK, "totp", page{Title: "Two-factor sign-in", Nav: "account",
		Flash: "Two-factor sign-in is on.", Data: totpData{Enabled: true, Left: len(hashes), Codes: shown}})
}

// totpExists answers a setup of a login that has a second factor.
func (d *Dashboard) totpExists(w http.ResponseWriter, r *http.Request, a store.Account) {
	d.sessions.Remove(r.Context(), sessTOTPSetup)
	d.renderTOTP(w, r, a, http.StatusConflict, "Two-factor sign-in is on already: to set up another key, turn it off first.", "")
}

// disableTOTP removes the login's second factor, given a current code,
// a recovery code or the login's password; not while its team requires
// one.
func (d *Dashboard) disableTOTP(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	m := viewerOf(ctx).Member
	login := loginID(a, m)
	required, err := d.cfg.TwoFactor.TeamTOTP(ctx, a.ID)
	if err != nil {
		d.backendError(w, r, "team second factor", err)
		return
	}
	if required {
		d.renderTOTP(w, r, a, http.StatusConflict, "Your team requires two-factor sign-in: it stays on.", "")
		return
	}
	right, err := d.proveLogin(ctx, a, m, r.PostFormValue("code"), r.PostFormValue("password"))
	if err != nil {
		d.backendError(w, r, "check code", err)
		return
	}
	if !right {
		d.renderTOTP(w, r, a, http.StatusUnprocessableEntity, "Enter a current code, a recovery code or your password.", "code")
		return
	}
	if err := d.cfg.TwoFactor.DisableTOTP(ctx, login); err != nil && !errors.Is(err, store.ErrNotFound) {
		d.backendError(w, r, "disable second factor", err)
		return
	}
	d.enroll.has.forget(login)
	d.audit(ctx, a, "totp.disabled", loginEmail(a, m))
	d.flash(ctx, "Two-factor sign-in is off.")
	d.redirect(w, r, "/account/totp")
}

// proveLogin checks a code or, without one, the login's password, each
// within its budget.
func (d *Dashboard) proveLogin(ctx context.Context, a store.Account, m store.Member, code, password string) (bool, error) {
	login := loginID(a, m)
	if strings.TrimSpace(code) != "" {
		if ok, _ := d.codeAllowed(ctx, login); !ok {
			return false, nil
		}
		ok, _, err := d.checkCode(ctx, login, code)
		return ok, err
	}
	if password == "" {
		return false, nil
	}
	if ok, _ := d.allowKey(ctx, "password-check:"+login, passwordCheckLimit); !ok {
		return false, nil
	}
	if m.ID == "" {
		return d.passwordMatches(ctx, a.ID, password), nil
	}
	ok, _ := d.hasher.verify(ctx, password, m.PasswordHash)
	return ok, nil
}

// teamTOTP sets or clears the team's requirement of a second factor;
// the owner needs one first, and clears it with a current code, a
// recovery code or their password, as turning their own off needs.
func (d *Dashboard) teamTOTP(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	required := r.PostFormValue("required") == "on"
	if !required {
		was, err := d.cfg.TwoFactor.TeamTOTP(ctx, a.ID)
		if err != nil {
			d.backendError(w, r, "team second factor", err)
			return
		}
		if !was {
			d.redirect(w, r, "/team")
			return
		}
		right, err := d.proveLogin(ctx, a, store.Member{}, r.PostFormValue("code"), r.PostFormValue("password"))
		if err != nil {
			d.backendError(w, r, "check code", err)
			return
		}
		if !right {
			d.renderTeam(w, r, a, http.StatusUnprocessableEntity, teamData{},
				"To stop requiring two-factor sign-in, enter a current code, a recovery code or your password.", "totp-code")
			return
		}
	}
	if required {
		_, err := d.cfg.TwoFactor.TOTP(ctx, a.ID)
		if errors.Is(err, store.ErrNotFound) {
			d.flash(ctx, "Turn on two-factor sign-in for yourself first (Account, Two-factor sign-in).")
			d.redirect(w, r, "/team")
			return
		}
		if err != nil {
			d.backendError(w, r, "second factor", err)
			return
		}
	}
	if err := d.cfg.TwoFactor.SetTeamTOTP(ctx, a.ID, required); err != nil {
		d.backendError(w, r, "team second factor", err)
		return
	}
	d.enroll.required.forget(a.ID)
	if required {
		d.audit(ctx, a, "team.totp_required", "every member signs in with a second factor")
		d.flash(ctx, "Every member now signs in with a second factor; those without one add it at their next sign-in.")
	} else {
		d.audit(ctx, a, "team.totp_optional", "a second factor is each member's choice")
		d.flash(ctx, "A second factor is now each member's choice.")
	}
	d.redirect(w, r, "/team")
}

// twoFactorRoutes are the second factor's routes, served when the
// backend keeps second factors. Its changes need a confirmed account,
// as every change does.
func (d *Dashboard) twoFactorRoutes(pub func(string, string, http.HandlerFunc) Route,
	in, conf func(string, string, func(http.ResponseWriter, *http.Request, store.Account)) Route) []Route {
	if d.cfg.TwoFactor == nil {
		return nil
	}
	routes := []Route{
		pub("GET", "/login/code", d.codePage),
		pub("POST", "/login/code", d.signinCode),
		in("GET", "/account/totp", d.totpPage),
		conf("POST", "/account/totp", d.enableTOTP),
		conf("POST", "/account/totp/disable", d.disableTOTP),
	}
	if d.cfg.Team != nil {
		routes = append(routes, conf("POST", "/team/totp", d.teamTOTP))
	}
	return routes
}
