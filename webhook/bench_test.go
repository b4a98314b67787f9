package webhook_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/validmail/validmail/webhook"
)

func BenchmarkSign(b *testing.B) {
	s, _ := webhook.NewSigner(webhook.NewSecret())
	body := make([]byte, 1024)
	now := time.Now()
	b.ReportAllocs()
	for b.Loop() {
		_ = s.Sign("msg_bench", now, body)
	}
}

func BenchmarkVerify(b *testing.B) {
	secret := webhook.NewSecret()
	s, _ := webhook.NewSigner(secret)
	body := make([]byte, 1024)
	h := http.Header{}
	s.SetHeaders(h, "msg_bench", time.Now(), body)
	b.ReportAllocs()
	for b.Loop() {
		if err := webhook.Verify(secret, h, body); err != nil {
			b.Fatal(err)
		}
	}
}
