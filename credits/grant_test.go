package credits_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/store/memstore"
)

func TestGrantCredits(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := credits.New(memstore.New(), nil)
	for _, tc := range []struct {
		name string
		p    credits.GrantParams
		want error
	}{
		{"no account", credits.GrantParams{Credits: 5, Note: "x"}, credits.ErrInvalidAmount},
		{"zero", credits.GrantParams{AccountID: "a", Note: "x"}, credits.ErrInvalidAmount},
		{"negative", credits.GrantParams{AccountID: "a", Credits: -5, Note: "x"}, credits.ErrInvalidAmount},
		{"too many", credits.GrantParams{AccountID: "a", Credits: credits.MaxGrant + 1, Note: "x"}, credits.ErrInvalidAmount},
		{"no note", credits.GrantParams{AccountID: "a", Credits: 5}, credits.ErrInvalidNote},
		{"long note", credits.GrantParams{AccountID: "a", Credits: 5, Note: strings.Repeat("n", credits.MaxNoteBytes+1)}, credits.ErrInvalidNote},
		{"NUL in note", credits.GrantParams{AccountID: "a", Credits: 5, Note: "a\x00b"}, credits.ErrInvalidNote},
		{"newline in note", credits.GrantParams{AccountID: "a", Credits: 5, Note: "a\nb"}, credits.ErrInvalidNote},
		{"not UTF-8", credits.GrantParams{AccountID: "a", Credits: 5, Note: "a\xffb"}, credits.ErrInvalidNote},
		{"C1 in key", credits.GrantParams{AccountID: "a", Credits: 5, Note: "ok", IdempotencyKey: "k\u0085"}, credits.ErrInvalidNote},
		{"long key", credits.GrantParams{AccountID: "a", Credits: 5, Note: "ok", IdempotencyKey: strings.Repeat("k", credits.MaxIdempotencyKeyBytes+1)}, credits.ErrInvalidNote},
	} {
		if _, err := l.GrantCredits(ctx, tc.p); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", tc.name, err, tc.want)
		}
	}
	if b, _ := l.Balance(ctx, "a"); b != 0 {
		t.Fatalf("refused grants changed the balance to %d", b)
	}

	e, err := l.GrantCredits(ctx, credits.GrantParams{AccountID: "a", Credits: credits.MaxGrant, Note: "invoice 42 — über", IdempotencyKey: "evt_1"})
	if err != nil {
		t.Fatal(err)
	}
	if e.Reason != credits.ReasonGrant || e.Reference != "invoice 42 — über" || e.Delta != credits.MaxGrant || e.Replayed {
		t.Fatalf("entry = %+v", e)
	}
	again, err := l.GrantCredits(ctx, credits.GrantParams{AccountID: "a", Credits: credits.MaxGrant, Note: "the same event, delivered again", IdempotencyKey: "evt_1"})
	if err != nil || !again.Replayed || again.ID != e.ID {
		t.Fatalf("replay = %+v, %v", again, err)
	}
	if _, err := l.GrantCredits(ctx, credits.GrantParams{AccountID: "a", Credits: 7, Note: "x", IdempotencyKey: "evt_1"}); !errors.Is(err, credits.ErrIdempotencyConflict) {
		t.Fatalf("another amount under the key: %v", err)
	}
	if b, _ := l.Balance(ctx, "a"); b != credits.MaxGrant {
		t.Fatalf("balance = %d, want %d", b, credits.MaxGrant)
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	l := credits.New(memstore.New(), nil)
	must := func(_ credits.Entry, err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(l.Apply(ctx, credits.Change{AccountID: "a", Delta: 300, Reason: credits.ReasonSignup}))
	must(l.GrantCredits(ctx, credits.GrantParams{AccountID: "a", Credits: 1000, Note: "order 1"}))
	must(l.Grant(ctx, "a", 20, ""))
	must(l.Charge(ctx, "a", 50, ""))
	must(l.Refund(ctx, "a", 4, ""))
	must(l.GrantCredits(ctx, credits.GrantParams{AccountID: "b", Credits: 99, Note: "another account"}))

	now := time.Now()
	// A span of several Totals windows, ten years back.
	s, err := l.Summary(ctx, credits.SummaryParams{AccountID: "a", From: now.AddDate(-10, 0, 0), To: now.AddDate(0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	if want := (credits.Summary{Signup: 300, Granted: 1020, Charged: 50, Refunded: 4}); s != want {
		t.Fatalf("Summary = %+v, want %+v", s, want)
	}
	// A span ending today excludes today.
	if s, err := l.Summary(ctx, credits.SummaryParams{AccountID: "a", From: now.AddDate(-1, 0, 0), To: now}); err != nil || s != (credits.Summary{}) {
		t.Fatalf("span before today = %+v, %v", s, err)
	}
	if _, err := l.Summary(ctx, credits.SummaryParams{AccountID: "a", From: now, To: now.AddDate(0, 0, -2)}); !errors.Is(err, credits.ErrInvalidRange) {
		t.Fatalf("backwards span: %v", err)
	}
	if _, err := l.Summary(ctx, credits.SummaryParams{AccountID: "a", From: time.Time{}, To: now}); !errors.Is(err, credits.ErrInvalidRange) {
		t.Fatalf("a span from year 1: %v", err)
	}
}

// A host sells credits through a payment provider, which posts a signed
// event when a checkout completes. The handler checks the signature
// before reading the event, then grants the credits under the event's id,
// so that the provider's retries credit once.
func ExampleLedger_GrantCredits() {
	ledger := credits.New(memstore.New(), nil)
	secret := []byte("the provider's signing secret")

	paid := func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 64<<10))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		mac := hmac.New(sha256.New, secret)
		mac.Write(body)
		got, err := hex.DecodeString(strings.TrimPrefix(r.Header.Get("Signature"), "sha256="))
		if err != nil || !hmac.Equal(got, mac.Sum(nil)) {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		var ev struct {
			ID        string `json:"id"`
			AccountID string `json:"account_id"` // set by the host at checkout
			Credits   int64  `json:"credits"`
		}
		if err := json.Unmarshal(body, &ev); err != nil || ev.ID == "" {
			http.Error(w, "bad event", http.StatusBadRequest)
			return
		}
		_, err = ledger.GrantCredits(r.Context(), credits.GrantParams{
			AccountID:      ev.AccountID,
			Credits:        ev.Credits,
			Note:           "purchase " + ev.ID,
			IdempotencyKey: ev.ID,
		})
		if errors.Is(err, credits.ErrInvalidAmount) || errors.Is(err, credits.ErrInvalidNote) {
			http.Error(w, "bad event", http.StatusBadRequest)
			return
		}
		if err != nil {
			http.Error(w, "retry later", http.StatusServiceUnavailable)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	}

	deliver := func(body, key string) int {
		mac := hmac.New(sha256.New, []byte(key))
		mac.Write([]byte(body))
		r := httptest.NewRequest("POST", "/billing/webhook", strings.NewReader(body))
		r.Header.Set("Signature", "sha256="+hex.EncodeToString(mac.Sum(nil)))
		w := httptest.NewRecorder()
		paid(w, r)
		return w.Code
	}
	event := `{"id":"evt_123","account_id":"acct-1","credits":5000}`
	fmt.Println(deliver(event, "the provider's signing secret"))
	fmt.Println(deliver(event, "the provider's signing secret")) // a retry
	fmt.Println(deliver(event, "a forger's guess"))
	balance, _ := ledger.Balance(context.Background(), "acct-1")
	fmt.Println("balance:", balance)
	// Output:
	// 204
	// 204
	// 401
	// balance: 5000
}
