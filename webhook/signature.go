package webhook

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Header names defined by the Standard Webhooks specification.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every secret in its text form.
const SecretPrefix = "whsec_"

// DefaultTolerance is how far a webhook-timestamp may be from the
// receiver's clock, in either direction, before [Verify] rejects it.
const DefaultTolerance = 5 * time.Minute

// secretBytes is the length of the keys [NewSecret] generates.
const secretBytes = 32

// Errors returned when signing or verifying. Match them with [errors.Is].
var (
	// ErrInvalidSecret reports a secret that is not "whsec_" followed by
	// non-empty standard base64.
	ErrInvalidSecret = errors.New("webhook: invalid secret")
	// ErrMissingHeaders reports a request without webhook-id,
	// webhook-timestamp or webhook-signature.
	ErrMissingHeaders = errors.New("webhook: missing signature headers")
	// ErrInvalidTimestamp reports a webhook-timestamp that is not an
	// integer number of seconds since the Unix epoch.
	ErrInvalidTimestamp = errors.New("webhook: invalid timestamp")
	// ErrTimestampTooOld reports a timestamp older than the tolerance.
	ErrTimestampTooOld = errors.New("webhook: timestamp too old")
	// ErrTimestampTooNew reports a timestamp further in the future than
	// the tolerance.
	ErrTimestampTooNew = errors.New("webhook: timestamp too new")
	// ErrInvalidSignature reports that no v1 signature in the header
	// matches the body under the secret.
	ErrInvalidSignature = errors.New("webhook: invalid signature")
)

// NewSecret returns a new random signing secret in its text form,
// "whsec_" followed by 32 random bytes in standard base64.
func NewSecret() string {
	b := make([]byte, secretBytes)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (it aborts the program instead).
	return SecretPrefix + base64.StdEncoding.EncodeToString(b)
}

// ParseSecret returns the HMAC key of a secret: the base64 decoding of
// the part after "whsec_". The prefix is optional, as in the reference
// libraries.
func ParseSecret(secret string) ([]byte, error) {
	s := strings.TrimPrefix(secret, SecretPrefix)
	key, err := base64.StdEncoding.DecodeString(s)
	if err != nil || len(key) == 0 {
		return nil, ErrInvalidSecret
	}
	return key, nil
}

// Signer signs messages with one or more secrets. Several secrets are
// used while a secret rotates: the receiver accepts the message if any
// signature matches. A Signer is safe for concurrent use.
type Signer struct {
	keys [][]byte
}

// NewSigner returns a Signer for the given secrets, in the order their
// signatures appear in the header. At least one secret is required.
func NewSigner(secrets ...string) (*Signer, error) {
	if len(secrets) == 0 {
		return nil, fmt.Errorf("%w: no secret", ErrInvalidSecret)
	}
	keys := make([][]byte, 0, len(secrets))
	for _, s := range secrets {
		k, err := ParseSecret(s)
		if err != nil {
			return nil, err
		}
		keys = append(keys, k)
	}
	return &Signer{keys: keys}, nil
}

// Sign returns the webhook-signature header value for a message:
// "v1,<base64 HMAC-SHA256 of id.timestamp.body>" for each secret,
// separated by single spaces.
func (s *Signer) Sign(id string, timestamp time.Time, body []byte) string {
	ts := strconv.FormatInt(timestamp.Unix(), 10)
	var b strings.Builder
	for i, k := range s.keys {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("v1,")
		b.WriteString(base64.StdEncoding.EncodeToString(mac(k, id, ts, body)))
	}
	return b.String()
}

// SetHeaders sets webhook-id, webhook-timestamp and webhook-signature on h
// for a message.
func (s *Signer) SetHeaders(h http.Header, id string, timestamp time.Time, body []byte) {
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(timestamp.Unix(), 10))
	h.Set(HeaderSignature, s.Sign(id, timestamp, body))
}

func mac(key []byte, id, ts string, body []byte) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte(id))
	m.Write([]byte{'.'})
	m.Write([]byte(ts))
	m.Write([]byte{'.'})
	m.Write(body)
	return m.Sum(nil)
}

// VerifyOptions adjusts verification. The zero value uses
// [DefaultTolerance] and the system clock.
type VerifyOptions struct {
	// Tolerance is the largest accepted distance between the
	// webhook-timestamp and Now. Zero means DefaultTolerance; a negative
	// value disables the check (only for replaying stored messages).
	Tolerance time.Duration
	// Now returns the current time. Nil means time.Now.
	Now func() time.Time
}

// Verify checks the Standard Webhooks signature headers of a received
// message against body, the raw request body, with the options o. It
// returns nil if any v1 signature in webhook-signature matches; otherwise
// an error matching one of ErrInvalidSecret, ErrMissingHeaders,
// ErrInvalidTimestamp, ErrTimestampTooOld, ErrTimestampTooNew or
// ErrInvalidSignature.
func (o VerifyOptions) Verify(secret string, header http.Header, body []byte) error {
	key, err := ParseSecret(secret)
	if err != nil {
		return err
	}
	id := header.Get(HeaderID)
	tsText := header.Get(HeaderTimestamp)
	sigs := header.Get(HeaderSignature)
	if id == "" || tsText == "" || sigs == "" {
		return ErrMissingHeaders
	}
	sec, err := strconv.ParseInt(tsText, 10, 64)
	if err != nil || sec < 0 {
		return ErrInvalidTimestamp
	}
	if tol := o.Tolerance; tol >= 0 {
		if tol == 0 {
			tol = DefaultTolerance
		}
		now := time.Now()
		if o.Now != nil {
			now = o.Now()
		}
		ts := time.Unix(sec, 0)
		switch {
		case now.Sub(ts) > tol:
			return ErrTimestampTooOld
		case ts.Sub(now) > tol:
			return ErrTimestampTooNew
		}
	}
	want := mac(key, id, tsText, body)
	for sig := range strings.FieldsSeq(sigs) {
		version, value, ok := strings.Cut(sig, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(value)
		if err != nil {
			continue
		}
		if hmac.Equal(got, want) {
			return nil
		}
	}
	return ErrInvalidSignature
}

// Verify checks a received message with the default options: a
// five-minute timestamp tolerance and the system clock. See
// [VerifyOptions.Verify].
func Verify(secret string, header http.Header, body []byte) error {
	return VerifyOptions{}.Verify(secret, header, body)
}
