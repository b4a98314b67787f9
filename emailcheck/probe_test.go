package emailcheck_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
)

// proberFunc is a MailboxProber answering "exists" and counting its calls.
type proberFunc struct{ calls atomic.Int32 }

func (p *proberFunc) ProbeMailbox(context.Context, emailcheck.ProbeRequest) emailcheck.SMTPResult {
	p.calls.Add(1)
	no := false
	return emailcheck.SMTPResult{Checked: true, Mailbox: emailcheck.MailboxExists, CatchAll: &no}
}

// accountBudget lets each account make n probes.
type accountBudget struct {
	mu   sync.Mutex
	n    int
	used map[string]int
}

func (b *accountBudget) allow(_ context.Context, account string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used[account] >= b.n {
		return false
	}
	b.used[account]++
	return true
}

func probeValidator(t *testing.T, p emailcheck.MailboxProber, budget func(context.Context, string) bool) *emailcheck.Validator {
	t.Helper()
	srv := dnstest.Start(t, dnstest.Zone{
		"shop.io":     {MX: []dnstest.MX{{Pref: 10, Host: "mx.shop.io", Addrs: []string{"192.0.2.25"}}}},
		"nomail.shop": {A: []string{"192.0.2.80"}},
	}, nil)
	// 192.0.2.25 is a documentation address, hence AllowPrivateMX; the
	// prober here dials nothing.
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}, AllowPrivateMX: true, Prober: p, ProbeBudget: budget})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { v.Close() })
	return v
}

func TestWithoutProbe(t *testing.T) {
	t.Parallel()
	p := &proberFunc{}
	v := probeValidator(t, p, nil)
	res, err := v.Validate(context.Background(), "jane@shop.io", emailcheck.WithoutProbe())
	if err != nil {
		t.Fatal(err)
	}
	if p.calls.Load() != 0 || res.Confidence.Status != emailcheck.StatusLikely || res.SMTP == nil || res.SMTP.Checked {
		t.Fatalf("%d probes, %s, smtp %+v; want none, LIKELY, not checked", p.calls.Load(), res.Confidence.Status, res.SMTP)
	}
	res, err = v.Validate(context.Background(), "jane@shop.io")
	if err != nil {
		t.Fatal(err)
	}
	if p.calls.Load() != 1 || res.Confidence.Status != emailcheck.StatusDeliverable {
		t.Fatalf("without the option: %d probes, %s; want 1, DELIVERABLE", p.calls.Load(), res.Confidence.Status)
	}
}

func TestProbeBudgetPerAccount(t *testing.T) {
	t.Parallel()
	p := &proberFunc{}
	b := &accountBudget{n: 3, used: map[string]int{}}
	v := probeValidator(t, p, b.allow)
	probed := map[string]int{}
	for _, acct := range []string{"acct-a", "acct-b"} {
		for i := range 10 {
			res, err := v.Validate(context.Background(), fmt.Sprintf("user%d@shop.io", i), emailcheck.WithAccount(acct))
			if err != nil {
				t.Fatal(err)
			}
			if res.SMTP.Checked {
				probed[acct]++
			} else if res.Confidence.Status != emailcheck.StatusLikely || res.SMTP.Detail != "not probed: the account's probe budget is spent" {
				t.Errorf("over budget: %s, %+v; want LIKELY, not probed", res.Confidence.Status, res.SMTP)
			}
		}
		// An address that would not be probed costs nothing.
		if _, err := v.Validate(context.Background(), "jane@nomail.shop", emailcheck.WithAccount(acct)); err != nil {
			t.Fatal(err)
		}
	}
	if probed["acct-a"] != 3 || probed["acct-b"] != 3 || p.calls.Load() != 6 {
		t.Fatalf("probed %v, %d calls; want 3 each, 6", probed, p.calls.Load())
	}
	if b.used[""] != 0 {
		t.Fatalf("%d probes counted against no account", b.used[""])
	}
}
