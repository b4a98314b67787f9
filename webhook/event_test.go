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
