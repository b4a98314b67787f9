package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/store"
)

func TestAccountGrantUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{
		{"account", "grant", "-email", "a@b.c", "-credits", "5", "-reason", "x"},
		{"account", "grant", "-email", "a@b.c", "-credits", "5", "-reason", "x", "-store", "memory"},
		{"account", "grant", "-email", "a@b.c", "-credits", "0", "-reason", "x", "-store", "redis://127.0.0.1:1/0"},
		{"account", "grant", "-email", "a@b.c", "-credits", "-5", "-reason", "x", "-store", "redis://127.0.0.1:1/0"},
		{"account", "grant", "-email", "a@b.c", "-credits", "1000000001", "-reason", "x", "-store", "redis://127.0.0.1:1/0"},
		{"account", "grant", "-email", "a@b.c", "-credits", "five", "-reason", "x", "-store", "redis://127.0.0.1:1/0"},
		{"account", "grant", "-email", "a@b.c", "-credits", "5", "-store", "redis://127.0.0.1:1/0"},
		{"account", "grant", "-credits", "5", "-reason", "x", "-store", "redis://127.0.0.1:1/0"},
		{"account", "grant", "-email", "a@b.c", "-credits", "5", "-reason", "x", "-store", "redis://127.0.0.1:1/0", "extra"},
		{"account", "show", "-store", "redis://127.0.0.1:1/0"},
		{"account", "show", "-email", "a@b.c", "-store", "memory"},
		{"-admin-token", "too-short"},
		{"-admin-token", strings.Repeat("t", 40) + " spaced"},
		{"-billing-url", "javascript:alert(1)"},
		{"-billing-url", "/buy"},
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

// An operator grants credits from the command line and through the
// operator API of either of two instances on one store; each grant is one
// ledger entry the customer sees, a payment's key credits once.
func TestAccountGrant(t *testing.T) {
	for _, st := range stores()[1:] {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			url := st.fresh(t)
			ctx := context.Background()
			env := func(string) string { return "" }
			run := func(args ...string) (string, error) {
				var out strings.Builder
				err := runEnv(ctx, append([]string{"account"}, args...), env, &out, io.Discard)
				return out.String(), err
			}
			out, err := run("create", "-email", "buyer@example.com", "-store", url)
			if err != nil {
				t.Fatal(err)
			}
			var created struct {
				APIKey string `json:"api_key"`
			}
			if err := json.Unmarshal([]byte(out), &created); err != nil || store.CheckSecret(created.APIKey) != nil {
				t.Fatalf("account create printed %q (%v)", out, err)
			}

			if _, err := run("grant", "-email", "nobody@example.com", "-credits", "5", "-reason", "x", "-store", url); err == nil || errors.Is(err, errUsage) {
				t.Fatalf("grant to nobody: %v", err)
			}
			if _, err := run("grant", "-email", "buyer@example.com", "-credits", "5", "-reason", "line\nbreak", "-store", url); !errors.Is(err, errUsage) {
				t.Fatalf("a reason with a newline: %v", err)
			}
			out, err = run("grant", "-email", "buyer@example.com", "-credits", "5000", "-reason", "invoice 2026-0042", "-key", "pay_1", "-store", url)
			if err != nil {
				t.Fatal(err)
			}
			var g struct {
				Entry struct {
					ID        string
					Delta     int64
					Reason    string
					Reference string
				}
				Replayed bool
				Balance  int64
			}
			if err := json.Unmarshal([]byte(out), &g); err != nil || g.Balance != 5300 || g.Replayed || g.Entry.Reason != "grant" || g.Entry.Reference != "invoice 2026-0042" {
				t.Fatalf("grant printed %s (%v)", out, err)
			}
			out, err = run("grant", "-email", "buyer@example.com", "-credits", "5000", "-reason", "invoice 2026-0042", "-key", "pay_1", "-store", url)
			if err != nil || !strings.Contains(out, `"replayed":true`) || !strings.Contains(out, `"balance":5300`) {
				t.Fatalf("the repeated grant: %s %v", out, err)
			}

			// Two instances with the operator API; a payment delivered to both.
			const token = "an-operator-token-of-forty-characters-00"
			dnsSrv := dnstest.Start(t, zone(), nil)
			args := []string{"-store", url, "-dns", dnsSrv.Addr(), "-workers", "0", "-admin-token", token}
			a, b := start(t, args...), start(t, args...)
			for i, in := range []*instance{a, b, a, b} {
				req, _ := http.NewRequest("POST", in.base+"/api/v1/admin/accounts/buyer@example.com/grants", strings.NewReader(`{"credits":700,"reason":"order 9"}`))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Idempotency-Key", "order-9")
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if want := map[bool]int{true: 201, false: 200}[i == 0]; resp.StatusCode != want {
					t.Fatalf("grant %d on %s: %d, want %d", i, in.base, resp.StatusCode, want)
				}
			}
			req, _ := http.NewRequest("GET", b.base+"/api/v1/admin/accounts/buyer@example.com", nil)
			req.Header.Set("Authorization", "Bearer "+token[:len(token)-1]+"1")
			if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != 401 {
				t.Fatalf("a wrong token: %v %v", resp, err)
			}
			for _, in := range []*instance{a, b} {
				resp, m := client{t, in.base, created.APIKey}.do("GET", "/api/v1/account", nil)
				if resp.StatusCode != 200 || m["balance"] != float64(6000) {
					t.Errorf("account on %s: %d %v", in.base, resp.StatusCode, m)
				}
			}
			a.stop()
			b.stop()

			out, err = run("show", "-email", "buyer@example.com", "-store", url)
			if err != nil {
				t.Fatal(err)
			}
			var s struct {
				Balance int64
				Credits struct{ Signup, Granted, Charged, Refunded int64 }
				Recent  []struct{ Reason, Reference string }
			}
			if err := json.Unmarshal([]byte(out), &s); err != nil || s.Balance != 6000 || s.Credits.Signup != 300 || s.Credits.Granted != 5700 || len(s.Recent) != 3 ||
				s.Recent[0].Reference != "order 9" || s.Recent[1].Reference != "invoice 2026-0042" || s.Recent[2].Reason != "signup" {
				t.Fatalf("show printed %s (%v)", out, err)
			}
		})
	}
}
