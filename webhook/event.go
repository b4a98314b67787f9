package webhook

import (
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// Event types.
const (
	// TypeValidationCompleted is sent once per completed validation job.
	TypeValidationCompleted = "validation.completed"
	// TypeBatchCompleted is sent once per batch, when its last job
	// completes.
	TypeBatchCompleted = "batch.completed"
	// TypeTest is sent when the account owner asks for a test delivery.
	TypeTest = "webhook.test"
)

// EventTypes lists the event types an endpoint can subscribe to.
var EventTypes = []string{TypeValidationCompleted, TypeBatchCompleted}

// ErrUnknownEventType reports an event type not in [EventTypes].
var ErrUnknownEventType = errors.New("webhook: unknown event type")

// CheckEventTypes reports an error wrapping [ErrUnknownEventType] for a
// type that is not in [EventTypes].
func CheckEventTypes(types []string) error {
	for _, t := range types {
		if !slices.Contains(EventTypes, t) {
			return fmt.Errorf("%w: %q", ErrUnknownEventType, t)
		}
	}
	return nil
}

// ErrInvalidEvent reports an event that cannot be built: an empty account
// or job id, or a result that is not valid JSON.
var ErrInvalidEvent = errors.New("webhook: invalid event")

// timestampLayout is RFC 3339 in UTC with milliseconds.
const timestampLayout = "2006-01-02T15:04:05.000Z07:00"

// Event is one message for one account. ID is sent as webhook-id and
// stays the same on every attempt, so receivers can drop duplicates.
// Payload is the exact request body; it is signed and stored as is.
type Event struct {
	ID        string    // "msg_" followed by random text
	AccountID string    // the account whose endpoint receives it
	Type      string    // TypeValidationCompleted, TypeBatchCompleted or TypeTest
	JobID     string    // the job it reports on; empty for TypeTest
	CreatedAt time.Time // when it was created; first due at this time
	Payload   []byte    // JSON body
}

// NewEventID returns a new random event id, "msg_" followed by 26
// base32 characters (128 random bits).
func NewEventID() string {
	return "msg_" + rand.Text()
}

type eventBody struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

type completedData struct {
	JobID  string          `json:"job_id"`
	Result json.RawMessage `json:"result"`
}

// NewEvent returns a validation.completed event for a job with a new id.
// result is the job's result as JSON (an emailcheck result, encoded by the
// caller); the payload is
//
//	{"type":"validation.completed","timestamp":"<RFC 3339>","data":{"job_id":"…","result":{…}}}
func NewEvent(accountID, jobID string, result json.RawMessage, at time.Time) (Event, error) {
	if accountID == "" || jobID == "" {
		return Event{}, fmt.Errorf("%w: empty account or job id", ErrInvalidEvent)
	}
	if !json.Valid(result) {
		return Event{}, fmt.Errorf("%w: result is not valid JSON", ErrInvalidEvent)
	}
	payload, err := json.Marshal(eventBody{
		Type:      TypeValidationCompleted,
		Timestamp: at.UTC().Format(timestampLayout),
		Data:      completedData{JobID: jobID, Result: result},
	})
	if err != nil {
		return Event{}, fmt.Errorf("%w: %v", ErrInvalidEvent, err)
	}
	return Event{
		ID:        NewEventID(),
		AccountID: accountID,
		Type:      TypeValidationCompleted,
		JobID:     jobID,
		CreatedAt: at,
		Payload:   payload,
	}, nil
}

// NewTestEvent returns a webhook.test event with a new id, for checking
// an endpoint: {"type":"webhook.test","timestamp":"…","data":{}}.
func NewTestEvent(accountID string, at time.Time) Event {
	payload, _ := json.Marshal(eventBody{
		Type:      TypeTest,
		Timestamp: at.UTC().Format(timestampLayout),
		Data:      struct{}{},
	})
	return Event{
		ID:        NewEventID(),
		AccountID: accountID,
		Type:      TypeTest,
		CreatedAt: at,
		Payload:   payload,
	}
}
