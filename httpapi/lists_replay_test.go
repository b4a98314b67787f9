package httpapi_test

import (
	"context"
	"testing"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
)

// A list's Idempotency-Key outliving its list (a retention shorter than
// the key's 24 h): a retry of the same upload is refused 422
// idempotency_key_reused, charges nothing and makes no batch, rather than
// taking the key for free and charging the list again.
func TestListReplayAfterListRemoved(t *testing.T) {
	t.Parallel()
	f := setup(t, nil)
	f.runPool(t)
	const list = "email\na@good.com\nb@good.com\n"
	upload := func() *response {
		return f.do(t, req{method: "POST", target: "/api/v1/lists", key: f.key, body: list,
			header: map[string]string{"Content-Type": "text/csv", "Idempotency-Key": "gone"}})
	}
	first := upload()
	if first.Code != 202 {
		t.Fatalf("first upload: %d %s", first.Code, first.Body)
	}
	id, _ := first.JSON(t)["batch_id"].(string)
	deadline := time.Now().Add(time.Minute)
	for {
		r := f.do(t, req{method: "GET", target: "/api/v1/batches/" + id, key: f.key})
		if r.Code == 200 && r.JSON(t)["state"] == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the list did not complete: %d %s", r.Code, r.Body)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := f.st.Backend().Jobs.Cleanup(context.Background(), jobsdriver.CleanupParams{CompletedBefore: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	wantProblem(t, f.do(t, req{method: "GET", target: "/api/v1/batches/" + id, key: f.key}), 404, "batch_not_found")
	before := f.balance(t, f.acct.ID)
	wantProblem(t, upload(), 422, "idempotency_key_reused")
	if after := f.balance(t, f.acct.ID); after != before {
		t.Errorf("balance %d after the replay, want %d", after, before)
	}
	if r := f.do(t, req{method: "GET", target: "/api/v1/batches", key: f.key}); r.Code != 200 || len(r.JSON(t)["batches"].([]any)) != 0 {
		t.Errorf("batches after the replay: %d %s, want none", r.Code, r.Body)
	}
}

// An upload refused for want of credits leaves its Idempotency-Key free:
// once the account is topped up, the same upload under the same key makes
// the list, charged once, and a repeat answers it.
func TestListKeyFreeAfterInsufficientCredits(t *testing.T) {
	t.Parallel()
	f := setup(t, &options{credits: 1})
	const list = "email\na@good.com\nb@good.com\n"
	upload := func() *response {
		return f.do(t, req{method: "POST", target: "/api/v1/lists", key: f.key, body: list,
			header: map[string]string{"Content-Type": "text/csv", "Idempotency-Key": "topup"}})
	}
	wantProblem(t, upload(), 402, "insufficient_credits")
	if _, err := f.ledger.Grant(context.Background(), f.acct.ID, 10, ""); err != nil {
		t.Fatal(err)
	}
	first := upload()
	if first.Code != 202 || first.JSON(t)["charged"] != float64(2) {
		t.Fatalf("after the top-up: %d %s, want the list charged 2", first.Code, first.Body)
	}
	if again := upload(); again.Code != 202 || again.JSON(t)["batch_id"] != first.JSON(t)["batch_id"] {
		t.Fatalf("repeat: %d %s", again.Code, again.Body)
	}
	if b := f.balance(t, f.acct.ID); b != 9 {
		t.Fatalf("balance %d, want 9", b)
	}
}
