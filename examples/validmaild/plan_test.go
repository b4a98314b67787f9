package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// An operator puts an account on a plan from the command line: the plan
// is stored for every instance, and with -plans only a plan of the file
// is accepted.
func TestAccountSetPlan(t *testing.T) {
	file := filepath.Join(t.TempDir(), "plans.json")
	if err := os.WriteFile(file, []byte(`{"default":"free","plans":[{"name":"pro","rate_per_second":500}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	env := func(string) string { return "" }
	for _, args := range [][]string{
		{"account", "set-plan", "-email", "a@b.c", "-plan", "pro"},
		{"account", "set-plan", "-email", "a@b.c", "-plan", "p r o", "-store", "redis://127.0.0.1:1/0"},
		{"account", "set-plan", "-email", "a@b.c", "-plan", "gold", "-plans", file, "-store", "redis://127.0.0.1:1/0"},
		{"-plans", filepath.Join(t.TempDir(), "missing.json")},
		{"-plans", file, "-stripe-secret-key", "sk_test_1", "-stripe-webhook-secret", "whsec_1", "-public-url", "https://vm.example.com", "-credit-packs", "10:100:usd:gold"},
	} {
		if err := runEnv(ctx, args, env, io.Discard, io.Discard); !errors.Is(err, errUsage) {
			t.Errorf("run %q: err = %v, want a usage error", args, err)
		}
	}
	for _, st := range stores()[1:] {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			url := st.fresh(t)
			run := func(args ...string) (string, error) {
				var out strings.Builder
				err := runEnv(ctx, append([]string{"account"}, args...), env, &out, io.Discard)
				return out.String(), err
			}
			if _, err := run("create", "-email", "team@example.org", "-store", url); err != nil {
				t.Fatal(err)
			}
			out, err := run("set-plan", "-email", "team@example.org", "-plan", "pro", "-plans", file, "-store", url)
			var got struct{ Plan, Previous string }
			if err != nil || json.Unmarshal([]byte(out), &got) != nil || got.Plan != "pro" || got.Previous != "free" {
				t.Fatalf("set-plan: %v %q", err, out)
			}
			b, err := openShared(ctx, url)
			if err != nil {
				t.Fatal(err)
			}
			defer b.Close()
			a, err := b.Accounts.GetAccountByEmail(ctx, "team@example.org")
			if err != nil || a.Plan != "pro" {
				t.Fatalf("stored plan %q, %v", a.Plan, err)
			}
			if _, err := run("set-plan", "-email", "nobody@example.org", "-plan", "pro", "-store", url); err == nil {
				t.Fatal("set-plan of an unknown account succeeded")
			}
		})
	}
}
