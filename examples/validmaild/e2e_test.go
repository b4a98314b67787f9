package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/miekg/dns"
	"github.com/redis/go-redis/v9"

	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/store"
)

// binary is the path of the validmaild binary built by TestMain.
var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "validmaild-e2e")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "validmaild")
	var buildFlags []string
	if raceEnabled {
		buildFlags = append(buildFlags, "-race")
	}
	build := exec.Command("go", append(append([]string{"build"}, buildFlags...), "-o", binary, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building validmaild:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// instance is one running validmaild process.
type instance struct {
	t    *testing.T
	cmd  *exec.Cmd
	base string // http://127.0.0.1:PORT
	// metrics is the base URL of /metrics when -metrics is given.
	metrics string

	mu   sync.Mutex
	logs []map[string]any // stderr, one JSON record a line
	raw  bytes.Buffer     // stderr as written
	out  bytes.Buffer     // stdout

	exited chan struct{}
	err    error // of Wait, after exited is closed
}

// start runs the binary with args (plus -addr on a free loopback port) and
// waits until it listens.
func start(t *testing.T, args ...string) *instance {
	t.Helper()
	return startBinary(t, binary, args...)
}

// startBinary is start with the validmaild binary at path bin.
func startBinary(t *testing.T, bin string, args ...string) *instance {
	t.Helper()
	in := &instance{t: t, exited: make(chan struct{})}
	in.cmd = exec.Command(bin, append([]string{"-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-log-level", "debug"}, args...)...)
	in.cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envPrefix) })
	in.cmd.Stdout = lockedWriter{&in.mu, &in.out}
	stderr, err := in.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := in.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var rec map[string]any
			in.mu.Lock()
			in.raw.Write(sc.Bytes())
			in.raw.WriteByte('\n')
			if json.Unmarshal(sc.Bytes(), &rec) == nil {
				in.logs = append(in.logs, rec)
			}
			in.mu.Unlock()
			if rec["msg"] == "metrics listening" {
				in.mu.Lock()
				in.metrics = "http://" + rec["addr"].(string)
				in.mu.Unlock()
			}
			if rec["msg"] == "listening" {
				listening <- rec["addr"].(string)
			}
		}
		in.err = in.cmd.Wait()
		close(in.exited)
	}()
	t.Cleanup(func() {
		select {
		case <-in.exited:
		default:
			in.cmd.Process.Kill()
			<-in.exited
		}
		if t.Failed() {
			t.Logf("validmaild %v stderr:\n%s", args, in.stderr())
		}
	})
	select {
	case addr := <-listening:
		in.base = "http://" + addr
	case <-in.exited:
		t.Fatalf("validmaild exited before listening: %v\n%s", in.err, in.stderr())
	case <-time.After(30 * time.Second):
		t.Fatalf("validmaild not listening after 30 s:\n%s", in.stderr())
	}
	return in
}

func (in *instance) stderr() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.raw.String()
}

func (in *instance) stdout() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.out.String()
}

// record returns the first log record with the message msg, or nil.
func (in *instance) record(msg string) map[string]any {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, r := range in.logs {
		if r["msg"] == msg {
			return r
		}
	}
	return nil
}

// stop sends SIGTERM and checks that the process exits 0 within a few
// seconds.
func (in *instance) stop() {
	in.t.Helper()
	if err := in.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		in.t.Fatal(err)
	}
	select {
	case <-in.exited:
	case <-time.After(10 * time.Second):
		in.t.Fatalf("validmaild still running 10 s after SIGTERM")
	}
	if in.err != nil {
		in.t.Fatalf("validmaild exit after SIGTERM: %v, want status 0", in.err)
	}
	if in.record("stopped") == nil {
		in.t.Errorf("no \"stopped\" record in the log")
	}
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// client talks to a running instance with one API key.
type client struct {
	t    *testing.T
	base string
	key  string
}

// do sends a request and decodes the JSON response into a map; it returns
// the response too (its body already read).
func (c client) do(method, path string, body any) (*http.Response, map[string]any) {
	c.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			c.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, c.base+path, rd)
	if err != nil {
		c.t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("x-api-key", c.key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		c.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		c.t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		c.t.Fatalf("%s %s: status %d, body not a JSON object: %v\n%s", method, path, resp.StatusCode, err, raw)
	}
	return resp, m
}

// zone is the DNS data behind every end-to-end test.
func zone() dnstest.Zone {
	return dnstest.Zone{
		"gmail.com":      {MX: []dnstest.MX{{Pref: 5, Host: "gmail-smtp-in.l.google.com"}}},
		"mailinator.com": {MX: []dnstest.MX{{Pref: 10, Host: "mail.mailinator.com"}}},
		"parked.io":      {A: []string{"192.0.2.10"}},
		"broken.io":      {Rcode: dns.RcodeServerFailure},
	}
}

// keys returns the sorted keys of m.
func keys(m map[string]any) []string { return slices.Sorted(maps.Keys(m)) }

func wantKeys(t *testing.T, what string, m any, want ...string) {
	t.Helper()
	mm, ok := m.(map[string]any)
	if !ok {
		t.Fatalf("%s: %T, want an object", what, m)
	}
	slices.Sort(want)
	if got := keys(mm); !slices.Equal(got, want) {
		t.Errorf("%s fields = %v, want %v", what, got, want)
	}
}

// checkResult checks the field set of a validation result and its source.
func checkResult(t *testing.T, res any, source string, withRequestID bool) {
	t.Helper()
	// The seed's fields, and ours added beside them (did_you_mean,
	// reason, provider.is_free).
	top := []string{"email", "validations", "confidence", "provider", "did_you_mean", "reason", "meta"}
	if withRequestID {
		top = append(top, "requestId")
	}
	wantKeys(t, "result", res, top...)
	m := res.(map[string]any)
	wantKeys(t, "validations", m["validations"], "syntax", "domain_exists", "mx_records", "is_disposable")
	wantKeys(t, "confidence", m["confidence"], "confidence_score", "status", "is_role_based", "alias_status", "canonical_email", "equivalent_domains")
	wantKeys(t, "provider", m["provider"], "name", "is_free")
	wantKeys(t, "meta", m["meta"], "latency_ms", "source")
	if got := m["meta"].(map[string]any)["source"]; got != source {
		t.Errorf("meta.source = %v, want %s", got, source)
	}
	if withRequestID {
		checkRequestID(t, m)
	}
}

func checkRequestID(t *testing.T, m map[string]any) {
	t.Helper()
	s, _ := m["requestId"].(string)
	if _, err := uuid.Parse(s); err != nil {
		t.Errorf("requestId %q is not a UUID", s)
	}
}

func status(m map[string]any) string {
	c, _ := m["confidence"].(map[string]any)
	s, _ := c["status"].(string)
	return s
}

// poll polls the job until it completes and returns the response body.
func (c client) poll(id string) map[string]any {
	c.t.Helper()
	// An address whose domain gets no DNS verdict (broken.io answers
	// SERVFAIL) is final only after its retries, 10 s and then 30 s
	// apart (jobs.DefaultUnknownBackoff).
	deadline := time.Now().Add(2 * time.Minute)
	for {
		resp, m := c.do("GET", "/validate/status/"+id, nil)
		if resp.StatusCode != http.StatusOK {
			c.t.Fatalf("status of job %s: %d %v", id, resp.StatusCode, m)
		}
		if m["state"] == "completed" {
			return m
		}
		if m["state"] != "active" || m["result"] != nil {
			c.t.Fatalf("job %s: state %v result %v, want active and null while not completed", id, m["state"], m["result"])
		}
		if time.Now().After(deadline) {
			c.t.Fatalf("job %s not completed after 2 minutes", id)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// scenario runs the newcomer's session against a running deployment:
// single validations, a batch polled to completion, the account and an
// error. submit and poll may be two instances of one deployment.
func scenario(t *testing.T, submit, poll client, email string) {
	// Single validation: 1 credit; an UNKNOWN result is refunded.
	resp, m := submit.do("GET", "/validate?email=jane.doe@gmail.com", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /validate: %d %v", resp.StatusCode, m)
	}
	checkResult(t, m, "api", true)
	if status(m) != "LIKELY" || m["email"] != "jane.doe@gmail.com" {
		t.Errorf("GET /validate: status %q email %v, want LIKELY jane.doe@gmail.com", status(m), m["email"])
	}
	if rid := resp.Header.Get("X-Request-Id"); rid != m["requestId"] {
		t.Errorf("X-Request-Id %q, body requestId %v", rid, m["requestId"])
	}
	_, m = submit.do("GET", "/validate?email=ops@broken.io", nil)
	if status(m) != "UNKNOWN" {
		t.Errorf("ops@broken.io: status %q, want UNKNOWN", status(m))
	}

	// Batch: one job per address, polled (perhaps on another instance)
	// until completed.
	batch := []string{"a@gmail.com", "b@broken.io", "c@parked.io", "d@mailinator.com", "not-an-address"}
	resp, m = submit.do("POST", "/validate/async", map[string]any{"emails": batch})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /validate/async: %d %v", resp.StatusCode, m)
	}
	wantKeys(t, "batch response", m, "message", "job_count", "job_ids", "status_url", "batch_id", "requestId")
	checkRequestID(t, m)
	if m["status_url"] != "/validate/status/{job_id}" || m["job_count"] != float64(len(batch)) {
		t.Errorf("batch response: status_url %v job_count %v", m["status_url"], m["job_count"])
	}
	ids, _ := m["job_ids"].([]any)
	if len(ids) != len(batch) {
		t.Fatalf("job_ids = %v, want %d", m["job_ids"], len(batch))
	}
	wantStatus := []string{"LIKELY", "UNKNOWN", "NO_MX_RECORDS", "DISPOSABLE", "INVALID_FORMAT"}
	for i, id := range ids {
		sid, ok := id.(string)
		if !ok {
			t.Fatalf("job id %v is %T, want a string", id, id)
		}
		job := poll.poll(sid)
		wantKeys(t, "job", job, "id", "state", "result", "requestId")
		checkRequestID(t, job)
		if job["id"] != sid {
			t.Errorf("job id %v, want %s", job["id"], sid)
		}
		res := job["result"].(map[string]any)
		checkResult(t, res, "api_async", false)
		if res["email"] != batch[i] || status(res) != wantStatus[i] {
			t.Errorf("job %s: %v %s, want %s %s", sid, res["email"], status(res), batch[i], wantStatus[i])
		}
	}

	// Account: 300 − 2 singles − 5 batch + 2 UNKNOWN refunds.
	resp, m = poll.do("GET", "/api/v1/account", nil)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/v1/account: %d %v", resp.StatusCode, m)
	}
	wantKeys(t, "account", m, "email", "balance", "plan", "created_at", "usage", "requestId")
	if want := float64(300 - 2 - len(batch) + 2); m["balance"] != want || m["email"] != email || m["plan"] != "free" {
		t.Errorf("account = %v, want balance %v email %s plan free", m, want, email)
	}
	// The month's usage: every validation by status (a batch's are counted
	// as its jobs complete, so wait for the last), credits charged and
	// refunded.
	counted := func(m map[string]any) float64 {
		var n float64
		for _, v := range m["usage"].(map[string]any)["validations"].(map[string]any) {
			n += v.(float64)
		}
		return n
	}
	for deadline := time.Now().Add(5 * time.Second); counted(m) < float64(2+len(batch)) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		_, m = poll.do("GET", "/api/v1/account", nil)
	}
	if u := m["usage"].(map[string]any); counted(m) != float64(2+len(batch)) || u["credits_charged"] != float64(2+len(batch)) || u["credits_refunded"] != 2.0 {
		t.Errorf("usage %v, want %d validations, %d credits charged, 2 refunded", u, 2+len(batch), 2+len(batch))
	}
	if ts, _ := m["created_at"].(string); !strings.HasSuffix(ts, "Z") || len(ts) != len("2006-01-02T15:04:05.000Z") {
		t.Errorf("created_at %q, want ISO 8601 UTC with milliseconds", ts)
	}

	// Errors are problem documents.
	for _, tc := range []struct {
		c      client
		path   string
		status int
		code   string
	}{
		{submit, "/validate", 400, "missing_email"},
		{client{t, submit.base, ""}, "/validate?email=a@gmail.com", 401, "missing_api_key"},
		{client{t, submit.base, store.NewSecret()}, "/validate?email=a@gmail.com", 401, "invalid_api_key"},
		{poll, "/validate/status/999999999", 404, "job_not_found"},
	} {
		resp, m := tc.c.do("GET", tc.path, nil)
		if resp.StatusCode != tc.status || m["code"] != tc.code || m["status"] != float64(tc.status) {
			t.Errorf("GET %s: %d %v, want %d %s", tc.path, resp.StatusCode, m, tc.status, tc.code)
		}
		if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/problem+json") {
			t.Errorf("GET %s: Content-Type %q, want application/problem+json", tc.path, ct)
		}
		checkRequestID(t, m)
	}
}

// TestEndToEnd runs the binary on each available store, talks to it over
// loopback HTTP and stops it with SIGTERM.
func TestEndToEnd(t *testing.T) {
	for _, st := range stores() {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			url := st.fresh(t)
			dnsSrv := dnstest.Start(t, zone(), nil)
			email, key := "e2e@example.com", store.NewSecret()
			in := start(t, "-store", url, "-dns", dnsSrv.Addr(), "-workers", "2",
				"-bootstrap-email", email, "-bootstrap-key", key, "-metrics")
			c := client{t, in.base, key}
			scenario(t, c, c, email)

			if resp, err := http.Get(in.base + "/metrics"); err != nil || resp.StatusCode != http.StatusNotFound {
				t.Errorf("/metrics on the API's listener: %v, %v; want 404", resp, err)
			}
			in.mu.Lock()
			metricsBase := in.metrics
			in.mu.Unlock()
			resp, err := http.Get(metricsBase + "/metrics")
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || !bytes.Contains(body, []byte("go_goroutines")) {
				t.Errorf("GET /metrics: %d, no go_goroutines", resp.StatusCode)
			}
			if strings.Contains(in.stderr(), key) || strings.Contains(in.stdout(), key) {
				t.Errorf("the bootstrap key appears in the output")
			}
			in.stop()
		})
	}
}

// TestDemoAccount: with no store flags the binary prints a working demo key
// and a curl command line.
func TestDemoAccount(t *testing.T) {
	t.Parallel()
	dnsSrv := dnstest.Start(t, zone(), nil)
	in := start(t, "-dns", dnsSrv.Addr(), "-workers", "0")
	// stdout is copied by its own goroutine; it may trail the log line
	// that said the server is listening.
	out := in.stdout()
	for deadline := time.Now().Add(5 * time.Second); !strings.Contains(out, "curl -H") && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
		out = in.stdout()
	}
	i := strings.Index(out, store.SecretPrefix)
	if i < 0 || !strings.Contains(out, "curl -H 'x-api-key: ") || !strings.Contains(out, in.base+"/validate?email=") {
		t.Fatalf("stdout has no key and curl line for %s:\n%s", in.base, out)
	}
	key := out[i : i+len(store.NewSecret())]
	c := client{t, in.base, key}
	resp, m := c.do("GET", "/api/v1/account", nil)
	if resp.StatusCode != 200 || m["email"] != demoEmail || m["balance"] != float64(300) {
		t.Errorf("demo account: %d %v", resp.StatusCode, m)
	}
	if strings.Contains(in.stderr(), key) {
		t.Errorf("the demo key appears in the log")
	}
	in.stop()
}

// TestSharedStore runs two instances on one PostgreSQL or Redis store:
// a batch submitted to one is polled from the other, both pools work the
// queue, and every job is completed once.
func TestSharedStore(t *testing.T) {
	for _, st := range stores()[1:] {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			url := st.fresh(t)
			// Each distinct domain costs a DNS round trip with latency, so
			// that one worker cannot finish the batch alone.
			zn := zone()
			dnsSrv := dnstest.Start(t, zn, &dnstest.Options{Fallback: func(name string) (dnstest.Domain, bool) {
				if strings.HasSuffix(name, ".shared.io") {
					return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: "mx.sharedhosting.net"}}, Latency: 40 * time.Millisecond}, true
				}
				return dnstest.Domain{}, false
			}})
			email, key := "shared@example.com", store.NewSecret()
			args := []string{"-store", url, "-dns", dnsSrv.Addr(), "-workers", "2",
				"-bootstrap-email", email, "-bootstrap-key", key}

			// Started together, both bootstrap the same account and key.
			var a, b *instance
			var wg sync.WaitGroup
			wg.Go(func() { a = start(t, args...) })
			wg.Go(func() { b = start(t, args...) })
			wg.Wait()
			if t.Failed() {
				t.FailNow()
			}
			ca, cb := client{t, a.base, key}, client{t, b.base, key}
			scenario(t, ca, cb, email)

			const n = 40
			batch := make([]string, n)
			for i := range batch {
				batch[i] = fmt.Sprintf("user%d@d%d.shared.io", i, i)
			}
			resp, m := ca.do("POST", "/validate/async", map[string]any{"emails": batch})
			if resp.StatusCode != http.StatusAccepted {
				t.Fatalf("POST /validate/async: %d %v", resp.StatusCode, m)
			}
			for _, id := range m["job_ids"].([]any) {
				if res := cb.poll(id.(string))["result"].(map[string]any); status(res) != "LIKELY" {
					t.Errorf("job %v: %s, want LIKELY", id, status(res))
				}
			}

			// An account created from the command line works on both.
			out, err := exec.Command(binary, "account", "create", "-email", "cli@example.com", "-store", url).Output()
			if err != nil {
				t.Fatalf("account create: %v", err)
			}
			var created struct {
				AccountID string `json:"account_id"`
				APIKey    string `json:"api_key"`
			}
			if err := json.Unmarshal(out, &created); err != nil || created.AccountID == "" || store.CheckSecret(created.APIKey) != nil {
				t.Fatalf("account create printed %q (%v)", out, err)
			}
			for _, in := range []*instance{a, b} {
				resp, m := client{t, in.base, created.APIKey}.do("GET", "/api/v1/account", nil)
				if resp.StatusCode != 200 || m["email"] != "cli@example.com" || m["balance"] != float64(300) {
					t.Errorf("account of the new key on %s: %d %v", in.base, resp.StatusCode, m)
				}
			}
			if err := exec.Command(binary, "account", "create", "-email", "cli@example.com", "-store", url).Run(); err == nil {
				t.Errorf("account create of a registered email succeeded")
			}

			// The operator sets its console password; it signs in on A and
			// the session works on B.
			setpw := exec.Command(binary, "account", "set-password", "-email", "cli@example.com", "-store", url)
			setpw.Stdin = strings.NewReader("an operator's passphrase\n")
			if out, err := setpw.CombinedOutput(); err != nil || !strings.Contains(string(out), "password set") {
				t.Fatalf("account set-password: %v %s", err, out)
			}
			noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			login, err := noFollow.PostForm(a.base+"/dashboard/login", neturl.Values{"email": {"cli@example.com"}, "password": {"an operator's passphrase"}})
			if err != nil {
				t.Fatal(err)
			}
			login.Body.Close()
			var session *http.Cookie
			for _, c := range login.Cookies() {
				if c.Name == "__Host-vm_session" && c.Secure && c.HttpOnly && c.Path == "/" {
					session = c
				}
			}
			if login.StatusCode != http.StatusSeeOther || session == nil {
				t.Fatalf("sign-in on A: %d, cookies %v", login.StatusCode, login.Cookies())
			}
			req, _ := http.NewRequest("GET", b.base+"/dashboard/", nil)
			req.Header.Set("Cookie", session.Name+"="+session.Value) // a browser sends a Secure cookie over TLS only
			over, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			page, _ := io.ReadAll(over.Body)
			over.Body.Close()
			if over.StatusCode != 200 || !strings.Contains(string(page), "cli@example.com") {
				t.Fatalf("the session on B: %d", over.StatusCode)
			}
			// A new password from the operator ends the account's sessions.
			setpw = exec.Command(binary, "account", "set-password", "-email", "cli@example.com", "-store", url)
			setpw.Stdin = strings.NewReader("another operator's passphrase\n")
			if out, err := setpw.CombinedOutput(); err != nil {
				t.Fatalf("account set-password again: %v %s", err, out)
			}
			req, _ = http.NewRequest("GET", b.base+"/dashboard/", nil)
			req.Header.Set("Cookie", session.Name+"="+session.Value)
			after, err := noFollow.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			after.Body.Close()
			if after.StatusCode != http.StatusSeeOther {
				t.Fatalf("the session after a new password: %d, want the sign-in page", after.StatusCode)
			}

			a.stop()
			b.stop()
			// 5 + 40 jobs in all; each completed by exactly one pool.
			done := func(in *instance) int {
				r := in.record("worker pool drained")
				if r == nil {
					t.Fatalf("no \"worker pool drained\" record")
				}
				return int(r["completed"].(float64))
			}
			da, db := done(a), done(b)
			t.Logf("jobs completed: %d by A, %d by B", da, db)
			if da+db != n+5 {
				t.Errorf("pools completed %d + %d jobs, want %d in all", da, db, n+5)
			}
			if da == 0 || db == 0 {
				t.Errorf("one pool completed no job (%d, %d): the queue is not shared", da, db)
			}
		})
	}
}

// TestBootstrapKeyRestart: restarting on a shared store with the same
// bootstrap flags keeps the account and key.
func TestBootstrapKeyRestart(t *testing.T) {
	for _, st := range stores()[1:] {
		t.Run(st.name, func(t *testing.T) {
			t.Parallel()
			url := st.fresh(t)
			key := store.NewSecret()
			args := []string{"-store", url, "-workers", "0", "-bootstrap-email", "boot@example.com", "-bootstrap-key", key}
			for range 2 {
				in := start(t, args...)
				resp, m := client{t, in.base, key}.do("GET", "/api/v1/account", nil)
				if resp.StatusCode != 200 || m["balance"] != float64(300) {
					t.Errorf("account: %d %v", resp.StatusCode, m)
				}
				in.stop()
			}
		})
	}
}

// metricsURL returns the base URL of /metrics.
func (in *instance) metricsURL() string {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.metrics
}

// TestDashboardSwitch: / leads to the console by default, and
// -dashboard=false serves the API alone.
func TestDashboardSwitch(t *testing.T) {
	t.Parallel()
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	get := func(url string) int {
		resp, err := noFollow.Get(url)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	on := start(t, "-store", "memory")
	if code := get(on.base + "/"); code != http.StatusFound {
		t.Errorf("GET / with the dashboard: %d", code)
	}
	for _, p := range []string{"/dashboard/signup", "/dashboard/login", "/demo"} {
		if code := get(on.base + p); code != 200 {
			t.Errorf("GET %s: %d", p, code)
		}
	}
	off := start(t, "-store", "memory", "-dashboard=false")
	for _, p := range []string{"/", "/dashboard/", "/dashboard/login", "/demo"} {
		if code := get(off.base + p); code != http.StatusNotFound {
			t.Errorf("GET %s with -dashboard=false: %d", p, code)
		}
	}
}

// TestPprof: -pprof serves profiles on its own address, not on the API's.
func TestPprof(t *testing.T) {
	t.Parallel()
	in := start(t, "-store", "memory", "-pprof", "127.0.0.1:0")
	addr, _ := in.record("pprof listening")["addr"].(string)
	if addr == "" {
		t.Fatal("no pprof listener logged")
	}
	resp, err := http.Get("http://" + addr + "/debug/pprof/goroutine?debug=1")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(body), "goroutine profile") {
		t.Fatalf("pprof: %d %.200s", resp.StatusCode, body)
	}
	if resp, err := http.Get(in.base + "/debug/pprof/"); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Fatalf("the API's listener serves pprof: %v %v", resp.StatusCode, err)
	}
}

// TestRedisRestartAfterDataLoss empties a running deployment's Redis keys,
// as a server restarting without persistence does: the running instance
// reports the loss, and a new instance started on the same prefix without
// -store-init refuses to start, saying what to do, instead of serving an
// empty store where the lost customers' keys would answer 401.
func TestRedisRestartAfterDataLoss(t *testing.T) {
	t.Parallel()
	url := freshRedis(t)
	key := store.NewSecret()
	in := start(t, "-store", url, "-workers", "0", "-bootstrap-email", "lost@example.com", "-bootstrap-key", key)
	if resp, m := (client{t, in.base, key}).do("GET", "/api/v1/account", nil); resp.StatusCode != 200 {
		t.Fatalf("account before the loss: %d %v", resp.StatusCode, m)
	}

	deleteRedisKeys(t, url)

	resp, err := http.Get(in.base + "/readyz")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "lost its data") {
		t.Fatalf("/readyz of the running instance after the loss: %d %q", resp.StatusCode, body)
	}

	for _, extra := range [][]string{nil, {"-bootstrap-email", "lost@example.com", "-bootstrap-key", key}} {
		cmd := exec.Command(binary, append([]string{"-addr", "127.0.0.1:0", "-metrics-addr", "127.0.0.1:0", "-store", url, "-workers", "0"}, extra...)...)
		cmd.Env = slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, envPrefix) })
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err = <-done:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
			<-done
			t.Fatalf("validmaild started on a store that lost its data:\n%s", stderr.String())
		}
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 {
			t.Fatalf("validmaild on a store that lost its data: %v, want exit status 1\n%s", err, stderr.String())
		}
		for _, want := range []string{"-store-init", "new deployment", "lost its data", "restore"} {
			if !strings.Contains(stderr.String(), want) {
				t.Errorf("the start-up error does not say %q:\n%s", want, stderr.String())
			}
		}
	}
	if n := countRedisKeys(t, url); n != 0 {
		t.Fatalf("the refused instances wrote %d keys", n)
	}

	// The operator restores nothing and says the store is new: the
	// instance starts, and a later start without -store-init too.
	for _, init := range []bool{true, false} {
		args := []string{"-store", url, "-workers", "0", "-bootstrap-email", "new@example.com"}
		if init {
			args = append(args, "-store-init")
		}
		next := start(t, args...)
		if init && next.record("redisstore: store initialised: marker written") == nil {
			t.Errorf("no record of the store's initialisation:\n%s", next.stderr())
		}
		next.stop()
	}
}

// redisTarget returns a client of the Redis server a redis:// store URL
// names and the URL's prefix.
func redisTarget(t *testing.T, rawURL string) (*redis.Client, string) {
	t.Helper()
	u, err := neturl.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	prefix := u.Query().Get("prefix")
	q := u.Query()
	q.Del("prefix")
	u.RawQuery = q.Encode()
	opts, err := redis.ParseURL(u.String())
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	return c, prefix
}

// redisKeys returns the keys of the store at rawURL.
func redisKeys(t *testing.T, rawURL string) (*redis.Client, []string) {
	t.Helper()
	c, prefix := redisTarget(t, rawURL)
	ctx := context.Background()
	var keys []string
	iter := c.Scan(ctx, 0, "{"+prefix+"[}:]*", 50000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	return c, keys
}

// deleteRedisKeys deletes every key of the store at rawURL.
func deleteRedisKeys(t *testing.T, rawURL string) {
	t.Helper()
	c, keys := redisKeys(t, rawURL)
	if len(keys) == 0 {
		t.Fatal("no keys to delete")
	}
	if err := c.Unlink(context.Background(), keys...).Err(); err != nil {
		t.Fatal(err)
	}
}

// countRedisKeys returns how many keys the store at rawURL has.
func countRedisKeys(t *testing.T, rawURL string) int {
	t.Helper()
	_, keys := redisKeys(t, rawURL)
	return len(keys)
}
