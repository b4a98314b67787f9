package dashboard

import (
	"crypto/rand"
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/validmail/validmail/store"
)

// deviceLifetime is how long a browser stays a known device of the
// account it signed in to.
const deviceLifetime = 90 * 24 * time.Hour

// maxDeviceToken bounds a device cookie worth looking up: a token is 26
// characters ([rand.Text]).
const maxDeviceToken = 64

// A known device is a browser that signed in to an account before: a
// sign-in with its password once set a device cookie, holding a random
// token the store keeps only as a hash, in the session store (the one
// store every instance shares), with the account, so that a password
// change or reset forgets the account's devices as it ends its sessions.
// Its record's data names the account's email by [emailKey] and is never
// a session's: a device's id is the hash of a prefixed token, which no
// session cookie hashes to.
//
// A sign-in from a known device of the email is not counted against the
// email's failures from everywhere ([Config.SignInFailuresPerEmail]), so
// that strangers on many networks cannot lock the owner out of the
// browsers she uses; it still counts against the client's own limits.
// While such a flood lasts, a browser that is not a known device (a new
// one, or one whose cookies were cleared) signs in by mail instead
// (signinlink.go): its password alone signs in nothing.

// deviceCookie is the name of the device cookie.
func (d *Dashboard) deviceCookie() string {
	if d.cfg.InsecureCookies {
		return "vm_device"
	}
	return "__Host-vm_device"
}

// deviceID is the id a device token is stored under.
func deviceID(token string) string { return store.HashSecret("device:" + token) }

// deviceData is what a device's record holds: the email it signed in to.
func deviceData(email string) []byte { return []byte("device " + emailKey(email)) }

// deviceToken returns the request's device token, "" if it has none
// worth looking up.
func (d *Dashboard) deviceToken(r *http.Request) string {
	c, err := r.Cookie(d.deviceCookie())
	if err != nil || len(c.Value) > maxDeviceToken {
		return ""
	}
	return c.Value
}

// knownDevice reports whether r comes from a known device of email. A
// store that fails makes it a stranger, logged.
func (d *Dashboard) knownDevice(r *http.Request, email string) bool {
	tok := d.deviceToken(r)
	if tok == "" {
		return false
	}
	data, found, err := d.cfg.Sessions.FindSession(r.Context(), deviceID(tok))
	if err != nil {
		d.cfg.Logger.WarnContext(r.Context(), "dashboard: known devices not readable; sign-in counted as a stranger's", "err", err)
		return false
	}
	return found && subtle.ConstantTimeCompare(data, deviceData(email)) == 1
}

// rememberDevice makes the browser a known device of a, which has just
// signed in with its password: a new token (the one it had is forgotten),
// in a cookie as long-lived as the record. A store that fails leaves the
// browser as it was, logged: the sign-in goes on.
func (d *Dashboard) rememberDevice(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	if old := d.deviceToken(r); old != "" {
		if err := d.cfg.Sessions.DeleteSession(ctx, deviceID(old)); err != nil {
			d.cfg.Logger.WarnContext(ctx, "dashboard: a known device not forgotten", "err", err)
		}
	}
	tok := rand.Text()
	expiry := d.cfg.Now().Add(deviceLifetime)
	err := d.cfg.Sessions.SaveSession(ctx, store.Session{ID: deviceID(tok), AccountID: a.ID, Data: deviceData(a.Email), Expiry: expiry})
	if err != nil {
		d.cfg.Logger.WarnContext(ctx, "dashboard: known device not saved", "account_id", a.ID, "err", err)
		return
	}
	http.SetCookie(w, &http.Cookie{
		Name:     d.deviceCookie(),
		Value:    tok,
		Path:     "/",
		Expires:  expiry,
		MaxAge:   int(deviceLifetime.Seconds()),
		HttpOnly: true,
		Secure:   !d.cfg.InsecureCookies,
		SameSite: http.SameSiteLaxMode,
	})
}
