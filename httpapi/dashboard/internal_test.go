package dashboard

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/alexedwards/scs/v2"
	"golang.org/x/crypto/argon2"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
)

func TestPasswordHash(t *testing.T) {
	ctx := context.Background()
	h := newHasher(2)
	phc, err := h.hash(ctx, "correct horse battery staple")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(phc, "$argon2id$v=19$m=19456,t=2,p=1$") {
		t.Fatalf("hash %q", phc)
	}
	if again, _ := h.hash(ctx, "correct horse battery staple"); again == phc {
		t.Fatal("two hashes of one password are equal: the salt is not random")
	}
	for pw, want := range map[string]bool{"correct horse battery staple": true, "correct horse battery stapl": false, "": false} {
		ok, err := h.verify(ctx, pw, phc)
		if err != nil || ok != want {
			t.Errorf("verify(%q) = %v, %v; want %v", pw, ok, err, want)
		}
	}
	for _, bad := range []string{"", "$argon2i$v=19$m=19456,t=2,p=1$c2FsdA$aGFzaA", "$argon2id$v=18$m=1,t=1,p=1$c2FsdA$aGFzaA",
		"$argon2id$v=19$m=99999999,t=2,p=1$c2FsdA$aGFzaA", "$argon2id$v=19$m=19456,t=2,p=1$!!$aGFzaA", "plain"} {
		if _, err := h.verify(ctx, "x", bad); !errors.Is(err, errBadHash) {
			t.Errorf("verify against %q: %v, want errBadHash", bad, err)
		}
	}
	for pw, want := range map[string]error{"short": ErrPasswordLength, "Password123": ErrPasswordCommon, strings.Repeat("é", 128): nil,
		strings.Repeat("é", 129): ErrPasswordLength, "a long enough passphrase": nil} {
		if err := h.check(pw); !errors.Is(err, want) || (want == nil && err != nil) {
			t.Errorf("check(%.12q) = %v, want %v", pw, err, want)
		}
	}
}

// TestHashConcurrencyBounded: no more hashes run at once than the hasher
// allows, however many sign-ins arrive.
func TestHashConcurrencyBounded(t *testing.T) {
	h := newHasher(2)
	if err := h.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := h.acquire(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := h.hash(ctx, "a third one waits"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a third hash while two run: %v, want it to wait until its context ends", err)
	}
}

func TestSafeNext(t *testing.T) {
	for next, want := range map[string]string{
		"/dashboard/keys":            "/dashboard/keys",
		"/dashboard/":                "/dashboard/",
		"":                           "",
		"https://evil.example/":      "",
		"//evil.example/dashboard/":  "",
		"/dashboard/../admin":        "",
		"/other":                     "",
		"/dashboard/keys\r\nX: y":    "",
		"/dashboard\\..\\evil":       "",
		"/dashboard/batches/1?x=1#y": "/dashboard/batches/1?x=1#y",
	} {
		if got := safeNext("/dashboard", next); got != want {
			t.Errorf("safeNext(%q) = %q, want %q", next, got, want)
		}
	}
}

func FuzzVerify(f *testing.F) {
	h := newHasher(1)
	// A fixed salt, so that every fuzzing process has the same hash.
	salt := []byte("0123456789abcdef")
	key := argon2.IDKey([]byte("seed password"), salt, argonTime, argonMemory, argonThreads, argonKeyLen)
	enc := base64.RawStdEncoding
	phc := fmt.Sprintf("$argon2id$v=19$m=%d,t=%d,p=%d$%s$%s", argonMemory, argonTime, argonThreads, enc.EncodeToString(salt), enc.EncodeToString(key))
	if ok, err := h.verify(context.Background(), "seed password", phc); !ok || err != nil {
		f.Fatalf("the seed hash does not verify: %v", err)
	}
	f.Add(phc)
	f.Add("$argon2id$v=19$m=8,t=1,p=1$c2FsdA$aGFzaA")
	f.Add("$argon2id$v=19$m=,t=,p=$$")
	f.Fuzz(func(t *testing.T, s string) {
		ok, err := h.verify(context.Background(), "seed password", s)
		if err == nil && ok && s != phc {
			// Only the real hash may match; another encoding of it could,
			// but never a different key.
			if !strings.HasSuffix(s, phc[strings.LastIndex(phc, "$"):]) {
				t.Fatalf("%q matched", s)
			}
		}
	})
}

func TestUsageChart(t *testing.T) {
	now := time.Date(2026, 11, 24, 12, 0, 0, 0, time.UTC)
	hist := []credits.Entry{
		{Delta: 300, Reason: credits.ReasonSignup, Time: now.AddDate(0, 0, -40)},
		{Delta: -10, Reason: credits.ReasonCharge, Time: now.AddDate(0, 0, -3)},
		{Delta: 2, Reason: credits.ReasonRefund, Time: now.AddDate(0, 0, -3)},
		{Delta: -5, Reason: credits.ReasonCharge, Time: now},
		{Delta: -99, Reason: credits.ReasonCharge, Time: now.AddDate(0, 0, -31)}, // outside the window
	}
	totals := func(hist []credits.Entry) []credits.DayTotal {
		return credits.TotalsOf(hist, credits.TotalsParams{From: now.AddDate(0, 0, -60), To: now.AddDate(0, 0, 1)})
	}
	svg := string(usageChart(totals(hist), now, 30))
	for _, want := range []string{"13 credits used in the last 30 days", "<title>Nov 21: 8</title>", "<title>Nov 24: 5</title>", `role="img"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("chart lacks %q:\n%s", want, svg)
		}
	}
	if strings.Count(svg, "<rect") != 30 {
		t.Errorf("%d bars, want 30", strings.Count(svg, "<rect"))
	}
	one := string(usageChart(totals([]credits.Entry{{Delta: -1, Reason: credits.ReasonCharge, Time: now}}), now, 30))
	if !strings.Contains(one, "1 credit used in the last 30 days") {
		t.Errorf("one credit: %s", one)
	}
}

// TestSessionNotRevived: a request that loaded a session before the
// account's sessions ended cannot save it back at its end, while a new
// session (a new token) is saved.
func TestSessionNotRevived(t *testing.T) {
	ss := memstore.NewSessions()
	a := sessionStore{s: ss, codec: scs.GobCodec{}}
	data, err := scs.GobCodec{}.Encode(time.Now().Add(time.Hour), map[string]any{sessAccount: "acct-1"})
	if err != nil {
		t.Fatal(err)
	}
	exp := time.Now().Add(time.Hour)
	if err := a.Commit("old-token", data, exp); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := ss.FindSession(context.Background(), store.HashSecret("old-token")); !found {
		t.Fatal("the session was not saved under the hash of its token")
	}
	// A request loads the session; meanwhile the password changes.
	ctx := context.WithValue(context.Background(), sessionLoadKey{}, &sessionLoad{})
	if _, found, err := a.FindCtx(ctx, "old-token"); !found || err != nil {
		t.Fatalf("load: %v, %v", found, err)
	}
	if err := ss.DeleteAccountSessions(ctx, "acct-1", ""); err != nil {
		t.Fatal(err)
	}
	if err := a.CommitCtx(ctx, "old-token", data, exp); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := a.Find("old-token"); found {
		t.Fatal("the request's end brought an ended session back")
	}
	// The same request renewing its token saves the new session.
	if err := a.CommitCtx(ctx, "new-token", data, exp); err != nil {
		t.Fatal(err)
	}
	if _, found, _ := a.Find("new-token"); !found {
		t.Fatal("a new session was not saved")
	}
	if ss.Len() != 1 {
		t.Fatalf("%d sessions, want 1", ss.Len())
	}
}

// countingMailer counts the messages it is given.
type countingMailer struct {
	mu sync.Mutex
	to map[string]int
}

func (c *countingMailer) Send(_ context.Context, m mail.Message) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.to[m.To]++
	return nil
}

// TestMailPerAddressBounded: asking again and again from one network
// mails an address a few times only; other addresses, and the same
// address asked for from another network, are not held back by it; and
// every network together mails an address a bounded number of times.
func TestMailPerAddressBounded(t *testing.T) {
	b := memstore.NewBackend()
	ledger := credits.New(b.Credits, nil)
	q, err := jobs.NewQueue(b.Jobs, ledger, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &countingMailer{to: map[string]int{}}
	d, err := New(Storage{Accounts: b.Accounts, Passwords: b.Passwords, Sessions: b.Sessions, Tokens: b.Tokens}, ledger, q,
		&Config{Mailer: m, BaseURL: "https://console.example"})
	if err != nil {
		t.Fatal(err)
	}
	from := func(addr string) *http.Request {
		r := httptest.NewRequest("POST", "/dashboard/signup", nil)
		r.RemoteAddr = addr + ":4711"
		return r
	}
	ctx := context.Background()
	// Every slot taken back means every message is sent.
	settle := func() {
		for range cap(d.sending) {
			d.sending <- struct{}{}
		}
		for range cap(d.sending) {
			<-d.sending
		}
	}
	for i := range 20 {
		d.mailExisting(ctx, from(fmt.Sprintf("2001:db8:a::%x", i+1)), "Flood@example.com")
	}
	d.mailExisting(ctx, from("2001:db8:a::1"), "other@example.com")
	// A confirmation of the flooded address asked from the same network
	// is held back too; one asked from another network is not.
	a, err := b.Accounts.CreateAccount(ctx, store.CreateAccountParams{Email: "flood@EXAMPLE.com", Unconfirmed: true})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		if err := d.mailConfirmation(ctx, from("2001:db8:a::99"), a); err != nil {
			t.Fatal(err)
		}
	}
	settle()
	if m.to["Flood@example.com"] != netMail.Burst || m.to["other@example.com"] != 1 || m.to["flood@EXAMPLE.com"] != 0 {
		t.Fatalf("messages sent: %v, want %d to the flooded address and 1 to the other", m.to, netMail.Burst)
	}
	if err := d.mailConfirmation(ctx, from("198.51.100.7"), a); err != nil {
		t.Fatal(err)
	}
	settle()
	if m.to["flood@EXAMPLE.com"] != 1 {
		t.Fatalf("messages sent: %v, want the confirmation asked from another network", m.to)
	}
	// Many networks together reach the address's own cap.
	for i := range 3 * strangerMail.Burst {
		d.mailExisting(ctx, from(fmt.Sprintf("203.0.%d.1", i+1)), "FLOOD@example.com")
	}
	settle()
	total := m.to["Flood@example.com"] + m.to["flood@EXAMPLE.com"] + m.to["FLOOD@example.com"]
	if total != strangerMail.Burst {
		t.Fatalf("messages to the flooded address from many networks: %d (%v), want %d", total, m.to, strangerMail.Burst)
	}
}

// The line about slow domains shows only for the last few jobs of an
// active batch.
func TestSlowTail(t *testing.T) {
	for _, c := range []struct {
		total, completed int
		state            jobs.State
		want             int
	}{
		{4265, 4263, jobs.StateActive, 2},
		{4265, 4000, jobs.StateActive, 0},
		{100_000, 99_000, jobs.StateActive, 1000},
		{5, 0, jobs.StateActive, 0},
		{5, 4, jobs.StateActive, 1},
		{5, 5, jobs.StateCompleted, 0},
	} {
		if got := slowTail(jobs.Batch{Total: c.total, Completed: c.completed, State: c.state}); got != c.want {
			t.Errorf("%d of %d (%s): %d, want %d", c.completed, c.total, c.state, got, c.want)
		}
	}
}
