package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/store"
)

// runBinary runs the validmaild binary with args to its end and returns
// its stdout, its stderr and its exit status.
func runBinary(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envPrefix) })
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return stdout.String(), stderr.String(), 0
	case errors.As(err, &ee) && ctx.Err() == nil:
		return stdout.String(), stderr.String(), ee.ExitCode()
	}
	t.Fatalf("validmaild %q: %v\n%s", args, err, stderr.String())
	return "", "", 0
}

// logMessages returns the msg of every JSON record in logs.
func logMessages(logs string) []string {
	var out []string
	for line := range strings.Lines(logs) {
		var rec struct{ Msg string }
		if json.Unmarshal([]byte(line), &rec) == nil {
			out = append(out, rec.Msg)
		}
	}
	return out
}

// validmaild migrate applies an empty store's schema (PostgreSQL) or
// layout (Redis, declared new with -store-init), logging each step, and
// exits 0; a replica started with -skip-migrate refuses the store before
// and serves it after.
func TestMigrateCommand(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fresh func(*testing.T) string
		init  []string // migrate's flags for a new store
		steps []string // log messages migrate must write
	}{
		{"postgres", freshPostgres, nil, []string{"pgstore: migration applied", "pgstore: schema migrated", "store migrated"}},
		{"redis", emptyRedis, []string{"-store-init"}, []string{"redisstore: store initialised: marker written", "redisstore: layout stamped", "store migrated"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := tc.fresh(t)
			_, stderr, code := runBinary(t, "-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-workers", "0", "-skip-migrate", "-store", url)
			if code != 1 || !strings.Contains(stderr, "validmaild migrate") && !strings.Contains(stderr, "-store-init") {
				t.Fatalf("-skip-migrate on an unmigrated store: exit %d, want 1 saying what to run:\n%s", code, stderr)
			}
			if strings.Contains(stderr, `"msg":"listening"`) {
				t.Fatalf("-skip-migrate served an unmigrated store:\n%s", stderr)
			}
			if tc.init != nil {
				// An empty Redis prefix is new or lost: migrate needs
				// the operator's word.
				if _, stderr, code := runBinary(t, "migrate", "-store", url); code != 1 || !strings.Contains(stderr, "-store-init") {
					t.Fatalf("migrate of an empty Redis prefix without -store-init: exit %d, want 1:\n%s", code, stderr)
				}
			}
			_, stderr, code = runBinary(t, append([]string{"migrate", "-store", url}, tc.init...)...)
			if code != 0 {
				t.Fatalf("migrate: exit %d\n%s", code, stderr)
			}
			msgs := logMessages(stderr)
			for _, want := range tc.steps {
				if !slices.Contains(msgs, want) {
					t.Errorf("migrate logged no %q: %q", want, msgs)
				}
			}
			if tc.name == "postgres" {
				if n := strings.Count(stderr, "pgstore: migration applied"); n < 15 {
					t.Errorf("migrate logged %d migrations, want every one", n)
				}
			}
			// Again: nothing to do, still exit 0.
			_, stderr, code = runBinary(t, "migrate", "-store", url)
			if code != 0 || strings.Contains(stderr, "migration applied") || strings.Contains(stderr, "layout stamped") {
				t.Fatalf("migrate again: exit %d\n%s", code, stderr)
			}
			in := start(t, "-store", url, "-workers", "0", "-skip-migrate")
			resp, err := http.Get(in.base + "/readyz")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != 200 {
				t.Fatalf("/readyz of the replica with -skip-migrate: %d", resp.StatusCode)
			}
			in.stop()
		})
	}
}

// An operator issues a key with chosen permissions from the command
// line; a key with webhooks configures the account's endpoint, the
// account's first key (without webhooks) cannot.
func TestKeyCreate(t *testing.T) {
	for _, st := range stores()[1:3] {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			url := st.fresh(t)
			out, stderr, code := runBinary(t, "account", "create", "-email", "ops@example.com", "-store", url)
			if code != 0 {
				t.Fatalf("account create: exit %d\n%s", code, stderr)
			}
			var first struct {
				AccountID string `json:"account_id"`
				APIKey    string `json:"api_key"`
			}
			if err := json.Unmarshal([]byte(out), &first); err != nil {
				t.Fatalf("account create printed %q: %v", out, err)
			}
			out, stderr, code = runBinary(t, "key", "create", "-email", "ops@example.com", "-permissions", "validate,batch,webhooks", "-name", "hooks", "-store", url)
			if code != 0 {
				t.Fatalf("key create: exit %d\n%s", code, stderr)
			}
			var k struct {
				AccountID   string   `json:"account_id"`
				KeyID       string   `json:"key_id"`
				Permissions []string `json:"permissions"`
				APIKey      string   `json:"api_key"`
			}
			if err := json.Unmarshal([]byte(out), &k); err != nil || store.CheckSecret(k.APIKey) != nil || k.KeyID == "" {
				t.Fatalf("key create printed %q: %v", out, err)
			}
			if k.AccountID != first.AccountID || !slices.Equal(k.Permissions, []string{"validate", "batch", "webhooks"}) {
				t.Fatalf("key create made %+v, want the account's key with validate, batch, webhooks", k)
			}
			if _, stderr, code := runBinary(t, "key", "create", "-email", "nobody@example.com", "-permissions", "validate", "-store", url); code != 1 || !strings.Contains(stderr, "no account") {
				t.Fatalf("key create for no account: exit %d\n%s", code, stderr)
			}

			in := start(t, "-store", url, "-workers", "0")
			body := map[string]any{"url": "https://hooks.example.org/validmail"}
			if resp, m := (client{t, in.base, first.APIKey}).do("PUT", "/api/v1/webhook", body); resp.StatusCode != http.StatusForbidden {
				t.Fatalf("PUT /api/v1/webhook with a key without webhooks: %d %v, want 403", resp.StatusCode, m)
			}
			c := client{t, in.base, k.APIKey}
			if resp, m := c.do("PUT", "/api/v1/webhook", body); resp.StatusCode != http.StatusCreated {
				t.Fatalf("PUT /api/v1/webhook (a new endpoint): %d %v, want 201", resp.StatusCode, m)
			}
			if resp, m := c.do("PUT", "/api/v1/webhook", body); resp.StatusCode != http.StatusOK {
				t.Fatalf("PUT /api/v1/webhook (the endpoint again): %d %v, want 200", resp.StatusCode, m)
			}
			if resp, m := c.do("GET", "/api/v1/keys", nil); resp.StatusCode != http.StatusForbidden {
				t.Errorf("GET /api/v1/keys with a key without keys: %d %v, want 403", resp.StatusCode, m)
			}
			in.stop()
		})
	}
}

func TestKeyCreateUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, args := range [][]string{
		{"key"},
		{"key", "list"},
		{"key", "create", "-permissions", "validate", "-store", "redis://127.0.0.1:1/0"},
		{"key", "create", "-email", "a@b.c", "-store", "redis://127.0.0.1:1/0"},
		{"key", "create", "-email", "a@b.c", "-permissions", "validate"},
		{"key", "create", "-email", "a@b.c", "-permissions", "validate,admin", "-store", "redis://127.0.0.1:1/0"},
		{"key", "create", "-email", "a@b.c", "-permissions", "validate,validate", "-store", "redis://127.0.0.1:1/0"},
		{"key", "create", "-email", "a@b.c", "-permissions", "validate,", "-store", "redis://127.0.0.1:1/0"},
		{"key", "create", "-email", "a@b.c", "-permissions", "validate", "-name", strings.Repeat("n", 101), "-store", "redis://127.0.0.1:1/0"},
		{"key", "create", "-email", "a@b.c", "-permissions", "validate", "-store", "memory"},
		{"migrate"},
		{"migrate", "-store", "redis://127.0.0.1:1/0", "extra"},
		{"migrate", "-store", "memory"},
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

// A deployment that has served nothing yet exports, at zero, every
// series its dashboard's validation and webhook panels read.
func TestMetricsFromStart(t *testing.T) {
	t.Parallel()
	in := start(t, "-metrics", "-workers", "1")
	for _, series := range []string{
		`validmail_validations_total{status="LIKELY"}`,
		`validmail_validations_total{status="UNKNOWN"}`,
		`validmail_http_requests_total{code="202",route="POST /validate/async"}`,
		`validmail_webhook_deliveries_total{outcome="dead"}`,
		`validmail_webhook_attempts_total{result="error"}`,
		`validmail_credits_charged_total`,
		`validmail_job_credits_refunded_total`,
	} {
		if v := metric(t, in.metricsURL(), series); v != 0 {
			t.Errorf("%s = %v at start, want 0", series, v)
		}
	}
	in.stop()
}

// A rollback onto a store a newer release migrated is refused at start,
// exit status 1, saying what to do, and the store is left as it is.
func TestNewerStoreRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		fresh func(*testing.T) string
		stamp func(t *testing.T, url string) // as a newer release would
	}{
		{"postgres", freshPostgres, func(t *testing.T, url string) {
			if _, stderr, code := runBinary(t, "migrate", "-store", url); code != 0 {
				t.Fatalf("migrate: exit %d\n%s", code, stderr)
			}
			stampNewer(t, "postgres", url)
		}},
		{"redis", freshRedis, func(t *testing.T, url string) { stampNewer(t, "redis", url) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			url := tc.fresh(t)
			tc.stamp(t, url)
			for _, args := range [][]string{
				{"-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-workers", "0", "-store", url},
				{"-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-workers", "0", "-skip-migrate", "-store", url},
				{"migrate", "-store", url},
				{"account", "create", "-email", "late@example.com", "-store", url},
			} {
				_, stderr, code := runBinary(t, args...)
				if code != 1 {
					t.Fatalf("%q on a newer store: exit %d, want 1\n%s", args, code, stderr)
				}
				for _, want := range []string{"newer release", "restore the backup"} {
					if !strings.Contains(stderr, want) {
						t.Errorf("%q: the refusal does not say %q:\n%s", args, want, stderr)
					}
				}
			}
		})
	}
}

// An instance whose store does not answer yet waits for it, trying again,
// and serves once it answers; with no answer within -store-wait it exits 1.
func TestStoreWait(t *testing.T) {
	t.Parallel()
	url := freshRedis(t)
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	target := u.Host
	// A port nothing listens on yet.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().String()
	ln.Close()
	u.Host = port
	late := u.String()

	// One attempt may take seconds on a loaded machine (the client dials
	// again itself, five times): what counts is that a failure was
	// followed by another attempt, and the end. The wait leaves room for
	// several slow attempts.
	_, stderr, code := runBinary(t, "-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-workers", "0", "-store", late, "-store-wait", "15s")
	if code != 1 || !strings.Contains(stderr, "-store-wait 15s") || !strings.Contains(stderr, `"attempt":1`) {
		t.Fatalf("no store within -store-wait: exit %d, want 1 after retries:\n%s", code, stderr)
	}

	cmd := exec.Command(binary, "-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-workers", "0", "-store", late, "-store-wait", "2m")
	cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envPrefix) })
	var logs syncBuffer
	cmd.Stderr = &logs
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	waitLog := func(what string) {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for !strings.Contains(logs.String(), what) {
			select {
			case err := <-exited:
				t.Fatalf("validmaild exited (%v) before logging %q:\n%s", err, what, logs.String())
			case <-time.After(50 * time.Millisecond):
			}
			if time.Now().After(deadline) {
				t.Fatalf("no %q in a minute:\n%s", what, logs.String())
			}
		}
	}
	waitLog("the store does not answer yet")
	// The store comes up: a proxy to the real server on the awaited port.
	proxy, err := net.Listen("tcp", port)
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	go func() {
		for {
			c, err := proxy.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r, err := net.Dial("tcp", target)
				if err != nil {
					return
				}
				defer r.Close()
				go io.Copy(r, c)
				io.Copy(c, r)
			}()
		}
	}()
	waitLog(`"msg":"listening"`)
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// validmaild healthcheck, a container's own probe: 0 while the service
// answers 200, 1 when it answers otherwise or not at all.
func TestHealthcheck(t *testing.T) {
	t.Parallel()
	in := start(t, "-workers", "0")
	addr := strings.TrimPrefix(in.base, "http://")
	for _, path := range []string{"/healthz", "/readyz"} {
		if out, stderr, code := runBinary(t, "healthcheck", "-addr", addr, "-path", path); code != 0 || !strings.HasPrefix(out, path+": ") {
			t.Fatalf("healthcheck %s of a serving instance: exit %d, %q\n%s", path, code, out, stderr)
		}
	}
	if _, stderr, code := runBinary(t, "healthcheck", "-addr", addr, "-path", "/nothing-here"); code != 1 || !strings.Contains(stderr, "404") {
		t.Fatalf("healthcheck of a path answering 404: exit %d\n%s", code, stderr)
	}
	in.stop()
	if _, stderr, code := runBinary(t, "healthcheck", "-addr", addr); code != 1 {
		t.Fatalf("healthcheck of a stopped instance: exit %d\n%s", code, stderr)
	}
	if _, _, code := runBinary(t, "healthcheck", "-path", "readyz"); code != 2 {
		t.Fatalf("healthcheck with a path not starting with /: exit %d, want 2", code)
	}
}

// stampNewer stamps the store at url (of kind postgres or redis) as a
// newer release would.
func stampNewer(t *testing.T, kind, url string) {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	switch kind {
	case "postgres":
		schema := u.Query().Get("schema")
		q := u.Query()
		q.Del("schema")
		u.RawQuery = q.Encode()
		conn, err := pgx.Connect(t.Context(), u.String())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(context.Background())
		if _, err := conn.Exec(t.Context(), "INSERT INTO "+schema+".schema_migrations (version, name) VALUES (9999, '9999_future.sql')"); err != nil {
			t.Fatal(err)
		}
	case "redis":
		c, prefix := redisTarget(t, url)
		if err := c.Set(t.Context(), "{"+prefix+"}layout", 3, 0).Err(); err != nil {
			t.Fatal(err)
		}
	default:
		t.Fatalf("no store kind %q", kind)
	}
}
