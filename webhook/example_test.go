package webhook_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"time"

	"github.com/validmail/validmail/webhook"
)

// A Go service receiving our events checks each request before trusting
// it. Here the request is built by hand with a signature from the Standard
// Webhooks specification's example.
func ExampleVerify() {
	secret := "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" // from the dashboard
	body := []byte(`{"test": 2432232314}`)
	header := http.Header{}
	header.Set("webhook-id", "msg_p5jXN8AQM9LWM0D4loKWxJek")
	header.Set("webhook-timestamp", "1614265330")
	header.Set("webhook-signature", "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=")

	// In a handler: err := webhook.Verify(secret, r.Header, body)
	opts := webhook.VerifyOptions{Now: func() time.Time { return time.Unix(1614265330, 0) }}
	fmt.Println(opts.Verify(secret, header, body))

	err := opts.Verify(secret, header, []byte(`{"test": 1}`))
	fmt.Println(errors.Is(err, webhook.ErrInvalidSignature))

	err = webhook.Verify(secret, header, body) // with today's clock, 2021 is too old
	fmt.Println(errors.Is(err, webhook.ErrTimestampTooOld))
	// Output:
	// <nil>
	// true
	// true
}

// While a secret rotates, messages carry one signature per secret, and a
// receiver holding either one accepts them.
func ExampleSigner() {
	oldSecret, newSecret := webhook.NewSecret(), webhook.NewSecret()
	signer, err := webhook.NewSigner(newSecret, oldSecret)
	if err != nil {
		panic(err)
	}
	body := []byte(`{"type":"webhook.test","timestamp":"2030-01-01T00:00:00.000Z","data":{}}`)
	h := http.Header{}
	signer.SetHeaders(h, webhook.NewEventID(), time.Now(), body)

	fmt.Println(webhook.Verify(oldSecret, h, body), webhook.Verify(newSecret, h, body))
	// Output: <nil> <nil>
}

func ExampleNewEvent() {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	ev, err := webhook.NewEvent("acct_1", "1001", []byte(`{"email":"ana@example.org","status":"LIKELY"}`), at)
	if err != nil {
		panic(err)
	}
	fmt.Println(ev.Type, ev.JobID, len(ev.ID) > len("msg_"))
	fmt.Println(string(ev.Payload))
	// Output:
	// validation.completed 1001 true
	// {"type":"validation.completed","timestamp":"2030-01-02T03:04:05.000Z","data":{"job_id":"1001","result":{"email":"ana@example.org","status":"LIKELY"}}}
}

func ExampleIsPublicAddr() {
	for _, a := range []string{"93.184.216.34", "10.0.0.1", "169.254.169.254", "::ffff:127.0.0.1", "fd00::1"} {
		fmt.Println(a, webhook.IsPublicAddr(mustAddr(a)))
	}
	// Output:
	// 93.184.216.34 true
	// 10.0.0.1 false
	// 169.254.169.254 false
	// ::ffff:127.0.0.1 false
	// fd00::1 false
}

func mustAddr(s string) netip.Addr { return netip.MustParseAddr(s) }
