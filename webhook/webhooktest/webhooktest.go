// Package webhooktest is the conformance suite for [webhook.Outbox] and
// [webhook.Endpoints] implementations, which [Run] takes as a [Backend].
// A deployment's backend runs it, with every other suite, through
// storetest.RunBackend; [Run] is the webhook part alone.
//
// A backend that keeps its data outside the process also runs [RunCrash]:
// a dispatcher process is killed while deliveries are pending, and a new one
// must deliver every event.
//
// newBackend is called once per subtest, possibly from parallel subtests,
// and must return an empty backend that no other call shares. The behaviour
// the suite checks is the contract; a behaviour it does not check is not
// promised.
package webhooktest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/validmail/validmail/webhook"
)

// base is the suite's clock origin. Times are whole milliseconds so that
// backends storing millisecond or microsecond precision compare equal.
var base = time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)

func at(d time.Duration) time.Time { return base.Add(d) }

// sameTime compares stored times to the millisecond.
func sameTime(a, b time.Time) bool {
	return a.Truncate(time.Millisecond).Equal(b.Truncate(time.Millisecond))
}

// Backend is what the suite checks: a webhook outbox and the endpoints it
// delivers to, over one store.
type Backend struct {
	// Outbox holds the events to deliver.
	Outbox webhook.Outbox
	// Endpoints holds each account's endpoint.
	Endpoints webhook.Endpoints
}

// Run runs every conformance test against the Outbox and Endpoints of
// backends from newBackend.
func Run(t *testing.T, newBackend func(tb testing.TB) Backend) {
	t.Helper()
	tests := []struct {
		name string
		f    func(t *testing.T, ob webhook.Outbox, eps webhook.Endpoints)
	}{
		{"EnqueueAndLease", testEnqueueAndLease},
		{"EnqueueDuplicate", testEnqueueDuplicate},
		{"LeaseOrderAndLimit", testLeaseOrderAndLimit},
		{"LeaseExclusive", testLeaseExclusive},
		{"LeaseExpiry", testLeaseExpiry},
		{"LeaseConcurrent", testLeaseConcurrent},
		{"RecordAttempt", testRecordAttempt},
		{"Reschedule", testReschedule},
		{"StoredBatchData", testStoredBatchData},
		{"MarkDelivered", testMarkDelivered},
		{"MarkDead", testMarkDead},
		{"UnknownEvent", testUnknownEvent},
		{"Deliveries", testDeliveries},
		{"DeliveriesPaging", testDeliveriesPaging},
		{"PendingAndPrune", testPendingAndPrune},
		{"OldestPending", testOldestPending},
		{"CanceledContext", testCanceledContext},
		{"EndpointLifecycle", testEndpointLifecycle},
		{"EndpointRotation", testEndpointRotation},
		{"EndpointDisable", testEndpointDisable},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := newBackend(t)
			if b.Outbox == nil || b.Endpoints == nil {
				t.Fatal("webhooktest: the Backend needs Outbox and Endpoints")
			}
			tc.f(t, b.Outbox, b.Endpoints)
		})
	}
}

func event(account string, n int, created time.Time) webhook.Event {
	return webhook.Event{
		ID:        fmt.Sprintf("msg_suite_%s_%04d", account, n),
		AccountID: account,
		Type:      webhook.TypeValidationCompleted,
		JobID:     fmt.Sprint(n),
		CreatedAt: created,
		Payload:   fmt.Appendf(nil, `{"type":"validation.completed","data":{"job_id":"%d","result":{"x":"é\u2028"}}}`, n),
	}
}

func enqueue(t *testing.T, ob webhook.Outbox, evs ...webhook.Event) {
	t.Helper()
	for _, ev := range evs {
		if err := ob.Enqueue(t.Context(), ev); err != nil {
			t.Fatalf("Enqueue(%s): %v", ev.ID, err)
		}
	}
}

func lease(t *testing.T, ob webhook.Outbox, now time.Time, limit int) []webhook.Delivery {
	t.Helper()
	ds, err := ob.Lease(t.Context(), webhook.LeaseParams{Now: now, Limit: limit, Duration: time.Minute})
	if err != nil {
		t.Fatalf("Lease: %v", err)
	}
	return ds
}

func ids(ds []webhook.Delivery) []string {
	out := make([]string, len(ds))
	for i, d := range ds {
		out[i] = d.ID
	}
	return out
}

func find(t *testing.T, ob webhook.Outbox, account, id string) webhook.Delivery {
	t.Helper()
	ds, err := ob.Deliveries(t.Context(), webhook.ListParams{AccountID: account, Limit: 1000})
	if err != nil {
		t.Fatalf("Deliveries: %v", err)
	}
	for _, d := range ds {
		if d.ID == id {
			return d
		}
	}
	t.Fatalf("delivery %s not listed for %s", id, account)
	return webhook.Delivery{}
}

func testEnqueueAndLease(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	ev := event("acct1", 1, at(0))
	enqueue(t, ob, ev)

	if got := lease(t, ob, at(-time.Second), 10); len(got) != 0 {
		t.Fatalf("Lease before the event is due returned %v", ids(got))
	}
	got := lease(t, ob, at(time.Second), 10)
	if len(got) != 1 {
		t.Fatalf("Lease returned %d deliveries, want 1", len(got))
	}
	d := got[0]
	if d.ID != ev.ID || d.AccountID != ev.AccountID || d.Type != ev.Type || d.JobID != ev.JobID {
		t.Errorf("leased event = %+v, want %+v", d.Event, ev)
	}
	if string(d.Payload) != string(ev.Payload) {
		t.Errorf("payload = %q, want it byte for byte: %q", d.Payload, ev.Payload)
	}
	if !sameTime(d.CreatedAt, ev.CreatedAt) {
		t.Errorf("CreatedAt = %v, want %v", d.CreatedAt, ev.CreatedAt)
	}
	if d.State != webhook.StatePending || len(d.Attempts) != 0 {
		t.Errorf("state %q with %d attempts, want pending with none", d.State, len(d.Attempts))
	}
	if d.Lease.EventID != ev.ID || d.Lease.Token == "" {
		t.Errorf("lease = %+v, want a token for %s", d.Lease, ev.ID)
	}
	if !sameTime(d.Lease.Expires, at(time.Second+time.Minute)) {
		t.Errorf("lease expires %v, want Now+Duration %v", d.Lease.Expires, at(time.Second+time.Minute))
	}
}

func testEnqueueDuplicate(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	ev := event("acct1", 1, at(0))
	enqueue(t, ob, ev)
	dup := ev
	dup.Payload = []byte(`{"other":true}`)
	if err := ob.Enqueue(t.Context(), dup); !errors.Is(err, webhook.ErrDuplicate) {
		t.Fatalf("second Enqueue of %s = %v, want ErrDuplicate", ev.ID, err)
	}
	if d := find(t, ob, "acct1", ev.ID); string(d.Payload) != string(ev.Payload) {
		t.Errorf("duplicate replaced the payload: %q", d.Payload)
	}
}

func testLeaseOrderAndLimit(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	// Enqueued out of order; leased earliest due first.
	enqueue(t, ob, event("a", 3, at(3*time.Second)), event("a", 1, at(time.Second)),
		event("b", 2, at(2*time.Second)), event("a", 9, at(time.Hour)))
	got := lease(t, ob, at(time.Minute), 2)
	if want := []string{"msg_suite_a_0001", "msg_suite_b_0002"}; !slices.Equal(ids(got), want) {
		t.Fatalf("Lease(limit 2) = %v, want %v", ids(got), want)
	}
	got = lease(t, ob, at(time.Minute), 10)
	if want := []string{"msg_suite_a_0003"}; !slices.Equal(ids(got), want) {
		t.Fatalf("second Lease = %v, want %v (the rest is not due)", ids(got), want)
	}
}

func testLeaseExclusive(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	enqueue(t, ob, event("a", 1, at(0)))
	first := lease(t, ob, at(0), 10)
	if len(first) != 1 {
		t.Fatalf("first Lease returned %d", len(first))
	}
	if again := lease(t, ob, at(59*time.Second), 10); len(again) != 0 {
		t.Fatalf("Lease within the lease returned %v", ids(again))
	}
}

func testLeaseExpiry(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	// At least once: a dispatcher that leases and vanishes loses nothing.
	ev := event("a", 1, at(0))
	enqueue(t, ob, ev)
	first := lease(t, ob, at(0), 10)
	if len(first) != 1 {
		t.Fatalf("first Lease returned %d", len(first))
	}
	if err := ob.RecordAttempt(t.Context(), first[0].Lease, webhook.Attempt{At: at(0), StatusCode: 500, Error: "HTTP 500"}); err != nil {
		t.Fatalf("RecordAttempt: %v", err)
	}
	second := lease(t, ob, at(time.Minute+time.Second), 10)
	if len(second) != 1 || second[0].ID != ev.ID {
		t.Fatalf("Lease after expiry = %v, want [%s]", ids(second), ev.ID)
	}
	if second[0].Lease.Token == first[0].Lease.Token {
		t.Fatal("a new lease reused the old token")
	}
	if string(second[0].Payload) != string(ev.Payload) || len(second[0].Attempts) != 1 {
		t.Errorf("re-leased delivery lost data: payload %q, %d attempts", second[0].Payload, len(second[0].Attempts))
	}
	old := first[0].Lease
	for name, f := range map[string]func() error{
		"RecordAttempt": func() error { return ob.RecordAttempt(t.Context(), old, webhook.Attempt{At: at(0)}) },
		"Reschedule":    func() error { return ob.Reschedule(t.Context(), old, at(time.Hour)) },
		"MarkDelivered": func() error { return ob.MarkDelivered(t.Context(), old, at(time.Hour)) },
		"MarkDead":      func() error { return ob.MarkDead(t.Context(), old, at(time.Hour), "x") },
	} {
		if err := f(); !errors.Is(err, webhook.ErrLeaseLost) {
			t.Errorf("%s with the expired lease = %v, want ErrLeaseLost", name, err)
		}
	}
	if err := ob.MarkDelivered(t.Context(), second[0].Lease, at(2*time.Minute)); err != nil {
		t.Fatalf("MarkDelivered with the current lease: %v", err)
	}
}

func testLeaseConcurrent(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	const events, workers = 200, 8
	evs := make([]webhook.Event, events)
	for i := range evs {
		evs[i] = event("a", i, at(time.Duration(i)*time.Millisecond))
	}
	enqueue(t, ob, evs...)

	var mu sync.Mutex
	seen := map[string]int{}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for range workers {
		wg.Go(func() {
			for range events { // bounded, should leasing never run dry
				ds, err := ob.Lease(t.Context(), webhook.LeaseParams{Now: at(time.Second), Limit: 7, Duration: time.Hour})
				if err != nil {
					errs <- err
					return
				}
				if len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					seen[d.ID]++
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatalf("concurrent Lease: %v", err)
	}
	if len(seen) != events {
		t.Errorf("%d distinct events leased, want %d", len(seen), events)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("%s leased %d times under unexpired leases", id, n)
		}
	}
}

func testRecordAttempt(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	ev := event("a", 1, at(0))
	enqueue(t, ob, ev)
	d := lease(t, ob, at(0), 1)[0]
	a1 := webhook.Attempt{At: at(time.Second), Duration: 1500 * time.Millisecond, StatusCode: 503, Error: "HTTP 503", URL: "https://example.net/hook"}
	a2 := webhook.Attempt{At: at(2 * time.Second), Duration: 15 * time.Second, Error: "timed out after 15s", URL: "https://example.net/hook"}
	for _, a := range []webhook.Attempt{a1, a2} {
		if err := ob.RecordAttempt(t.Context(), d.Lease, a); err != nil {
			t.Fatalf("RecordAttempt: %v", err)
		}
	}
	got := find(t, ob, "a", ev.ID)
	if len(got.Attempts) != 2 {
		t.Fatalf("%d attempts listed, want 2", len(got.Attempts))
	}
	for i, want := range []webhook.Attempt{a1, a2} {
		g := got.Attempts[i]
		if !sameTime(g.At, want.At) || g.Duration.Truncate(time.Millisecond) != want.Duration ||
			g.StatusCode != want.StatusCode || g.Error != want.Error || g.URL != want.URL {
			t.Errorf("attempt %d = %+v, want %+v", i, g, want)
		}
	}
	if got.State != webhook.StatePending {
		t.Errorf("state after attempts = %q, want pending", got.State)
	}
	if again := lease(t, ob, at(10*time.Second), 1); len(again) != 0 {
		t.Errorf("recording an attempt released the lease")
	}
}

func testReschedule(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	ev := event("a", 1, at(0))
	enqueue(t, ob, ev)
	d := lease(t, ob, at(0), 1)[0]
	if err := ob.RecordAttempt(t.Context(), d.Lease, webhook.Attempt{At: at(0), StatusCode: 500}); err != nil {
		t.Fatal(err)
	}
	next := at(5 * time.Minute)
	if err := ob.Reschedule(t.Context(), d.Lease, next); err != nil {
		t.Fatalf("Reschedule: %v", err)
	}
	if err := ob.Reschedule(t.Context(), d.Lease, next); !errors.Is(err, webhook.ErrLeaseLost) {
		t.Errorf("Reschedule with a released lease = %v, want ErrLeaseLost", err)
	}
	if l := find(t, ob, "a", ev.ID); !sameTime(l.NextAttempt, next) || l.State != webhook.StatePending {
		t.Errorf("listed next attempt %v state %q, want %v pending", l.NextAttempt, l.State, next)
	}
	if got := lease(t, ob, next.Add(-time.Millisecond), 1); len(got) != 0 {
		t.Fatalf("leased before the new due time")
	}
	got := lease(t, ob, next, 1)
	if len(got) != 1 || len(got[0].Attempts) != 1 || got[0].Attempts[0].StatusCode != 500 {
		t.Fatalf("after Reschedule got %+v, want the event with its one attempt", got)
	}
	// Putting back without an attempt (an endpoint busy) is also a Reschedule.
	if err := ob.Reschedule(t.Context(), got[0].Lease, next); err != nil {
		t.Fatalf("Reschedule to now: %v", err)
	}
	if again := lease(t, ob, next, 1); len(again) != 1 || len(again[0].Attempts) != 1 {
		t.Fatalf("put-back delivery not leasable at once, or attempts changed: %+v", again)
	}
}

// testStoredBatchData: a batch.completed event stored as its batch's
// counts, in [webhook.Event.Batch] or in the payload form earlier
// releases wrote ([webhook.StoreBatchCompleted]), is leased and listed
// with its Batch and as the bytes webhook.BatchCompletedPayload gives,
// with the same id and the same bytes on every attempt. Other events
// come back without a Batch.
func testStoredBatchData(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	created := at(0).Add(123456789 * time.Nanosecond)
	data := webhook.BatchCompleted{BatchID: "77", Total: 3, Counts: map[string]int{"LIKELY": 2, "DISPOSABLE": 1}}
	want := `{"type":"batch.completed","timestamp":"2030-01-02T03:04:05.123Z","data":{"batch_id":"77","total":3,"counts":{"DISPOSABLE":1,"LIKELY":2}}}`
	if got := string(webhook.BatchCompletedPayload(created, data)); got != want {
		t.Fatalf("BatchCompletedPayload = %s, want %s", got, want)
	}
	for _, tc := range []struct {
		name string
		ev   webhook.Event
	}{
		{"typed", webhook.Event{ID: "msg_suite_batch", AccountID: "a", Type: webhook.TypeBatchCompleted, JobID: "79",
			CreatedAt: created, Batch: &data}},
		{"earlier form", webhook.Event{ID: "msg_suite_batch_old", AccountID: "b", Type: webhook.TypeBatchCompleted, JobID: "79",
			CreatedAt: created, Payload: webhook.StoreBatchCompleted(data)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			checkStoredBatch(t, ob, tc.ev, data, want)
		})
	}
	plain := event("c", 1, at(0))
	enqueue(t, ob, plain)
	if l := find(t, ob, "c", plain.ID); l.Batch != nil || string(l.Payload) != string(plain.Payload) {
		t.Fatalf("an event without batch data listed as %s with %+v", l.Payload, l.Batch)
	}
}

// checkStoredBatch enqueues ev, then leases, fails and lists it three
// times, each time expecting data as its Batch and want as its bytes.
func checkStoredBatch(t *testing.T, ob webhook.Outbox, ev webhook.Event, data webhook.BatchCompleted, want string) {
	t.Helper()
	enqueue(t, ob, ev)
	sameBatch := func(b *webhook.BatchCompleted) bool {
		return b != nil && b.BatchID == data.BatchID && b.Total == data.Total && maps.Equal(b.Counts, data.Counts)
	}
	next := at(time.Minute)
	for attempt := range 3 {
		var ds []webhook.Delivery
		for _, d := range lease(t, ob, next, 10) {
			if d.AccountID == ev.AccountID {
				ds = append(ds, d)
			} else if err := ob.Reschedule(t.Context(), d.Lease, next); err != nil {
				t.Fatal(err)
			}
		}
		if len(ds) != 1 || ds[0].ID != ev.ID || ds[0].Type != webhook.TypeBatchCompleted || string(ds[0].Payload) != want {
			t.Fatalf("attempt %d leased %+v, want %s with %s", attempt+1, ds, ev.ID, want)
		}
		if !sameBatch(ds[0].Batch) {
			t.Fatalf("attempt %d leased with batch %+v, want %+v", attempt+1, ds[0].Batch, data)
		}
		if err := ob.RecordAttempt(t.Context(), ds[0].Lease, webhook.Attempt{At: next, StatusCode: 500}); err != nil {
			t.Fatal(err)
		}
		next = next.Add(time.Minute)
		if err := ob.Reschedule(t.Context(), ds[0].Lease, next); err != nil {
			t.Fatal(err)
		}
		l := find(t, ob, ev.AccountID, ev.ID)
		if string(l.Payload) != want || !sameBatch(l.Batch) {
			t.Fatalf("listed payload %s with batch %+v, want %s with %+v", l.Payload, l.Batch, want, data)
		}
	}
}

func testMarkDelivered(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	ev := event("a", 1, at(0))
	enqueue(t, ob, ev)
	d := lease(t, ob, at(0), 1)[0]
	if err := ob.RecordAttempt(t.Context(), d.Lease, webhook.Attempt{At: at(0), StatusCode: 204}); err != nil {
		t.Fatal(err)
	}
	if err := ob.MarkDelivered(t.Context(), d.Lease, at(time.Second)); err != nil {
		t.Fatalf("MarkDelivered: %v", err)
	}
	if got := lease(t, ob, at(100*24*time.Hour), 10); len(got) != 0 {
		t.Fatalf("delivered event leased again: %v", ids(got))
	}
	if err := ob.MarkDead(t.Context(), d.Lease, at(time.Second), "x"); !errors.Is(err, webhook.ErrLeaseLost) {
		t.Errorf("MarkDead after MarkDelivered = %v, want ErrLeaseLost", err)
	}
	l := find(t, ob, "a", ev.ID)
	if l.State != webhook.StateDelivered || !sameTime(l.FinishedAt, at(time.Second)) || !l.NextAttempt.IsZero() {
		t.Errorf("listed %q finished %v next %v, want delivered at %v with no next attempt", l.State, l.FinishedAt, l.NextAttempt, at(time.Second))
	}
	if l.Lease != (webhook.Lease{}) {
		t.Errorf("Deliveries returned a lease: %+v", l.Lease)
	}
}

func testMarkDead(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	ev := event("a", 1, at(0))
	enqueue(t, ob, ev)
	d := lease(t, ob, at(0), 1)[0]
	if err := ob.RecordAttempt(t.Context(), d.Lease, webhook.Attempt{At: at(0), StatusCode: 500}); err != nil {
		t.Fatal(err)
	}
	if err := ob.MarkDead(t.Context(), d.Lease, at(time.Hour), "no success after 7 attempts"); err != nil {
		t.Fatalf("MarkDead: %v", err)
	}
	if got := lease(t, ob, at(100*24*time.Hour), 10); len(got) != 0 {
		t.Fatalf("dead event leased again: %v", ids(got))
	}
	l := find(t, ob, "a", ev.ID)
	if l.State != webhook.StateDead || l.Reason != "no success after 7 attempts" || !sameTime(l.FinishedAt, at(time.Hour)) || len(l.Attempts) != 1 {
		t.Errorf("listed %+v, want dead with its reason, time and attempt", l)
	}
}

func testUnknownEvent(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	l := webhook.Lease{EventID: "msg_missing", Token: "t", Expires: at(time.Hour)}
	for name, f := range map[string]func() error{
		"RecordAttempt": func() error { return ob.RecordAttempt(t.Context(), l, webhook.Attempt{At: at(0)}) },
		"Reschedule":    func() error { return ob.Reschedule(t.Context(), l, at(0)) },
		"MarkDelivered": func() error { return ob.MarkDelivered(t.Context(), l, at(0)) },
		"MarkDead":      func() error { return ob.MarkDead(t.Context(), l, at(0), "x") },
	} {
		if err := f(); !errors.Is(err, webhook.ErrNotFound) {
			t.Errorf("%s of an unknown event = %v, want ErrNotFound", name, err)
		}
	}
	// A known event with a token that never held it.
	enqueue(t, ob, event("a", 1, at(0)))
	lease(t, ob, at(0), 1)
	bad := webhook.Lease{EventID: "msg_suite_a_0001", Token: "forged", Expires: at(time.Hour)}
	if err := ob.MarkDelivered(t.Context(), bad, at(0)); !errors.Is(err, webhook.ErrLeaseLost) {
		t.Errorf("MarkDelivered with a forged token = %v, want ErrLeaseLost", err)
	}
}

func testDeliveries(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	for i := range 5 {
		enqueue(t, ob, event("a", i, at(time.Duration(i)*time.Second)))
	}
	enqueue(t, ob, event("b", 9, at(time.Hour)))
	got, err := ob.Deliveries(t.Context(), webhook.ListParams{AccountID: "a", Limit: 3})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"msg_suite_a_0004", "msg_suite_a_0003", "msg_suite_a_0002"}; !slices.Equal(ids(got), want) {
		t.Errorf("Deliveries(a, 3) = %v, want newest first %v", ids(got), want)
	}
	all, err := ob.Deliveries(t.Context(), webhook.ListParams{AccountID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if len(all) != 5 {
		t.Errorf("Deliveries(a, default limit) returned %d, want 5", len(all))
	}
	for _, d := range all {
		if d.AccountID != "a" {
			t.Errorf("account a's list holds %s of %s", d.ID, d.AccountID)
		}
		if d.State != webhook.StatePending || !sameTime(d.NextAttempt, d.CreatedAt) {
			t.Errorf("new delivery %s: state %q next %v, want pending due at creation", d.ID, d.State, d.NextAttempt)
		}
	}
	none, err := ob.Deliveries(t.Context(), webhook.ListParams{AccountID: "nobody"})
	if err != nil || len(none) != 0 {
		t.Errorf("Deliveries(nobody) = %v, %v; want none and no error", ids(none), err)
	}
}

// testDeliveriesPaging pages an account's log by position: every delivery
// once, newest first, also when many share a creation time and new ones
// arrive between pages.
func testDeliveriesPaging(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	for i := range 25 {
		// Five creation times, five deliveries each.
		enqueue(t, ob, event("a", i, at(time.Duration(i/5)*time.Second)))
	}
	var got []string
	var before *webhook.Position
	for page := 0; ; page++ {
		ds, err := ob.Deliveries(t.Context(), webhook.ListParams{AccountID: "a", Limit: 7, Before: before})
		if err != nil {
			t.Fatal(err)
		}
		if page == 1 {
			// A newer delivery arriving meanwhile does not disturb the
			// pages of older ones.
			enqueue(t, ob, event("a", 99, at(time.Hour)))
		}
		if len(ds) == 0 {
			break
		}
		got = append(got, ids(ds)...)
		pos := ds[len(ds)-1].Position()
		before = &pos
		if page > 10 {
			t.Fatal("paging does not end")
		}
	}
	if len(got) != 25 {
		t.Fatalf("paged %d deliveries, want 25: %v", len(got), got)
	}
	want := make([]string, 0, 25)
	for i := 24; i >= 0; i-- {
		want = append(want, fmt.Sprintf("msg_suite_a_%04d", i))
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged order %v, want newest first %v", got, want)
	}
}

func testPendingAndPrune(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	for i := range 4 {
		enqueue(t, ob, event("a", i, at(0)))
	}
	pending := func() int {
		t.Helper()
		n, err := ob.Pending(t.Context())
		if err != nil {
			t.Fatalf("Pending: %v", err)
		}
		return n
	}
	if n := pending(); n != 4 {
		t.Fatalf("Pending = %d, want 4", n)
	}
	ds := lease(t, ob, at(0), 3) // events 0, 1, 2
	if n := pending(); n != 4 {
		t.Errorf("Pending with leases = %d, want 4 (leased ones are pending)", n)
	}
	if err := ob.MarkDelivered(t.Context(), ds[0].Lease, at(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := ob.MarkDead(t.Context(), ds[1].Lease, at(3*time.Hour), "x"); err != nil {
		t.Fatal(err)
	}
	if n := pending(); n != 2 {
		t.Errorf("Pending = %d, want 2", n)
	}
	n, err := ob.Prune(t.Context(), at(2*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("Prune(before 2h) = %d, %v; want 1 (the delivered one)", n, err)
	}
	n, err = ob.Prune(t.Context(), at(100*time.Hour))
	if err != nil || n != 1 {
		t.Fatalf("Prune(before 100h) = %d, %v; want 1 (the dead one, pending kept)", n, err)
	}
	got, err := ob.Deliveries(t.Context(), webhook.ListParams{AccountID: "a"})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"msg_suite_a_0002", "msg_suite_a_0003"}; !slices.Equal(slices.Sorted(slices.Values(ids(got))), want) {
		t.Errorf("after Prune listed %v, want %v", ids(got), want)
	}
}

func testCanceledContext(t *testing.T, ob webhook.Outbox, eps webhook.Endpoints) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if err := ob.Enqueue(ctx, event("a", 1, at(0))); err == nil {
		t.Error("Enqueue with a canceled context succeeded")
	}
	if _, err := ob.Lease(ctx, webhook.LeaseParams{Now: at(0), Limit: 1, Duration: time.Minute}); err == nil {
		t.Error("Lease with a canceled context succeeded")
	}
	if _, err := eps.GetEndpoint(ctx, "a"); err == nil || errors.Is(err, webhook.ErrNotFound) {
		t.Errorf("GetEndpoint with a canceled context = %v, want a context error", err)
	}
}

func testEndpointLifecycle(t *testing.T, _ webhook.Outbox, eps webhook.Endpoints) {
	ctx := t.Context()
	if _, err := eps.GetEndpoint(ctx, "a"); !errors.Is(err, webhook.ErrNotFound) {
		t.Fatalf("GetEndpoint before any Put = %v, want ErrNotFound", err)
	}
	if err := eps.DeleteEndpoint(ctx, "a"); !errors.Is(err, webhook.ErrNotFound) {
		t.Errorf("DeleteEndpoint before any Put = %v, want ErrNotFound", err)
	}
	if _, _, err := eps.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: "a", URL: "https://a.example/hook", Enabled: true, Now: at(0)}); !errors.Is(err, webhook.ErrInvalidSecret) {
		t.Errorf("creating without a secret = %v, want ErrInvalidSecret", err)
	}
	secret := webhook.NewSecret()
	e, created, err := eps.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: "a", URL: "https://a.example/hook", Enabled: true, Secret: secret, Now: at(0)})
	if err != nil || !created {
		t.Fatalf("PutEndpoint (create) = %v, created %v", err, created)
	}
	if e.AccountID != "a" || e.URL != "https://a.example/hook" || !e.Enabled || e.Secret != secret || len(e.PreviousSecrets) != 0 {
		t.Errorf("created endpoint = %+v", e)
	}
	e, created, err = eps.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: "a", URL: "https://a.example/v2", Enabled: false, Secret: webhook.NewSecret(), Now: at(time.Hour)})
	if err != nil || created {
		t.Fatalf("PutEndpoint (update) = %v, created %v", err, created)
	}
	got, err := eps.GetEndpoint(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if got.URL != "https://a.example/v2" || got.Enabled || got.Secret != secret {
		t.Errorf("after update = %+v, want new URL, disabled, the original secret kept", got)
	}
	if !sameTime(got.CreatedAt, at(0)) || !sameTime(got.UpdatedAt, at(time.Hour)) {
		t.Errorf("created %v updated %v, want %v and %v", got.CreatedAt, got.UpdatedAt, at(0), at(time.Hour))
	}
	if e.URL != got.URL {
		t.Errorf("PutEndpoint returned %+v, GetEndpoint %+v", e, got)
	}
	if len(got.Events) != 0 || !got.Wants(webhook.TypeValidationCompleted) || !got.Wants(webhook.TypeBatchCompleted) {
		t.Errorf("events %v, want none listed (all)", got.Events)
	}
	// The event types an endpoint receives: kept, and reset to all.
	only := []string{webhook.TypeBatchCompleted}
	if e, _, err = eps.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: "a", URL: "https://a.example/v2", Events: only, Now: at(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got, err = eps.GetEndpoint(ctx, "a"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Events, only) || !slices.Equal(e.Events, only) || got.Wants(webhook.TypeValidationCompleted) || !got.Wants(webhook.TypeTest) {
		t.Errorf("events %v (returned %v), want %v", got.Events, e.Events, only)
	}
	if _, _, err = eps.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: "a", URL: "https://a.example/v2", Now: at(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	if got, err = eps.GetEndpoint(ctx, "a"); err != nil || len(got.Events) != 0 {
		t.Errorf("events after a put without them: %v, %v; want all", got.Events, err)
	}
	if _, err := eps.GetEndpoint(ctx, "b"); !errors.Is(err, webhook.ErrNotFound) {
		t.Errorf("another account's endpoint = %v, want ErrNotFound", err)
	}
	if err := eps.DeleteEndpoint(ctx, "a"); err != nil {
		t.Fatalf("DeleteEndpoint: %v", err)
	}
	if _, err := eps.GetEndpoint(ctx, "a"); !errors.Is(err, webhook.ErrNotFound) {
		t.Errorf("GetEndpoint after delete = %v, want ErrNotFound", err)
	}
}

func testEndpointRotation(t *testing.T, _ webhook.Outbox, eps webhook.Endpoints) {
	ctx := t.Context()
	if _, err := eps.RotateSecret(ctx, webhook.RotateSecretParams{AccountID: "a", Secret: webhook.NewSecret(), Now: at(0), PreviousExpiresAt: at(24 * time.Hour)}); !errors.Is(err, webhook.ErrNotFound) {
		t.Errorf("RotateSecret without an endpoint = %v, want ErrNotFound", err)
	}
	s1, s2, s3 := webhook.NewSecret(), webhook.NewSecret(), webhook.NewSecret()
	if _, _, err := eps.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: "a", URL: "https://a.example/hook", Enabled: true, Secret: s1, Now: at(0)}); err != nil {
		t.Fatal(err)
	}
	if _, err := eps.RotateSecret(ctx, webhook.RotateSecretParams{AccountID: "a", Secret: "not base64!", Now: at(0), PreviousExpiresAt: at(time.Hour)}); !errors.Is(err, webhook.ErrInvalidSecret) {
		t.Errorf("RotateSecret to an invalid secret = %v, want ErrInvalidSecret", err)
	}
	e, err := eps.RotateSecret(ctx, webhook.RotateSecretParams{AccountID: "a", Secret: s2, Now: at(time.Hour), PreviousExpiresAt: at(time.Hour + webhook.RotationGrace)})
	if err != nil {
		t.Fatalf("RotateSecret: %v", err)
	}
	if e.Secret != s2 || len(e.PreviousSecrets) != 1 || e.PreviousSecrets[0].Secret != s1 ||
		!sameTime(e.PreviousSecrets[0].ExpiresAt, at(time.Hour+webhook.RotationGrace)) {
		t.Fatalf("after rotation = %+v, want s2 current and s1 valid for 24 h", e)
	}
	got, err := eps.GetEndpoint(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if s := got.SigningSecrets(at(2 * time.Hour)); !slices.Equal(s, []string{s2, s1}) {
		t.Errorf("signing secrets within the grace period = %d secrets, want s2 then s1", len(s))
	}
	if s := got.SigningSecrets(at(time.Hour + webhook.RotationGrace)); !slices.Equal(s, []string{s2}) {
		t.Errorf("signing secrets after the grace period = %d secrets, want s2 only", len(s))
	}
	// A second rotation after s1 expired drops s1 and keeps s2 for 24 h.
	e, err = eps.RotateSecret(ctx, webhook.RotateSecretParams{AccountID: "a", Secret: s3, Now: at(48 * time.Hour), PreviousExpiresAt: at(72 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if e.Secret != s3 || len(e.PreviousSecrets) != 1 || e.PreviousSecrets[0].Secret != s2 {
		t.Errorf("after second rotation: current ok %v, %d previous, want s3 and only s2", e.Secret == s3, len(e.PreviousSecrets))
	}
}

func testEndpointDisable(t *testing.T, _ webhook.Outbox, eps webhook.Endpoints) {
	ctx := t.Context()
	if err := eps.DisableEndpoint(ctx, webhook.DisableEndpointParams{AccountID: "a", URL: "https://a.example/hook", Reason: "410", Now: at(0)}); !errors.Is(err, webhook.ErrNotFound) {
		t.Errorf("DisableEndpoint without an endpoint = %v, want ErrNotFound", err)
	}
	if _, _, err := eps.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: "a", URL: "https://a.example/new", Enabled: true, Secret: webhook.NewSecret(), Now: at(0)}); err != nil {
		t.Fatal(err)
	}
	err := eps.DisableEndpoint(ctx, webhook.DisableEndpointParams{AccountID: "a", URL: "https://a.example/old", Reason: "410", Now: at(time.Second)})
	if !errors.Is(err, webhook.ErrEndpointChanged) {
		t.Errorf("DisableEndpoint for a replaced URL = %v, want ErrEndpointChanged", err)
	}
	if e, _ := eps.GetEndpoint(ctx, "a"); !e.Enabled {
		t.Fatal("a stale disable request disabled the new URL")
	}
	if err := eps.DisableEndpoint(ctx, webhook.DisableEndpointParams{AccountID: "a", URL: "https://a.example/new", Reason: "the endpoint answered 410 Gone", Now: at(time.Minute)}); err != nil {
		t.Fatalf("DisableEndpoint: %v", err)
	}
	e, err := eps.GetEndpoint(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	if e.Enabled || e.DisabledReason != "the endpoint answered 410 Gone" {
		t.Errorf("after disable: enabled %v reason %q", e.Enabled, e.DisabledReason)
	}
	e, _, err = eps.PutEndpoint(ctx, webhook.PutEndpointParams{AccountID: "a", URL: "https://a.example/new", Enabled: true, Now: at(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	if !e.Enabled || e.DisabledReason != "" {
		t.Errorf("re-enabled endpoint: enabled %v reason %q, want enabled without reason", e.Enabled, e.DisabledReason)
	}
}

// testOldestPending: the oldest pending delivery's due time, for outboxes
// that can tell.
func testOldestPending(t *testing.T, ob webhook.Outbox, _ webhook.Endpoints) {
	op, ok := ob.(webhook.OldestPender)
	if !ok {
		t.Skip("outbox does not implement webhook.OldestPender")
	}
	ctx := t.Context()
	if got, err := op.OldestPending(ctx); err != nil || !got.IsZero() {
		t.Fatalf("empty outbox: %v, %v", got, err)
	}
	enqueue(t, ob, event("a", 1, at(0)), event("b", 2, at(time.Minute)))
	if got, err := op.OldestPending(ctx); err != nil || !sameTime(got, at(0)) {
		t.Fatalf("oldest pending %v, %v; want %v", got, err, at(0))
	}
	d := lease(t, ob, at(0), 1)[0]
	if err := ob.MarkDelivered(ctx, d.Lease, at(time.Second)); err != nil {
		t.Fatal(err)
	}
	if got, err := op.OldestPending(ctx); err != nil || !sameTime(got, at(time.Minute)) {
		t.Fatalf("after the oldest was delivered: %v, %v; want %v", got, err, at(time.Minute))
	}
}
