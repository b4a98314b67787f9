package emailcheck

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
)

// ErrResolverUntrusted reports nameservers that deny names that must
// exist (the root, a top-level domain): their NXDOMAIN answers prove
// nothing, so no address is condemned on them ([ReasonDNSUntrusted]).
// [Validator.PingNameservers] returns it wrapped.
var ErrResolverUntrusted = errors.New("emailcheck: the nameservers deny names that exist")

// DefaultTrustCheckInterval is how long a verdict on whether the
// nameservers tell the truth stands by default ([Config.TrustCheckInterval]).
const DefaultTrustCheckInterval = 30 * time.Second

// trustUnansweredAge is how long a trust check that got no answer at all
// stands: the nameservers are then down rather than lying, and the check
// is asked again soon after they answer.
const trustUnansweredAge = time.Second

// trust is the verdict on whether the nameservers tell the truth: they
// answer for names that must exist (the root's SOA, and the first canary
// zone's, a top-level domain by default). Only then does an NXDOMAIN
// condemn a domain.
type trust struct {
	every  time.Duration // how long a verdict stands
	zone   string        // the top-level domain asked, fully qualified
	logger *slog.Logger

	mu        sync.Mutex
	checkedAt time.Time
	age       time.Duration // how long this verdict stands
	err       error         // nil: trusted
	liar      bool          // the last verdict found a denial (logged once)
	running   chan struct{} // closed when the check under way ends
}

// trusted reports whether the nameservers' NXDOMAIN answers can be
// believed, checking anew when the last verdict is older than its age.
// Lookups that need a verdict while a check is under way wait for it.
func (r *resolver) trusted(ctx context.Context) bool {
	return r.trustErr(ctx) == nil
}

// trustErr returns nil when the nameservers can be believed, or why not.
func (r *resolver) trustErr(ctx context.Context) error {
	t := &r.trust
	t.mu.Lock()
	if !t.checkedAt.IsZero() && time.Since(t.checkedAt) < t.age {
		defer t.mu.Unlock()
		return t.err
	}
	if running := t.running; running != nil {
		t.mu.Unlock()
		select {
		case <-running:
		case <-ctx.Done():
			return ctx.Err()
		}
		t.mu.Lock()
		defer t.mu.Unlock()
		return t.err
	}
	running := make(chan struct{})
	t.running = running
	t.mu.Unlock()

	err, denied := r.checkTrust(ctx)
	t.mu.Lock()
	defer func() {
		t.running = nil
		close(running)
		t.mu.Unlock()
	}()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	t.checkedAt, t.err, t.age = time.Now(), err, t.every
	if err != nil && !denied {
		t.age = trustUnansweredAge
	}
	switch {
	case denied && !t.liar:
		t.liar = true
		t.logger.ErrorContext(ctx, "emailcheck: the nameservers deny names that exist; no address is judged INVALID_DOMAIN on their answers until they answer truthfully (checked again every "+t.every.String()+")", "err", err)
	case err == nil && t.liar:
		t.liar = false
		t.logger.InfoContext(ctx, "emailcheck: the nameservers answer truthfully again")
	}
	return err
}

// distrustGap is the least time between two checks that answers hinting
// at a lie ask for: a domain whose own servers answer NXDOMAIN without an
// SOA, which anyone can submit, must not make every lookup a check.
const distrustGap = 5 * time.Second

// distrust makes the next lookup that needs the verdict check anew, at
// most once per distrustGap: an answer showed the nameservers may be
// lying (an NXDOMAIN without the zone's SOA).
func (r *resolver) distrust() {
	t := &r.trust
	t.mu.Lock()
	if !t.checkedAt.IsZero() && time.Since(t.checkedAt) >= distrustGap {
		t.checkedAt = time.Time{}
	}
	t.mu.Unlock()
}

// checkTrust asks every nameserver for the root's SOA and the top-level
// domain's: each must be answered NOERROR by one of them. denied reports
// an answer that denied one (any other rcode), as opposed to no answer.
func (r *resolver) checkTrust(ctx context.Context) (err error, denied bool) {
	for _, name := range []string{".", r.trust.zone} {
		m := new(dns.Msg)
		m.SetQuestion(name, dns.TypeSOA)
		m.RecursionDesired = true
		var sawDenial bool
		var mu sync.Mutex
		err := r.askAll(ctx, []*dns.Msg{m}, func(ns *nameserver, resp *dns.Msg) error {
			if resp.Rcode == dns.RcodeSuccess {
				return nil
			}
			mu.Lock()
			sawDenial = true
			mu.Unlock()
			return fmt.Errorf("%s: %s for %s, which exists", ns.addr, dns.RcodeToString[resp.Rcode], name)
		})
		if err != nil {
			mu.Lock()
			defer mu.Unlock()
			if sawDenial {
				return fmt.Errorf("%w: %w", ErrResolverUntrusted, err), true
			}
			return err, false
		}
	}
	return nil, false
}

// trustZone returns the top-level domain a trust check asks for: the
// first canary zone's last label.
func trustZone(canaryZones []string) string {
	if len(canaryZones) == 0 {
		return "com."
	}
	z := strings.TrimSuffix(canaryZones[0], ".")
	if i := strings.LastIndexByte(z, '.'); i >= 0 {
		z = z[i+1:]
	}
	return z + "."
}

// TrustState tells whether the nameservers' NXDOMAIN answers are
// believed, from the latest check (without asking): "trusted",
// "untrusted" (they denied a name that exists: no address is judged
// INVALID_DOMAIN), "unanswered" (the latest check got no answer) or
// "unchecked".
func (v *Validator) TrustState() string {
	t := &v.resolver.trust
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case t.checkedAt.IsZero():
		return "unchecked"
	case t.err == nil:
		return "trusted"
	case t.liar:
		return "untrusted"
	}
	return "unanswered"
}
