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
	// Batch, when set, is a batch.completed event's data, stored by an
	// [Outbox] in a field of its own instead of the bytes: a backend
	// learns a batch's final counts only inside the atomic step that
	// completes its last job. [Event.Expand] makes Payload from it,
	// with [BatchCompletedPayload], whenever the event is read back.
	Batch *BatchCompleted
}

// NewEventID returns a new random event id, "msg_" followed by 26
// base32 characters (128 random bits).
func NewEventID() string {
	return "msg_" + rand.Text()
}

// eventBody is every event's body: the one place the bytes of an event
// are made.
type eventBody struct {
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      any    `json:"data"`
}

// body returns the payload of an event of the type created at at, with
// data as its data object.
func body(eventType string, at time.Time, data any) ([]byte, error) {
	return json.Marshal(eventBody{Type: eventType, Timestamp: at.UTC().Format(timestampLayout), Data: data})
}

type completedData struct {
	JobID  string          `json:"job_id"`
	Result json.RawMessage `json:"result"`
}

// NewEvent returns a validation.completed event with a new id for the
// job's completion. result is the job's result as JSON (an emailcheck
// result, encoded by the caller); the payload is
//
//	{"type":"validation.completed","timestamp":"<RFC 3339>","data":{"job_id":"…","result":{…}}}
func NewEvent(accountID, jobID string, result json.RawMessage, at time.Time) (Event, error) {
	if accountID == "" || jobID == "" {
		return Event{}, fmt.Errorf("%w: empty account or job id", ErrInvalidEvent)
	}
	if !json.Valid(result) {
		return Event{}, fmt.Errorf("%w: result is not valid JSON", ErrInvalidEvent)
	}
	payload, err := body(TypeValidationCompleted, at, completedData{JobID: jobID, Result: result})
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

// BatchCompleted is the data of a batch.completed event: a batch's final
// counts, known only to the completion that finishes the batch.
type BatchCompleted struct {
	// BatchID is the batch's id (the id of its first job).
	BatchID string `json:"batch_id"`
	// Total is the number of jobs in the batch.
	Total int `json:"total"`
	// Counts holds, for every status that occurs, how many results have
	// it.
	Counts map[string]int `json:"counts"`
}

// NewBatchEvent returns a batch.completed event with a new id and no
// payload yet, for the account's job whose completion may finish its
// batch. The backend that completes the job writes it only if the job is
// its batch's last, with the batch's final counts in [Event.Batch].
func NewBatchEvent(accountID, jobID string, at time.Time) Event {
	return Event{
		ID:        NewEventID(),
		AccountID: accountID,
		Type:      TypeBatchCompleted,
		JobID:     jobID,
		CreatedAt: at,
	}
}

// BatchCompletedPayload returns the payload of a batch.completed event
// created at at, byte for byte:
//
//	{"type":"batch.completed","timestamp":"<RFC 3339>","data":{"batch_id":"…","total":n,"counts":{"LIKELY":n,…}}}
//
// with counts' keys in byte order and no spaces. The bytes depend on at
// (to the millisecond) and b only, so every attempt to deliver the event
// sends the same ones. It is the one place these bytes are made.
func BatchCompletedPayload(at time.Time, b BatchCompleted) []byte {
	if b.Counts == nil {
		b.Counts = map[string]int{}
	}
	// Strings, ints and a map of ints always encode.
	payload, _ := body(TypeBatchCompleted, at, b)
	return payload
}

// storedData starts a payload in the form earlier releases stored a
// batch.completed event's data in; no JSON text starts with it.
const storedData = 0

// StoreBatchCompleted returns b in the form earlier releases stored a
// batch.completed event's data in, as the payload itself: a zero byte,
// then a JSON object with batch_id (a string), total and counts (an
// object of numbers), in any order and spacing. Backends store
// [Event.Batch] and read it first; the PostgreSQL and Redis completions
// still write this form in the payload beside it, for a rolling
// upgrade's instances of the releases before the field, and deliveries
// written so remain in outboxes: [Event.Expand] reads them as the same
// bytes. Tests use it to write such a delivery.
func StoreBatchCompleted(b BatchCompleted) []byte {
	data, _ := json.Marshal(b)
	return append([]byte{storedData}, data...)
}

// Expand makes the payload of an event read back from an [Outbox]: an
// event with [Event.Batch] gets the bytes [BatchCompletedPayload] gives
// for its CreatedAt and data; a payload in the earlier stored form
// ([StoreBatchCompleted]) is decoded into Batch and made the same way;
// any other payload is left as it is. An Outbox calls it on every event
// it returns, so the same stored event always yields the same bytes.
// Undecodable data is an error wrapping [ErrInvalidEvent].
func (e *Event) Expand() error {
	if e.Batch == nil {
		if len(e.Payload) == 0 || e.Payload[0] != storedData {
			return nil
		}
		var b BatchCompleted
		if err := json.Unmarshal(e.Payload[1:], &b); err != nil {
			return fmt.Errorf("%w: event %s: %v", ErrInvalidEvent, e.ID, err)
		}
		e.Batch = &b
	}
	e.Payload = BatchCompletedPayload(e.CreatedAt, *e.Batch)
	return nil
}

// NewTestEvent returns a webhook.test event with a new id, for checking
// an endpoint: {"type":"webhook.test","timestamp":"…","data":{}}.
func NewTestEvent(accountID string, at time.Time) Event {
	payload, _ := body(TypeTest, at, struct{}{})
	return Event{
		ID:        NewEventID(),
		AccountID: accountID,
		Type:      TypeTest,
		CreatedAt: at,
		Payload:   payload,
	}
}
