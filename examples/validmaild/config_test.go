package main

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/store/ratelimit"
)

// testKey is a well-formed API key secret.
const testKey = "vm_live_0123456789abcdefghijABCDEFGHIJ0123456789abc"

func TestParseServeConfig(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		args    []string
		env     map[string]string
		check   func(config) bool
		wantErr bool
	}{
		{"defaults", nil, nil, func(c config) bool {
			return c.Addr == ":8080" && c.Store == "memory" && c.Workers == 8 && c.DNS == nil && c.LogLevel == slog.LevelInfo && !c.Metrics
		}, false},
		{"flags", []string{"-addr", "127.0.0.1:9", "-store", "redis://x", "-dns", "1.1.1.1:53, 9.9.9.9:53", "-workers", "0", "-log-level", "debug", "-metrics"}, nil, func(c config) bool {
			return c.Addr == "127.0.0.1:9" && c.Store == "redis://x" && slices.Equal(c.DNS, []string{"1.1.1.1:53", "9.9.9.9:53"}) && c.Workers == 0 && c.LogLevel == slog.LevelDebug && c.Metrics
		}, false},
		{"env", nil, map[string]string{"VALIDMAIL_STORE": "postgres://db", "VALIDMAIL_WORKERS": "3", "VALIDMAIL_BOOTSTRAP_EMAIL": "a@b.c", "VALIDMAIL_BOOTSTRAP_KEY": testKey, "VALIDMAIL_METRICS": "true"}, func(c config) bool {
			return c.Store == "postgres://db" && c.Workers == 3 && c.BootstrapEmail == "a@b.c" && c.BootstrapKey == testKey && c.Metrics
		}, false},
		{"flag wins over env", []string{"-workers", "5", "-addr", ":1"}, map[string]string{"VALIDMAIL_WORKERS": "3", "VALIDMAIL_ADDR": ":2"}, func(c config) bool {
			return c.Workers == 5 && c.Addr == ":1"
		}, false},
		{"webhook allowlist", []string{"-webhook-allow", "127.0.0.1, 10.0.0.0/8,hooks.internal"}, nil, func(c config) bool {
			return slices.Equal(c.WebhookAllow, []string{"127.0.0.1", "10.0.0.0/8", "hooks.internal"})
		}, false},
		{"webhook allowlist from env", nil, map[string]string{"VALIDMAIL_WEBHOOK_ALLOW": "::1/128"}, func(c config) bool {
			return slices.Equal(c.WebhookAllow, []string{"::1/128"})
		}, false},
		{"no webhook allowlist", nil, nil, func(c config) bool { return c.WebhookAllow == nil }, false},
		{"private MX off by default", nil, nil, func(c config) bool { return !c.AllowPrivateMX }, false},
		{"SMTP probing off by default", nil, nil, func(c config) bool { return !c.SMTPProbe }, false},
		{"SMTP probing", []string{"-smtp-probe", "-smtp-helo", "probe.example.org", "-smtp-from", "bounces@example.org", "-smtp-port", "2525", "-smtp-timeout", "3s"}, nil, func(c config) bool {
			return c.SMTPProbe && c.SMTP.HELO == "probe.example.org" && c.SMTP.MailFrom == "bounces@example.org" && c.SMTP.Port == 2525 && c.SMTP.Timeout == 3*time.Second
		}, false},
		{"SMTP probing from env", nil, map[string]string{"VALIDMAIL_SMTP_PROBE": "true", "VALIDMAIL_SMTP_HELO": "probe.example.org", "VALIDMAIL_SMTP_FROM": "b@example.org"}, func(c config) bool {
			return c.SMTPProbe && c.SMTP.HELO == "probe.example.org"
		}, false},
		{"SMTP probing without a HELO name", []string{"-smtp-probe", "-smtp-from", "bounces@example.org"}, nil, nil, true},
		{"SMTP probing without a sender", []string{"-smtp-probe", "-smtp-helo", "probe.example.org"}, nil, nil, true},
		{"private MX", []string{"-allow-private-mx"}, nil, func(c config) bool { return c.AllowPrivateMX }, false},
		{"private MX from env", nil, map[string]string{"VALIDMAIL_ALLOW_PRIVATE_MX": "true"}, func(c config) bool { return c.AllowPrivateMX }, false},
		{"bootstrap credits", []string{"-bootstrap-credits", "5000"}, nil, func(c config) bool { return c.BootstrapCredits == 5000 }, false},
		{"default rate limit", nil, nil, func(c config) bool { return c.RateLimit == ratelimit.Limit{} }, false},
		{"rate limit", []string{"-rate-limit", "0.5", "-rate-burst", "3"}, nil, func(c config) bool {
			return c.RateLimit == ratelimit.Limit{PerSecond: 0.5, Burst: 3}
		}, false},
		{"rate limit from env", nil, map[string]string{"VALIDMAIL_RATE_LIMIT": "20", "VALIDMAIL_RATE_BURST": "40"}, func(c config) bool {
			return c.RateLimit == ratelimit.Limit{PerSecond: 20, Burst: 40}
		}, false},
		{"burst alone", []string{"-rate-burst", "7"}, nil, func(c config) bool {
			return c.RateLimit == ratelimit.Limit{PerSecond: httpapi.DefaultRatePerSecond, Burst: 7}
		}, false},
		{"rate limit off", []string{"-rate-limit", "-1"}, nil, func(c config) bool { return c.RateLimit.Unlimited() }, false},
		{"bad webhook allowlist", []string{"-webhook-allow", "10.0.0.0/99"}, nil, nil, true},
		{"nameserver that is neither host:port nor an IP", []string{"-dns", "nonsense"}, nil, nil, true},
		{"nameserver with a bad port", []string{"-dns", "127.0.0.1:99999"}, nil, nil, true},
		{"nameservers as IPs and host:port", []string{"-dns", "9.9.9.9, [2620:fe::fe]:53, dns.example:5353, ::1"}, nil, func(c config) bool { return len(c.DNS) == 4 }, false},
		{"negative burst", []string{"-rate-burst", "-1"}, nil, nil, true},
		{"infinite rate", []string{"-rate-limit", "+Inf"}, nil, nil, true},
		{"negative bootstrap credits", []string{"-bootstrap-credits", "-5"}, nil, nil, true},
		{"bad env value", nil, map[string]string{"VALIDMAIL_WORKERS": "many"}, nil, true},
		{"bad log level", []string{"-log-level", "loud"}, nil, nil, true},
		{"negative workers", []string{"-workers", "-1"}, nil, nil, true},
		{"key without email", []string{"-bootstrap-key", testKey}, nil, nil, true},
		{"malformed key", []string{"-bootstrap-email", "a@b.c", "-bootstrap-key", "vm_live_x"}, nil, nil, true},
		{"no SMTP relay by default", nil, nil, func(c config) bool { return c.Relay.Addr == "" }, false},
		{"SMTP relay", []string{"-smtp-relay", "127.0.0.1:2525", "-mail-from", "validmail <no-reply@example.com>", "-public-url", "https://vm.example.com"}, nil, func(c config) bool {
			return c.Relay.Addr == "127.0.0.1:2525" && c.Relay.From == "validmail <no-reply@example.com>" && c.PublicURL == "https://vm.example.com"
		}, false},
		{"SMTP relay from env", nil, map[string]string{"VALIDMAIL_SMTP_RELAY": "smtp.example.com:587", "VALIDMAIL_MAIL_FROM": "no-reply@example.com",
			"VALIDMAIL_PUBLIC_URL": "https://vm.example.com/", "VALIDMAIL_SMTP_RELAY_USER": "vm", "VALIDMAIL_SMTP_RELAY_PASSWORD": "secret"}, func(c config) bool {
			return c.Relay.Addr == "smtp.example.com:587" && c.Relay.Username == "vm" && c.Relay.Password == "secret"
		}, false},
		{"SMTP relay without a sender", []string{"-smtp-relay", "127.0.0.1:2525", "-public-url", "https://vm.example.com"}, nil, nil, true},
		{"SMTP relay without a port", []string{"-smtp-relay", "smtp.example.com", "-mail-from", "a@example.com", "-public-url", "https://vm.example.com"}, nil, nil, true},
		{"SMTP relay without a public URL", []string{"-smtp-relay", "127.0.0.1:2525", "-mail-from", "a@example.com"}, nil, nil, true},
		{"public URL with a path", []string{"-smtp-relay", "127.0.0.1:2525", "-mail-from", "a@example.com", "-public-url", "https://vm.example.com/x"}, nil, nil, true},
		{"list limits by default", nil, nil, func(c config) bool {
			return c.ListUploads == 16 && c.ListUploadsPerNetwork == 4 && c.ListHealthyRate == 1<<20 && c.ListMaxDuration == 30*time.Minute && c.ListWait == 10*time.Minute
		}, false},
		{"list limits", []string{"-list-uploads", "32", "-list-uploads-per-network", "-1", "-list-healthy-rate", "512", "-list-max-duration", "20m", "-list-wait", "5m"}, nil, func(c config) bool {
			return c.ListUploads == 32 && c.ListUploadsPerNetwork == -1 && c.ListHealthyRate == 512<<10 && c.ListMaxDuration == 20*time.Minute && c.ListWait == 5*time.Minute
		}, false},
		{"list wait from env", nil, map[string]string{"VALIDMAIL_LIST_WAIT": "2m"}, func(c config) bool { return c.ListWait == 2*time.Minute }, false},
		{"no list uploads", []string{"-list-uploads", "0"}, nil, nil, true},
		{"no list wait", []string{"-list-wait", "0s"}, nil, nil, true},
		{"no Stripe by default", nil, nil, func(c config) bool { return c.Stripe.SecretKey == "" && c.Stripe.Packs == nil }, false},
		{"Stripe", []string{"-stripe-secret-key", "sk_test_1", "-stripe-webhook-secret", "whsec_1", "-public-url", "https://vm.example.com",
			"-stripe-api-url", "http://127.0.0.1:12111", "-credit-packs", "500:500:eur,5000:4000:eur"}, nil, func(c config) bool {
			return c.Stripe.SecretKey == "sk_test_1" && c.Stripe.WebhookSecret == "whsec_1" && c.Stripe.APIURL == "http://127.0.0.1:12111" &&
				len(c.Stripe.Packs) == 2 && c.Stripe.Packs[1] == billing.Pack{Credits: 5000, Price: 4000, Currency: "eur"}
		}, false},
		{"Stripe from env, default packs", nil, map[string]string{"VALIDMAIL_STRIPE_SECRET_KEY": "sk_test_1", "VALIDMAIL_STRIPE_WEBHOOK_SECRET": "whsec_1",
			"VALIDMAIL_PUBLIC_URL": "https://vm.example.com"}, func(c config) bool {
			return c.Stripe.APIURL == "https://api.stripe.com" && len(c.Stripe.Packs) == 3
		}, false},
		{"Stripe without a webhook secret", []string{"-stripe-secret-key", "sk_test_1", "-public-url", "https://vm.example.com"}, nil, nil, true},
		{"Stripe without a public URL", []string{"-stripe-secret-key", "sk_test_1", "-stripe-webhook-secret", "whsec_1"}, nil, nil, true},
		{"Stripe with bad packs", []string{"-stripe-secret-key", "sk_test_1", "-stripe-webhook-secret", "whsec_1", "-public-url", "https://vm.example.com", "-credit-packs", "10:0:usd"}, nil, nil, true},
		{"Stripe with a bad API URL", []string{"-stripe-secret-key", "sk_test_1", "-stripe-webhook-secret", "whsec_1", "-public-url", "https://vm.example.com", "-stripe-api-url", "stripe"}, nil, nil, true},
		{"webhook secret without a key", []string{"-stripe-webhook-secret", "whsec_1"}, nil, nil, true},
		{"stray argument", []string{"serve"}, nil, nil, true},
		{"unknown flag", []string{"-port", "1"}, nil, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, err := parseServeConfig(tc.args, func(k string) string { return tc.env[k] }, io.Discard)
			if tc.wantErr {
				if !errors.Is(err, errUsage) || exitCode(err) != 2 {
					t.Fatalf("err = %v, want a usage error", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tc.check(c) {
				t.Errorf("config = %+v", c)
			}
		})
	}
}

func TestEnvName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"store": "VALIDMAIL_STORE", "bootstrap-key": "VALIDMAIL_BOOTSTRAP_KEY", "log-level": "VALIDMAIL_LOG_LEVEL"} {
		if got := envName(in); got != want {
			t.Errorf("envName(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestBaseURL(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"[::]:8080":      "http://localhost:8080",
		"0.0.0.0:80":     "http://localhost:80",
		"127.0.0.1:9000": "http://127.0.0.1:9000",
		"[::1]:8080":     "http://[::1]:8080",
	} {
		if got := baseURL(in); got != want {
			t.Errorf("baseURL(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{
		{"-store", "mysql://db"},
		{"-store", "memory", "-dns", ":53"},
		{"account"},
		{"account", "delete"},
		{"account", "create", "-email", "a@b.c"},
		{"account", "create", "-email", "a@b.c", "-store", "memory"},
		{"account", "create", "-email", "not an email", "-store", "redis://127.0.0.1:1/0"},
		{"-dns", "nonsense"},
		{"-bootstrap-email", "a@b.c", "-bootstrap-key", "not-a-key"},
	} {
		var stdout strings.Builder
		err := runEnv(ctx, args, func(string) string { return "" }, &stdout, io.Discard)
		if !errors.Is(err, errUsage) {
			t.Errorf("run %q: err = %v, want a usage error", args, err)
		}
		if stdout.Len() > 0 {
			t.Errorf("run %q printed %q", args, stdout.String())
		}
	}
}

func TestInsecureCookiesOnlyOnLoopback(t *testing.T) {
	for addr, ok := range map[string]bool{"127.0.0.1:8080": true, "[::1]:8080": true, "localhost:0": true, ":8080": false, "0.0.0.0:8080": false, "10.0.0.5:80": false} {
		_, err := parseServeConfig([]string{"-addr", addr, "-dashboard-insecure-cookies"}, func(string) string { return "" }, io.Discard)
		if (err == nil) != ok {
			t.Errorf("-addr %s -dashboard-insecure-cookies: %v", addr, err)
		}
	}
	if _, err := parseServeConfig([]string{"-addr", ":8080", "-dashboard=false", "-dashboard-insecure-cookies"}, func(string) string { return "" }, io.Discard); err != nil {
		t.Errorf("without the dashboard the flag is moot: %v", err)
	}
}
