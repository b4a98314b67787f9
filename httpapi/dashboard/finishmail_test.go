package dashboard_test

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi/dashboard"
	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/backend"
	"github.com/validmail/validmail/store/memstore"
	"github.com/validmail/validmail/store/storeurl"
)

// mailbox records the mail a Mailer was given; fail, while set, refuses
// it.
type mailbox struct {
	mu   sync.Mutex
	sent []mail.Message
	fail atomic.Bool
	// onSend, when set, runs as each mail is given to the relay.
	onSend func()
}

func (o *mailbox) Send(_ context.Context, m mail.Message) error {
	if o.onSend != nil {
		o.onSend()
	}
	if o.fail.Load() {
		return errors.New("the relay is down")
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	o.sent = append(o.sent, m)
	return nil
}

func (o *mailbox) messages() []mail.Message {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]mail.Message(nil), o.sent...)
}

// likely validates every address as LIKELY at once.
type likely struct{}

func (likely) Validate(_ context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	r := emailcheck.Result{Email: email, Validations: emailcheck.Validations{Syntax: true, DomainExists: true, MXRecords: true}}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	r.Reason = emailcheck.ReasonValid
	r.Confidence.EquivalentDomains = []string{}
	return r, nil
}

// instance is one process of a deployment: its backend (shared with the
// others through the store), queue and console, with its own mail and
// clock.
type instance struct {
	be     *backend.Backend
	queue  *jobs.Queue
	dash   *dashboard.Dashboard
	mail   *mailbox
	offset atomic.Int64 // added to the real clock, in nanoseconds
}

func newInstance(t *testing.T, be *backend.Backend) *instance {
	t.Helper()
	in := &instance{be: be, mail: &mailbox{}}
	ledger := credits.New(be.Credits, nil)
	q, err := jobs.NewQueue(be.Jobs, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	in.queue = q
	d, err := dashboard.New(dashboard.Storage{Accounts: be.Accounts, Passwords: be.Passwords, Sessions: be.Sessions, Tokens: be.Tokens}, ledger, q, &dashboard.Config{
		Mailer: in.mail, BaseURL: "https://validmail.example.com", Notices: be.Notices,
		Now: func() time.Time { return time.Now().Add(time.Duration(in.offset.Load())) },
	})
	if err != nil {
		t.Fatal(err)
	}
	in.dash = d
	return in
}

// twoInstances opens two instances over one fresh store of be.
func twoInstances(t *testing.T, be testBackend) (*instance, *instance) {
	t.Helper()
	if be.url == "" {
		b := memstore.NewBackend()
		return newInstance(t, b), newInstance(t, b)
	}
	var out [2]*instance
	for i := range out {
		b := be.open(t)
		if i == 1 {
			var err error
			if b, err = storeurl.Open(context.Background(), be.url, nil); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { b.Close() })
		}
		out[i] = newInstance(t, b)
	}
	return out[0], out[1]
}

// finish enqueues emails for account on a and works them with a pool
// whose completions both instances hear of, as each instance's workers
// do, until the batch is done; it returns the batch's id.
func finish(t *testing.T, a, b *instance, account string, emails ...string) string {
	t.Helper()
	ctx := context.Background()
	ids, err := a.queue.Enqueue(ctx, account, emails)
	if err != nil {
		t.Fatal(err)
	}
	pool, err := jobs.NewPool(a.queue, likely{}, &jobs.PoolConfig{Workers: 2, OnComplete: func(ctx context.Context, j jobs.Job) {
		a.dash.BatchProgress(ctx, j)
		b.dash.BatchProgress(ctx, j)
	}})
	if err != nil {
		t.Fatal(err)
	}
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- pool.Run(pctx) }()
	defer func() { stop(); <-done }()
	deadline := time.Now().Add(time.Minute)
	for {
		bt, err := a.queue.Batch(ctx, account, ids[0])
		if err == nil && bt.State == jobs.StateCompleted {
			return bt.ID
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %s not completed: %+v, %v", ids[0], bt, err)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func sendNotices(t *testing.T, in *instance) int {
	t.Helper()
	n, err := in.dash.SendNotices(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestFinishMailOnce finishes batches with two instances on one store, on
// every backend: an account that chose the mail gets one per batch, even
// when the instance that claimed it crashed before sending, or its relay
// refused it; an account that did not gets none.
func TestFinishMailOnce(t *testing.T) {
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, b := twoInstances(t, be)
			acct, err := a.be.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: "lists@example.org"})
			if err != nil {
				t.Fatal(err)
			}
			quiet, err := a.be.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: "quiet@example.org"})
			if err != nil {
				t.Fatal(err)
			}
			if err := b.be.Notices.SetFinishMail(ctx, acct.ID, true); err != nil {
				t.Fatal(err)
			}

			// The first instance claims the notice, then dies before
			// sending it: the other sends it once the claim's lease ends.
			batch := finish(t, a, b, acct.ID, "ann@example.org", "bob@example.org")
			finish(t, a, b, quiet.ID, "cid@example.org")
			claimed, err := a.be.Notices.ClaimNotices(ctx, time.Now(), dashboard.DefaultNoticeLease, 10)
			if err != nil || len(claimed) != 1 || claimed[0].BatchID != batch {
				t.Fatalf("the claim before the crash: %+v, %v", claimed, err)
			}
			if n := sendNotices(t, b); n != 0 {
				t.Fatalf("sent %d while the dead instance's lease holds", n)
			}
			b.offset.Store(int64(dashboard.DefaultNoticeLease + time.Second))
			if n := sendNotices(t, b); n != 1 {
				t.Fatalf("sent %d after the lease ended, want 1", n)
			}
			for range 2 {
				if n := sendNotices(t, a) + sendNotices(t, b); n != 0 {
					t.Fatalf("sent %d more", n)
				}
			}
			msgs := b.mail.messages()
			if len(msgs) != 1 || len(a.mail.messages()) != 0 {
				t.Fatalf("mail: %+v, %+v", msgs, a.mail.messages())
			}
			m := msgs[0]
			if m.To != acct.Email || !strings.Contains(m.Subject, "is validated") ||
				!strings.Contains(m.Body, "https://validmail.example.com/dashboard/batches/"+batch+"\n") ||
				!strings.Contains(m.Body, "Likely deliverable (LIKELY): 2") || m.Check() != nil {
				t.Errorf("the mail: %+v", m)
			}

			// A relay that refuses: the notice is retried, by the other
			// instance, and sent once.
			a.mail.fail.Store(true)
			b.offset.Store(0)
			batch2 := finish(t, a, b, acct.ID, "dee@example.org")
			if n, err := a.dash.SendNotices(ctx); n != 0 || err == nil {
				t.Fatalf("a refused mail: %d sent, %v", n, err)
			}
			var wg sync.WaitGroup
			for _, in := range []*instance{a, b, a, b} {
				wg.Go(func() {
					if _, err := in.dash.SendNotices(ctx); err != nil && !strings.Contains(err.Error(), "relay is down") {
						t.Error(err)
					}
				})
			}
			wg.Wait()
			if n := len(b.mail.messages()); n != 1 {
				t.Fatalf("%d mails before the retry is due", n)
			}
			b.offset.Store(int64(dashboard.DefaultNoticeLease + 3*time.Minute))
			if n := sendNotices(t, b) + sendNotices(t, b); n != 1 {
				t.Fatalf("the retry sent %d", n)
			}
			msgs = b.mail.messages()
			if len(msgs) != 2 || !strings.Contains(msgs[1].Body, "/batches/"+batch2+"\n") || len(a.mail.messages()) != 0 {
				t.Fatalf("mail after the retry: %+v", msgs)
			}
			for _, m := range msgs {
				if m.To == quiet.Email {
					t.Errorf("mail to an account that did not choose it: %+v", m)
				}
			}
		})
	}
}

// TestFinishMailChoice turns the mail on and off on the account page,
// without JavaScript: the form shows the choice, which the store keeps.
func TestFinishMailChoice(t *testing.T) {
	b := memstore.NewBackend()
	s := startSite(t, b)
	u := newUser(t, s.base)
	u.signup("choice@example.com")
	page := u.do("GET", "/dashboard/account", nil).body
	if !strings.Contains(page, `id="finish-mail"`) || strings.Contains(page, `value="on" checked`) {
		t.Fatalf("the account page's choice, off at first:\n%s", page)
	}
	a := u.do("POST", "/dashboard/account/notices", url.Values{"finish_mail": {"on"}})
	if a.code != 303 {
		t.Fatalf("turning it on: %d %s", a.code, a.body)
	}
	acct, err := b.Accounts.GetAccountByEmail(context.Background(), "choice@example.com")
	if err != nil {
		t.Fatal(err)
	}
	if on, err := b.Notices.FinishMail(context.Background(), acct.ID); !on || err != nil {
		t.Fatalf("stored: %v, %v", on, err)
	}
	page = u.do("GET", "/dashboard/account", nil).body
	if !strings.Contains(page, `value="on" checked`) || !strings.Contains(page, "when a batch or list finishes") {
		t.Fatalf("the account page after turning it on:\n%s", page)
	}
	if a := u.do("POST", "/dashboard/account/notices", url.Values{}); a.code != 303 {
		t.Fatalf("turning it off: %d", a.code)
	}
	if on, err := b.Notices.FinishMail(context.Background(), acct.ID); on || err != nil {
		t.Fatalf("stored after turning it off: %v, %v", on, err)
	}
	if a := u.do("POST", "/dashboard/account/notices", url.Values{"finish_mail": {"yes please"}}); a.code != 400 {
		t.Errorf("a bad value: %d", a.code)
	}
	if a := newUser(t, s.base).do("POST", "/dashboard/account/notices", url.Values{"finish_mail": {"on"}}); a.code != 401 {
		t.Errorf("signed out: %d", a.code)
	}
}

// TestFinishMailSlowRelay claims more notices than a slow relay can take
// within the claim's lease: the instance gives back the notices it has no
// time left to send, rather than sending them after another instance has
// claimed them again, so that each batch gets one mail.
func TestFinishMailSlowRelay(t *testing.T) {
	ctx := context.Background()
	a, b := twoInstances(t, testBackend{name: "memory"})
	acct, err := a.be.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: "slow@example.org"})
	if err != nil {
		t.Fatal(err)
	}
	if err := a.be.Notices.SetFinishMail(ctx, acct.ID, true); err != nil {
		t.Fatal(err)
	}
	const batches = 10
	for i := range batches {
		finish(t, a, b, acct.ID, fmt.Sprintf("user%d@example.org", i))
	}
	// Each mail takes the relay 25 seconds (within the send's timeout);
	// once the first instance's lease has run out, the other instance
	// looks for notices, as it does every few seconds.
	var nested atomic.Bool
	a.mail.onSend = func() {
		now := a.offset.Add(int64(25 * time.Second))
		b.offset.Store(now)
		if time.Duration(now) > dashboard.DefaultNoticeLease && !nested.Swap(true) {
			if _, err := b.dash.SendNotices(ctx); err != nil {
				t.Error(err)
			}
		}
	}
	if _, err := a.dash.SendNotices(ctx); err != nil {
		t.Fatal(err)
	}
	for range batches {
		if _, err := b.dash.SendNotices(ctx); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]int{}
	for _, m := range append(a.mail.messages(), b.mail.messages()...) {
		seen[m.Body]++
	}
	if len(seen) != batches {
		t.Errorf("%d batches mailed, want %d", len(seen), batches)
	}
	for body, n := range seen {
		if n != 1 {
			t.Errorf("%d mails of one batch:\n%s", n, body)
		}
	}
}
