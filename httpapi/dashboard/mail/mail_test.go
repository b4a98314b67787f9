package mail_test

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"log/slog"
	"math/big"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/httpapi/dashboard/mail/mailtest"
)

func TestMessageCheck(t *testing.T) {
	for _, tc := range []struct {
		name string
		m    mail.Message
		ok   bool
	}{
		{"plain", mail.Message{To: "jane@example.com", Subject: "Hello", Body: "x"}, true},
		{"utf-8 local part", mail.Message{To: "jöse@example.com", Subject: "Grüße", Body: "é"}, true},
		{"no recipient", mail.Message{Subject: "x"}, false},
		{"display name", mail.Message{To: "Jane <jane@example.com>"}, false},
		{"header in recipient", mail.Message{To: "jane@example.com\r\nBcc: eve@example.com"}, false},
		{"two recipients", mail.Message{To: "jane@example.com, eve@example.com"}, false},
		{"header in subject", mail.Message{To: "jane@example.com", Subject: "Hi\r\nBcc: eve@example.com"}, false},
		{"bare LF in subject", mail.Message{To: "jane@example.com", Subject: "Hi\nX: y"}, false},
		{"invalid UTF-8 subject", mail.Message{To: "jane@example.com", Subject: "\xff"}, false},
		{"invalid UTF-8 body", mail.Message{To: "jane@example.com", Body: "\xfe"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.m.Check()
			if tc.ok != (err == nil) || err != nil && !errors.Is(err, mail.ErrInvalidMessage) {
				t.Fatalf("Check: %v, want ok %v", err, tc.ok)
			}
		})
	}
}

func TestRelayDelivers(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t, nil)
	r, err := mail.NewRelay(mail.RelayConfig{Addr: srv.Addr, From: "Validmail <no-reply@validmail.test>"})
	if err != nil {
		t.Fatal(err)
	}
	body := "Hello Jöse,\n.\n..starts with dots\nfollow https://example.com/x?token=abc=def&y=1\n" + strings.Repeat("long ", 40) + "\n"
	if err := r.Send(context.Background(), mail.Message{To: "jöse@example.com", Subject: "Grüße — confirm", Body: body}); err != nil {
		t.Fatal(err)
	}
	msgs := srv.Messages()
	if len(msgs) != 1 {
		t.Fatalf("%d messages, want 1", len(msgs))
	}
	m := msgs[0]
	if m.From != "no-reply@validmail.test" || len(m.To) != 1 || m.To[0] != "jöse@example.com" {
		t.Errorf("envelope %q → %q", m.From, m.To)
	}
	if got := m.Header("Subject"); got != "Grüße — confirm" {
		t.Errorf("subject %q", got)
	}
	if got := m.Header("From"); !strings.Contains(got, "no-reply@validmail.test") {
		t.Errorf("From %q", got)
	}
	if got := m.Text(); got != body {
		t.Errorf("body %q, want %q", got, body)
	}
	if m.Header("Message-ID") == "" || m.Header("Date") == "" {
		t.Error("no Message-ID or Date")
	}
	for _, line := range bytes.Split(m.Data, []byte("\r\n")) {
		if len(line) > 78 {
			t.Errorf("a line of %d bytes: %q", len(line), line)
		}
	}
}

func TestRelayRefusesBadMessage(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t, nil)
	r, _ := mail.NewRelay(mail.RelayConfig{Addr: srv.Addr, From: "no-reply@validmail.test"})
	err := r.Send(context.Background(), mail.Message{To: "jane@example.com\r\nBcc: eve@example.com", Subject: "x"})
	if !errors.Is(err, mail.ErrInvalidMessage) || len(srv.Messages()) != 0 {
		t.Fatalf("Send: %v, %d messages", err, len(srv.Messages()))
	}
}

func TestRelayReportsRefusal(t *testing.T) {
	t.Parallel()
	srv := mailtest.Start(t, nil)
	srv.Refuse(errors.New("no thanks"))
	r, _ := mail.NewRelay(mail.RelayConfig{Addr: srv.Addr, From: "no-reply@validmail.test"})
	if err := r.Send(context.Background(), mail.Message{To: "jane@example.com", Subject: "x"}); err == nil {
		t.Fatal("a refused message reported sent")
	}
}

// selfSigned returns a server certificate for 127.0.0.1 and a pool that
// trusts it.
func selfSigned(t *testing.T) (tls.Certificate, *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "relay"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(time.Hour),
		IPAddresses:  []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, pool
}

func TestRelaySTARTTLS(t *testing.T) {
	t.Parallel()
	cert, pool := selfSigned(t)
	srv := mailtest.Start(t, &tls.Config{Certificates: []tls.Certificate{cert}})
	host, _, _ := net.SplitHostPort(srv.Addr)
	good, _ := mail.NewRelay(mail.RelayConfig{Addr: srv.Addr, From: "no-reply@validmail.test", TLS: &tls.Config{RootCAs: pool, ServerName: host}})
	if err := good.Send(context.Background(), mail.Message{To: "jane@example.com", Subject: "over TLS"}); err != nil {
		t.Fatalf("with a trusted certificate: %v", err)
	}
	// By default the certificate must verify: a self-signed one fails the
	// message, and it is not sent in clear instead.
	strict, _ := mail.NewRelay(mail.RelayConfig{Addr: srv.Addr, From: "no-reply@validmail.test"})
	if err := strict.Send(context.Background(), mail.Message{To: "eve@example.com", Subject: "x"}); err == nil {
		t.Fatal("an unverified certificate was accepted")
	}
	if n := len(srv.Messages()); n != 1 {
		t.Fatalf("%d messages, want only the one over verified TLS", n)
	}
}

// TestRelayTimesOut: a relay that accepts the connection and never
// answers ends with the context, not later.
func TestRelayTimesOut(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			defer c.Close()
		}
	}()
	r, _ := mail.NewRelay(mail.RelayConfig{Addr: ln.Addr().String(), From: "no-reply@validmail.test", Timeout: time.Hour})
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() { errc <- r.Send(ctx, mail.Message{To: "jane@example.com", Subject: "x"}) }()
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("Send after cancel: %v", err)
	}
}

func TestNewRelayConfig(t *testing.T) {
	for _, c := range []mail.RelayConfig{
		{Addr: "relay.example.com", From: "a@example.com"},
		{Addr: "relay.example.com:587", From: ""},
		{Addr: "relay.example.com:587", From: "not an address"},
	} {
		if _, err := mail.NewRelay(c); !errors.Is(err, mail.ErrRelayConfig) {
			t.Errorf("NewRelay(%+v): %v", c, err)
		}
	}
}

func TestLog(t *testing.T) {
	var buf bytes.Buffer
	l := mail.Log{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	if err := l.Send(context.Background(), mail.Message{To: "jane@example.com", Subject: "Confirm", Body: "https://x/confirm?token=abc"}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "jane@example.com") || !strings.Contains(buf.String(), "token=abc") {
		t.Fatalf("log: %s", buf.String())
	}
	if err := l.Send(context.Background(), mail.Message{To: "x\r\ny"}); !errors.Is(err, mail.ErrInvalidMessage) {
		t.Fatalf("a bad message: %v", err)
	}
}
