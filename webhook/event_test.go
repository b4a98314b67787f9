package webhook_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/webhook"
)

func TestNewEvent(t *testing.T) {
	t.Parallel()
	at := time.Date(2030, 5, 6, 7, 8, 9, 123456789, time.FixedZone("X", 3600))
	result := json.RawMessage(`{ "email": "a@b.example", "status": "LIKELY" }`)
	ev, err := webhook.NewEvent("acct", "17", result, at)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(ev.ID, "msg_") || len(ev.ID) < 20 {
		t.Errorf("ID %q", ev.ID)
	}
	if ev.AccountID != "acct" || ev.JobID != "17" || ev.Type != webhook.TypeValidationCompleted || !ev.CreatedAt.Equal(at) {
		t.Errorf("event fields %+v", ev)
	}
	want := `{"type":"validation.completed","timestamp":"2030-05-06T06:08:09.123Z","data":{"job_id":"17","result":{"email":"a@b.example","status":"LIKELY"}}}`
	if string(ev.Payload) != want {
		t.Errorf("payload\n got %s\nwant %s", ev.Payload, want)
	}
	other, _ := webhook.NewEvent("acct", "17", result, at)
	if other.ID == ev.ID {
		t.Error("two events share an id")
	}
}

func TestNewEventInvalid(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		account, job string
		result       string
	}{
		"no account":   {"", "1", `{}`},
		"no job":       {"a", "", `{}`},
		"bad result":   {"a", "1", `{"x":`},
		"empty result": {"a", "1", ``},
	} {
		if _, err := webhook.NewEvent(tc.account, tc.job, json.RawMessage(tc.result), time.Now()); !errors.Is(err, webhook.ErrInvalidEvent) {
			t.Errorf("%s: %v, want ErrInvalidEvent", name, err)
		}
	}
}

func TestNewTestEvent(t *testing.T) {
	t.Parallel()
	ev := webhook.NewTestEvent("acct", time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	if want := `{"type":"webhook.test","timestamp":"2030-01-01T00:00:00.000Z","data":{}}`; string(ev.Payload) != want {
		t.Errorf("payload %s, want %s", ev.Payload, want)
	}
	if ev.Type != webhook.TypeTest || ev.JobID != "" {
		t.Errorf("event %+v", ev)
	}
}

func TestBatchCompletedPayload(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 2, 3, 4, 5, 6, 789999999, time.FixedZone("x", 3600))
	want := `{"type":"batch.completed","timestamp":"2031-02-03T03:05:06.789Z","data":{"batch_id":"5","total":4,"counts":{"DISPOSABLE":1,"LIKELY":2,"UNKNOWN":1}}}`
	data := webhook.BatchCompleted{BatchID: "5", Total: 4, Counts: map[string]int{"UNKNOWN": 1, "LIKELY": 2, "DISPOSABLE": 1}}
	stored := webhook.StoreBatchCompleted(data)
	for _, tc := range []struct {
		name    string
		payload []byte
		want    string
	}{
		{"made in Go", webhook.BatchCompletedPayload(at, data), want},
		{"stored by StoreBatchCompleted", stored, want},
		// As PostgreSQL's jsonb prints it, and as Redis' cjson may.
		{"stored with spaces", append([]byte{0}, `{"total": 4, "counts": {"LIKELY": 2, "UNKNOWN": 1, "DISPOSABLE": 1}, "batch_id": "5"}`...), want},
		{"stored in another order", append([]byte{0}, `{"counts":{"UNKNOWN":1,"DISPOSABLE":1,"LIKELY":2},"batch_id":"5","total":4}`...), want},
		{"no counts", append([]byte{0}, `{"batch_id":"6","total":0}`...),
			`{"type":"batch.completed","timestamp":"2031-02-03T03:05:06.789Z","data":{"batch_id":"6","total":0,"counts":{}}}`},
		{"bytes are kept", []byte(`{"type":"batch.completed"}`), `{"type":"batch.completed"}`},
		{"empty is kept", nil, ``},
	} {
		ev := webhook.Event{ID: "msg_1", Type: webhook.TypeBatchCompleted, CreatedAt: at, Payload: tc.payload}
		if err := ev.Expand(); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if string(ev.Payload) != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, ev.Payload, tc.want)
		}
		// Expanding again changes nothing: the bytes are final.
		again := ev
		if err := again.Expand(); err != nil || string(again.Payload) != string(ev.Payload) {
			t.Errorf("%s: expanded twice: %s, %v", tc.name, again.Payload, err)
		}
	}
	bad := webhook.Event{ID: "msg_2", Type: webhook.TypeBatchCompleted, Payload: []byte("\x00{nope")}
	if err := bad.Expand(); !errors.Is(err, webhook.ErrInvalidEvent) {
		t.Errorf("undecodable data: %v, want ErrInvalidEvent", err)
	}
}

func TestNewBatchEvent(t *testing.T) {
	t.Parallel()
	at := time.Now()
	a, b := webhook.NewBatchEvent("acct", "9", at), webhook.NewBatchEvent("acct", "9", at)
	if a.Type != webhook.TypeBatchCompleted || a.AccountID != "acct" || a.JobID != "9" || !a.CreatedAt.Equal(at) || a.Payload != nil {
		t.Errorf("NewBatchEvent = %+v", a)
	}
	if !strings.HasPrefix(a.ID, "msg_") || a.ID == b.ID {
		t.Errorf("ids %q, %q: want distinct msg_ ids", a.ID, b.ID)
	}
}

// An event with its batch's data in Batch is read back as the bytes
// BatchCompletedPayload gives, whatever its stored payload; reading it
// again changes nothing. The earlier stored form is read into Batch.
func TestExpandBatch(t *testing.T) {
	t.Parallel()
	at := time.Date(2031, 2, 3, 4, 5, 6, 789999999, time.UTC)
	data := webhook.BatchCompleted{BatchID: "5", Total: 2, Counts: map[string]int{"LIKELY": 2}}
	want := `{"type":"batch.completed","timestamp":"2031-02-03T04:05:06.789Z","data":{"batch_id":"5","total":2,"counts":{"LIKELY":2}}}`
	for _, payload := range [][]byte{nil, {}, []byte(`stale`)} {
		ev := webhook.Event{ID: "msg_1", Type: webhook.TypeBatchCompleted, CreatedAt: at, Batch: &data, Payload: payload}
		for range 2 {
			if err := ev.Expand(); err != nil || string(ev.Payload) != want {
				t.Fatalf("payload %q: Expand = %s, %v; want %s", payload, ev.Payload, err, want)
			}
		}
	}
	old := webhook.Event{ID: "msg_2", Type: webhook.TypeBatchCompleted, CreatedAt: at, Payload: webhook.StoreBatchCompleted(data)}
	if err := old.Expand(); err != nil || string(old.Payload) != want {
		t.Fatalf("earlier form: %s, %v; want %s", old.Payload, err, want)
	}
	if old.Batch == nil || old.Batch.BatchID != "5" || old.Batch.Total != 2 || old.Batch.Counts["LIKELY"] != 2 {
		t.Fatalf("earlier form read into %+v", old.Batch)
	}
}
