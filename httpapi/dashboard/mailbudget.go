package dashboard

import (
	"context"
	"crypto/subtle"
	"net/http"
	"time"

	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// Who may make the console mail an address, and how often. Every message
// goes to the address, never to the one who asks, so the budgets guard
// the inbox against a flood and the owner against being silenced: a
// stranger's requests must not use up what the owner's own request needs.
//
// A request comes from one of three kinds of client, told apart by what
// the deployment's store remembers of the address's past sign-ins:
//
//   - a known device of the address (a browser that signed in to it with
//     its password: device.go) draws on a budget of its own, deviceMail
//     (3 at once, then one every 10 minutes), which no one else can
//     spend;
//   - a known network of the address (a client network, IPv4 /24 or IPv6
//     /64, from which the account signed in with its password within 90
//     days) draws on its network's share, netMail, then on the owner's
//     budget, ownerMail (10 at once, then one every 3 minutes): shared only
//     by networks that could be the owner's, so its refill is a floor of
//     one message every 3 minutes that strangers cannot spend;
//   - anyone else draws on its network's share, netMail (3 at once, then
//     one every 10 minutes), then on the strangers' budget, strangerMail
//     (5 at once, then one every 10 minutes): the most the address gets
//     from every stranger together. The owner in a new browser on a new
//     network is such a stranger; while strangers flood the address, the
//     messages they cause still reach the owner's inbox (a reset link works
//     an hour), at least one every 10 minutes.
//
// A request beyond its budgets is answered as any other (the forms tell
// nothing) and logged, with the address hashed. Every budget lives in
// [Config.Limiter], so it holds across instances; the known networks live
// in the session store with the devices and end with them at a password
// change or reset.
var (
	deviceMail   = ratelimit.Limit{PerSecond: 1 / (10 * time.Minute).Seconds(), Burst: 3}
	netMail      = ratelimit.Limit{PerSecond: 1 / (10 * time.Minute).Seconds(), Burst: 3}
	ownerMail    = ratelimit.Limit{PerSecond: 1 / (3 * time.Minute).Seconds(), Burst: 10}
	strangerMail = ratelimit.Limit{PerSecond: 1 / (10 * time.Minute).Seconds(), Burst: 5}
)

// networkLifetime is how long a network stays a known network of the
// account that signed in from it.
const networkLifetime = deviceLifetime

// networkID is the id a known network of an email is stored under: no
// session or device id hashes the same prefix.
func networkID(email, client string) string {
	return store.HashSecret("network:" + pairKey(email, client))
}

// networkData is what a known network's record holds.
func networkData(email string) []byte { return []byte("network " + emailKey(email)) }

// knownNetwork reports whether r's client network signed in to email
// before. A store that fails makes it a stranger's, logged.
func (d *Dashboard) knownNetwork(ctx context.Context, r *http.Request, email string) bool {
	data, found, err := d.cfg.Sessions.FindSession(ctx, networkID(email, d.clientKey(r)))
	if err != nil {
		d.cfg.Logger.WarnContext(ctx, "dashboard: known networks not readable; request counted as a stranger's", "err", err)
		return false
	}
	return found && subtle.ConstantTimeCompare(data, networkData(email)) == 1
}

// rememberNetwork makes r's client network a known network of a, which
// has just signed in with its password. A store that fails is logged:
// the sign-in goes on.
func (d *Dashboard) rememberNetwork(ctx context.Context, r *http.Request, a store.Account) {
	err := d.cfg.Sessions.SaveSession(ctx, store.Session{ID: networkID(a.Email, d.clientKey(r)), AccountID: a.ID,
		Data: networkData(a.Email), Expiry: d.cfg.Now().Add(networkLifetime)})
	if err != nil {
		d.cfg.Logger.WarnContext(ctx, "dashboard: known network not saved", "account_id", a.ID, "err", err)
	}
}

// Purposes of a message, each with budgets of its own: no other kind of
// mail (a stranger's sign-ups with the owner's address, say) can spend
// what the owner's reset links need.
const (
	mailReset = "reset"
	mailOther = "other"
)

// mayMail reports whether the address may get one more message of
// purpose (mailReset, mailOther) at the request of r now, and counts it
// against the budgets of r's kind of client (above) for that purpose. It
// does the same work whether or not an account has the address. Callers
// ask before creating the message's token, so that asking again and
// again stores nothing either.
func (d *Dashboard) mayMail(ctx context.Context, r *http.Request, to, purpose string) bool {
	device := d.knownDevice(r, to)
	network := d.knownNetwork(ctx, r, to)
	var ok bool
	var kind string
	switch {
	case device:
		kind = "known device"
		ok, _ = d.allowKey(ctx, "mail-device:"+purpose+":"+deviceID(d.deviceToken(r)), deviceMail)
	case network:
		kind = "known network"
		ok = d.allowMail(ctx, r, to, purpose, "mail-owner:"+purpose+":"+emailKey(to), ownerMail)
	default:
		kind = "stranger"
		ok = d.allowMail(ctx, r, to, purpose, "mail-to:"+purpose+":"+emailKey(to), strangerMail)
	}
	if !ok {
		d.cfg.Logger.WarnContext(ctx, "dashboard: mail not sent: its budget is spent", "client", kind,
			"recipient", emailKey(to), "network", d.clientKey(r))
	}
	return ok
}

// allowMail takes a message from the requesting network's share for the
// address, then from the address's budget of key.
func (d *Dashboard) allowMail(ctx context.Context, r *http.Request, to, purpose, key string, limit ratelimit.Limit) bool {
	if ok, _ := d.allowKey(ctx, "mail-net:"+purpose+":"+pairKey(to, d.clientKey(r)), netMail); !ok {
		return false
	}
	ok, _ := d.allowKey(ctx, key, limit)
	return ok
}
