package httpapi

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs"
)

// StatusURL is the status_url of an accepted batch: a path template,
// preceded by the prefix a host's http.StripPrefix removed (see
// mountPrefix).
const StatusURL = "/validate/status/{job_id}"

// mountPrefix returns the part of r's path that a host's
// http.StripPrefix removed before the handler saw it ("/email" for a
// handler mounted with http.StripPrefix("/email", h)), or "" when the
// handler serves the whole path. It compares the path the client sent
// with the one left, so it needs the RequestURI a server sets.
func mountPrefix(r *http.Request) string {
	u, err := url.ParseRequestURI(r.RequestURI)
	if err != nil {
		return ""
	}
	full, rest := u.EscapedPath(), r.URL.EscapedPath()
	p, ok := strings.CutSuffix(full, rest)
	if !ok || !strings.HasPrefix(p, "/") || len(p) > maxMountPrefix || strings.ContainsAny(p, "?#") {
		return ""
	}
	return p
}

// maxMountPrefix bounds the prefix mountPrefix reports.
const maxMountPrefix = 256

// maxIdempotencyKey bounds the Idempotency-Key header, in characters (as
// the OpenAPI document's maxLength counts them).
const maxIdempotencyKey = 255

// acceptedMessage is the message of an accepted batch.
const acceptedMessage = "Batch accepted for validation"

type batchRequest struct {
	Emails *[]*string `json:"emails"`
}

type batchResponse struct {
	Message   string   `json:"message"`
	JobCount  int      `json:"job_count"`
	JobIDs    []string `json:"job_ids"`
	StatusURL string   `json:"status_url"`
	// BatchID names the batch the jobs belong to: the id of its first job.
	BatchID   string `json:"batch_id"`
	RequestID string `json:"requestId"`
}

type jobResponse struct {
	ID        string             `json:"id"`
	State     jobs.State         `json:"state"`
	Result    *emailcheck.Result `json:"result"`
	RequestID string             `json:"requestId"`
}

// readBody checks the media type and reads the body within the size limit.
// It answers the request and returns ok false on failure.
func (h *Handler) readBody(w http.ResponseWriter, r *http.Request, c *call) (body []byte, ok bool) {
	return readBodyLimit(w, r, c, h.maxBody)
}

// readBodyLimit is readBody with a limit of its own.
func readBodyLimit(w http.ResponseWriter, r *http.Request, c *call, limit int64) (body []byte, ok bool) {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			writeProblem(w, c, CodeUnsupportedMediaType, "Send the body as application/json.")
			return nil, false
		}
	}
	if r.ContentLength > limit {
		writeProblem(w, c, CodeBodyTooLarge, "The body exceeds "+strconv.FormatInt(limit, 10)+" bytes.")
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			writeProblem(w, c, CodeBodyTooLarge, "The body exceeds "+strconv.FormatInt(limit, 10)+" bytes.")
			return nil, false
		}
		writeProblem(w, c, CodeInvalidJSON, "The body could not be read.")
		return nil, false
	}
	return body, true
}

// decodeJSON decodes body into v, answering invalid_json for malformed
// JSON and invalid_body for JSON of the wrong shape.
func decodeJSON(w http.ResponseWriter, c *call, body []byte, v any) bool {
	if err := json.Unmarshal(body, v); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			detail := "The body has the wrong shape."
			if te.Field != "" {
				detail = "The field " + te.Field + " has the wrong type."
			}
			writeProblem(w, c, CodeInvalidBody, detail)
			return false
		}
		writeProblem(w, c, CodeInvalidJSON, "The body is not valid JSON.")
		return false
	}
	return uniqueKeys(w, c, body)
}

// uniqueKeys refuses a body that repeats a key within one object:
// encoding/json lets the last one win, so {"credits":1,
// "credits":1000000000} would grant a billion to a reader who saw one.
func uniqueKeys(w http.ResponseWriter, c *call, body []byte) bool {
	if key, dup := repeatedKey(body); dup {
		writeProblem(w, c, CodeInvalidBody, "The body repeats the field "+strconv.Quote(key)+".")
		return false
	}
	return true
}

// decodeStrict is decodeJSON refusing unknown fields and trailing data
// too.
func decodeStrict(w http.ResponseWriter, c *call, body []byte, v any) bool {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	err := dec.Decode(v)
	if err == nil && dec.More() {
		err = errors.New("trailing data")
	}
	if err != nil && strings.HasPrefix(err.Error(), "json: unknown field ") {
		writeProblem(w, c, CodeInvalidBody, "The body has an unknown field "+strings.TrimPrefix(err.Error(), "json: unknown field ")+".")
		return false
	}
	if err != nil {
		if decodeJSON(w, c, body, v) {
			writeProblem(w, c, CodeInvalidJSON, "The body is not a single JSON value.")
		}
		return false
	}
	return uniqueKeys(w, c, body)
}

// repeatedKey reports the first key that appears twice in one object of
// the JSON value body (which must be valid JSON). Keys are compared as
// encoding/json matches them to fields, regardless of case (each rune
// upper-cased: "Credits" and "credit\u017f" repeat "credits"), so that
// no spelling of a field can stand in for another.
func repeatedKey(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	// Per open container: the keys seen (nil for an array) and whether
	// the next string token is a key.
	type level struct {
		keys   map[string]bool
		expect bool
	}
	var stack []*level
	for {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		var top *level
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		if d, ok := tok.(json.Delim); ok {
			switch d {
			case '{':
				if top != nil && top.keys != nil {
					top.expect = true // the object is this key's value
				}
				stack = append(stack, &level{keys: map[string]bool{}, expect: true})
			case '[':
				if top != nil && top.keys != nil {
					top.expect = true
				}
				stack = append(stack, &level{})
			default:
				stack = stack[:len(stack)-1]
			}
			continue
		}
		if top == nil || top.keys == nil {
			continue
		}
		if top.expect {
			k, _ := tok.(string)
			folded := strings.ToUpper(k)
			if top.keys[folded] {
				return k, true
			}
			top.keys[folded] = true
			top.expect = false
		} else {
			top.expect = true // a value: a key comes next
		}
	}
}

// submitBatch serves POST /validate/async.
func (h *Handler) submitBatch(w http.ResponseWriter, r *http.Request, c *call) {
	idemKey, ok := idempotencyKey(w, r, c)
	if !ok {
		return
	}
	body, ok := h.readBody(w, r, c)
	if !ok {
		return
	}
	var req batchRequest
	if !decodeStrict(w, c, body, &req) {
		return
	}
	if req.Emails == nil {
		writeProblem(w, c, CodeInvalidBody, "The body must be an object with an emails array of strings.")
		return
	}
	list := *req.Emails
	if len(list) == 0 {
		writeProblem(w, c, CodeEmptyBatch, "The emails array is empty.")
		return
	}
	if len(list) > MaxBatch {
		writeProblem(w, c, CodeBatchTooLarge, "A batch holds at most "+strconv.Itoa(MaxBatch)+" addresses; this one has "+strconv.Itoa(len(list))+".")
		return
	}
	emails := make([]string, len(list))
	for i, e := range list {
		if e == nil {
			writeProblem(w, c, CodeInvalidBody, "emails["+strconv.Itoa(i)+"] is not a string.")
			return
		}
		clean, ok := cleanAddress(*e)
		if !ok {
			writeProblem(w, c, CodeAddressTooLong, "emails["+strconv.Itoa(i)+"] is longer than "+strconv.Itoa(MaxAddressBytes)+" bytes.")
			return
		}
		emails[i] = clean
	}
	p := jobs.EnqueueChargedParams{AccountID: c.key.AccountID, Emails: emails}
	if idemKey != "" {
		p.IdempotencyKey = "batch:" + idemKey
		p.Fingerprint = fingerprint(emails)
	}
	ids, err := h.queue.EnqueueCharged(r.Context(), p)
	switch {
	case err == nil:
	case errors.Is(err, credits.ErrInsufficient):
		h.chargeError(w, c, err)
		return
	case errors.Is(err, credits.ErrIdempotencyConflict):
		writeProblem(w, c, CodeIdempotencyKeyReused, "This Idempotency-Key was used with another body.")
		return
	case errors.Is(err, jobs.ErrBatchReplayed):
		writeProblem(w, c, CodeIdempotencyKeyReused, "This Idempotency-Key was already used; the batch was accepted and not charged again.")
		return
	default:
		h.backendError(w, c, "enqueue", err)
		return
	}
	if h.metrics != nil {
		h.metrics.credits.Add(float64(len(ids)))
	}
	h.writeJSON(w, c, http.StatusAccepted, batchResponse{
		Message:   acceptedMessage,
		JobCount:  len(ids),
		JobIDs:    ids,
		StatusURL: mountPrefix(r) + StatusURL,
		BatchID:   ids[0],
		RequestID: c.id,
	})
}

// idempotencyKey returns the request's Idempotency-Key header, or answers
// 400 when it is too long or not clean text.
func idempotencyKey(w http.ResponseWriter, r *http.Request, c *call) (string, bool) {
	idemKey := r.Header.Get("Idempotency-Key")
	if len(idemKey) > utf8.UTFMax*maxIdempotencyKey || utf8.RuneCountInString(idemKey) > maxIdempotencyKey {
		writeProblem(w, c, CodeInvalidBody, "The Idempotency-Key header is longer than "+strconv.Itoa(maxIdempotencyKey)+" characters.")
		return "", false
	}
	if !cleanText(idemKey) {
		writeProblem(w, c, CodeInvalidBody, "The Idempotency-Key header must be UTF-8 text without control characters.")
		return "", false
	}
	return idemKey, true
}

// fingerprint is the hex SHA-256 of the batch's canonical form: the JSON
// array of its addresses, so that formatting does not matter.
func fingerprint(emails []string) string {
	b, _ := json.Marshal(emails) // a []string always encodes
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// jobStatus serves GET /validate/status/{job_id}.
func (h *Handler) jobStatus(w http.ResponseWriter, r *http.Request, c *call) {
	id := r.PathValue("job_id")
	j, err := h.queue.Get(r.Context(), c.key.AccountID, id)
	if err != nil {
		if errors.Is(err, jobs.ErrNotFound) {
			writeProblem(w, c, CodeJobNotFound, "No job with this id.")
			return
		}
		h.backendError(w, c, "get job", err)
		return
	}
	resp := jobResponse{ID: j.ID, State: j.State, RequestID: c.id}
	if j.State == jobs.StateCompleted {
		resp.Result = j.Result
	}
	h.writeJSON(w, c, http.StatusOK, resp)
}
