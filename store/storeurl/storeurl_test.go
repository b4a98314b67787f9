package storeurl_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/store/storeurl"
)

func TestRedact(t *testing.T) {
	t.Parallel()
	for _, raw := range []string{
		"postgres://app:s3cr3t@db.internal:5432/vm?sslmode=require",
		"postgres://app@db.internal:5432/vm?password=s3cr3t&sslmode=require",
		"postgresql://db.internal/vm?user=app&password=s3cr3t",
		"postgres://db.internal/vm?sslpassword=s3cr3t&sslkey=s3cr3t",
		"redis://:s3cr3t@cache.internal:6379/0",
		"redis://default:s3cr3t@cache.internal:6379/0?prefix=vm",
		"rediss://cache.internal:6379/0?password=s3cr3t",
	} {
		got := storeurl.Redact(raw)
		if strings.Contains(got, "s3cr3t") {
			t.Errorf("Redact(%q) = %q: the password shows", raw, got)
		}
		if !strings.Contains(got, "internal") {
			t.Errorf("Redact(%q) = %q: the host is gone", raw, got)
		}
	}
	if got := storeurl.Redact("memory"); got != "memory" {
		t.Errorf("Redact(memory) = %q", got)
	}
}

// Connection errors name the server without the password, whatever form
// it was given in.
func TestOpenErrorsHidePasswords(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, raw := range []string{
		"postgres://app:s3cr3t@127.0.0.1:1/vm?connect_timeout=1",
		"postgres://app@127.0.0.1:1/vm?password=s3cr3t&connect_timeout=1",
		"postgres://app@127.0.0.1:1/vm?password=s3cr3t&pool_max_conns=nonsense",
		"redis://:s3cr3t@127.0.0.1:1/0?dial_timeout=1s",
		"redis://127.0.0.1:1/0?password=s3cr3t&dial_timeout=1s",
	} {
		_, err := storeurl.Open(ctx, raw, nil)
		if err == nil {
			t.Fatalf("Open(%q) succeeded", raw)
		}
		if strings.Contains(err.Error(), "s3cr3t") {
			t.Errorf("Open(%q): %v: the password shows", raw, err)
		}
	}
	if _, err := storeurl.Open(ctx, "mysql://x", nil); !errors.Is(err, storeurl.ErrBadURL) {
		t.Errorf("mysql://: %v, want ErrBadURL", err)
	}
}
