package webhook_test

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/validmail/validmail/webhook"
)

// The signing test vector published with the Standard Webhooks
// specification's reference libraries (Apache-2.0).
const (
	vecSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	vecID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	vecTimestamp = 1614265330
	vecPayload   = `{"test": 2432232314}`
	vecSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

func vecHeader(sig string) http.Header {
	h := http.Header{}
	h.Set(webhook.HeaderID, vecID)
	h.Set(webhook.HeaderTimestamp, strconv.Itoa(vecTimestamp))
	h.Set(webhook.HeaderSignature, sig)
	return h
}

func vecOptions() webhook.VerifyOptions {
	return webhook.VerifyOptions{Now: func() time.Time { return time.Unix(vecTimestamp, 0) }}
}

func TestSignSpecVector(t *testing.T) {
	t.Parallel()
	s, err := webhook.NewSigner(vecSecret)
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Sign(vecID, time.Unix(vecTimestamp, 0), []byte(vecPayload)); got != vecSignature {
		t.Fatalf("Sign = %q, want %q", got, vecSignature)
	}
	if err := vecOptions().Verify(vecSecret, vecHeader(vecSignature), []byte(vecPayload)); err != nil {
		t.Fatalf("Verify(spec vector) = %v", err)
	}
}

func TestVerify(t *testing.T) {
	t.Parallel()
	other := webhook.NewSecret()
	otherSig := must(webhook.NewSigner(other)).Sign(vecID, time.Unix(vecTimestamp, 0), []byte(vecPayload))
	tests := []struct {
		name   string
		secret string
		header func(h http.Header)
		body   string
		now    int64
		want   error
	}{
		{name: "valid", want: nil},
		{name: "secret without prefix", secret: strings.TrimPrefix(vecSecret, "whsec_"), want: nil},
		{name: "rotating: second signature matches", header: func(h http.Header) { h.Set(webhook.HeaderSignature, otherSig+" "+vecSignature) }, want: nil},
		{name: "unknown versions skipped", header: func(h http.Header) { h.Set(webhook.HeaderSignature, "v1a,abc v2,xyz "+vecSignature) }, want: nil},
		{name: "tampered body", body: `{"test": 2432232315}`, want: webhook.ErrInvalidSignature},
		{name: "other secret", secret: other, want: webhook.ErrInvalidSignature},
		{name: "other id", header: func(h http.Header) { h.Set(webhook.HeaderID, "msg_other") }, want: webhook.ErrInvalidSignature},
		{name: "signature not base64", header: func(h http.Header) { h.Set(webhook.HeaderSignature, "v1,@@@") }, want: webhook.ErrInvalidSignature},
		{name: "signature without version", header: func(h http.Header) { h.Set(webhook.HeaderSignature, strings.TrimPrefix(vecSignature, "v1,")) }, want: webhook.ErrInvalidSignature},
		{name: "missing id", header: func(h http.Header) { h.Del(webhook.HeaderID) }, want: webhook.ErrMissingHeaders},
		{name: "missing timestamp", header: func(h http.Header) { h.Del(webhook.HeaderTimestamp) }, want: webhook.ErrMissingHeaders},
		{name: "missing signature", header: func(h http.Header) { h.Del(webhook.HeaderSignature) }, want: webhook.ErrMissingHeaders},
		{name: "timestamp not a number", header: func(h http.Header) { h.Set(webhook.HeaderTimestamp, "2021-02-25") }, want: webhook.ErrInvalidTimestamp},
		{name: "too old", now: vecTimestamp + 301, want: webhook.ErrTimestampTooOld},
		{name: "old within tolerance", now: vecTimestamp + 300, want: nil},
		{name: "too new", now: vecTimestamp - 301, want: webhook.ErrTimestampTooNew},
		{name: "invalid secret", secret: "whsec_!!!", want: webhook.ErrInvalidSecret},
		{name: "empty secret", secret: "whsec_", want: webhook.ErrInvalidSecret},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := vecHeader(vecSignature)
			if tc.header != nil {
				tc.header(h)
			}
			secret, body, now := vecSecret, vecPayload, int64(vecTimestamp)
			if tc.secret != "" {
				secret = tc.secret
			}
			if tc.body != "" {
				body = tc.body
			}
			if tc.now != 0 {
				now = tc.now
			}
			opts := webhook.VerifyOptions{Now: func() time.Time { return time.Unix(now, 0) }}
			if err := opts.Verify(secret, h, []byte(body)); !errors.Is(err, tc.want) || (tc.want == nil && err != nil) {
				t.Fatalf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestVerifyToleranceOptions(t *testing.T) {
	t.Parallel()
	body := []byte(vecPayload)
	late := func() time.Time { return time.Unix(vecTimestamp+3600, 0) }
	if err := (webhook.VerifyOptions{Now: late, Tolerance: 2 * time.Hour}).Verify(vecSecret, vecHeader(vecSignature), body); err != nil {
		t.Errorf("2 h tolerance, 1 h late: %v", err)
	}
	if err := (webhook.VerifyOptions{Now: late, Tolerance: -1}).Verify(vecSecret, vecHeader(vecSignature), body); err != nil {
		t.Errorf("tolerance disabled: %v", err)
	}
	if err := webhook.Verify(vecSecret, vecHeader(vecSignature), body); !errors.Is(err, webhook.ErrTimestampTooOld) {
		t.Errorf("Verify with the system clock of a 2021 message = %v, want ErrTimestampTooOld", err)
	}
}

func TestSignerRotation(t *testing.T) {
	t.Parallel()
	oldS, newS := webhook.NewSecret(), webhook.NewSecret()
	s := must(webhook.NewSigner(newS, oldS))
	now := time.Now()
	h := http.Header{}
	body := []byte(`{"a":1}`)
	s.SetHeaders(h, "msg_1", now, body)
	if n := len(strings.Fields(h.Get(webhook.HeaderSignature))); n != 2 {
		t.Fatalf("%d signatures, want 2", n)
	}
	for _, secret := range []string{oldS, newS} {
		if err := webhook.Verify(secret, h, body); err != nil {
			t.Errorf("receiver with one of the two secrets: %v", err)
		}
	}
	if err := webhook.Verify(webhook.NewSecret(), h, body); !errors.Is(err, webhook.ErrInvalidSignature) {
		t.Errorf("third secret: %v, want ErrInvalidSignature", err)
	}
	if _, err := webhook.NewSigner(); !errors.Is(err, webhook.ErrInvalidSecret) {
		t.Errorf("NewSigner() = %v, want ErrInvalidSecret", err)
	}
	if _, err := webhook.NewSigner(newS, "nope!"); !errors.Is(err, webhook.ErrInvalidSecret) {
		t.Errorf("NewSigner with an invalid secret = %v, want ErrInvalidSecret", err)
	}
}

func TestNewSecret(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for range 100 {
		s := webhook.NewSecret()
		if !strings.HasPrefix(s, webhook.SecretPrefix) {
			t.Fatalf("%q lacks the whsec_ prefix", s)
		}
		key, err := webhook.ParseSecret(s)
		if err != nil {
			t.Fatal(err)
		}
		if len(key) < 24 || len(key) > 64 {
			t.Fatalf("key of %d bytes, want 24 to 64", len(key))
		}
		if seen[s] {
			t.Fatal("NewSecret repeated a secret")
		}
		seen[s] = true
	}
}

// Our signatures verify with the reference library, and its with ours.
func TestReferenceLibraryRoundTrip(t *testing.T) {
	t.Parallel()
	for range 20 {
		secret := webhook.NewSecret()
		ref, err := standardwebhooks.NewWebhook(secret)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := webhook.NewEvent("acct", "42", []byte(`{"email":"a@b.example","status":"LIKELY"}`), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		now := time.Now()

		h := http.Header{}
		must(webhook.NewSigner(secret)).SetHeaders(h, ev.ID, now, ev.Payload)
		if err := ref.Verify(ev.Payload, h); err != nil {
			t.Fatalf("reference library rejects our signature: %v", err)
		}

		sig, err := ref.Sign(ev.ID, now, ev.Payload)
		if err != nil {
			t.Fatal(err)
		}
		h2 := http.Header{}
		h2.Set(webhook.HeaderID, ev.ID)
		h2.Set(webhook.HeaderTimestamp, strconv.FormatInt(now.Unix(), 10))
		h2.Set(webhook.HeaderSignature, sig)
		if err := webhook.Verify(secret, h2, ev.Payload); err != nil {
			t.Fatalf("we reject the reference library's signature: %v", err)
		}
		if sig != h.Get(webhook.HeaderSignature) {
			t.Fatalf("signatures differ: ours %q, reference %q", h.Get(webhook.HeaderSignature), sig)
		}
	}
	// Several signatures while rotating: the reference library accepts
	// the header when its secret signed any of them.
	oldS, newS := webhook.NewSecret(), webhook.NewSecret()
	h := http.Header{}
	body := []byte(`{}`)
	must(webhook.NewSigner(newS, oldS)).SetHeaders(h, "msg_rot", time.Now(), body)
	for _, s := range []string{oldS, newS} {
		if err := must(standardwebhooks.NewWebhook(s)).Verify(body, h); err != nil {
			t.Errorf("reference library with one rotating secret: %v", err)
		}
	}
}

func FuzzVerify(f *testing.F) {
	f.Add(vecID, strconv.Itoa(vecTimestamp), vecSignature, vecPayload)
	f.Add("", "", "", "")
	f.Add("x", "-1", "v1,", "{}")
	f.Add("x", "99999999999999999999", "v1,a v1,b", "")
	f.Fuzz(func(t *testing.T, id, ts, sig, body string) {
		h := http.Header{}
		h.Set(webhook.HeaderID, id)
		h.Set(webhook.HeaderTimestamp, ts)
		h.Set(webhook.HeaderSignature, sig)
		err := vecOptions().Verify(vecSecret, h, []byte(body))
		if err == nil && (sig != vecSignature && !strings.Contains(sig, vecSignature[3:])) {
			t.Fatalf("accepted a signature that is not the vector's: %q", sig)
		}
	})
}

func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}
