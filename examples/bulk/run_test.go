package main

import (
	"bufio"
	"context"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
)

// genDomain matches the generated domains the test server answers for:
// dN.bulkmail.net has a mail server; every fifth is hosted by Google.
var genDomain = regexp.MustCompile(`^d(\d+)\.bulkmail\.net$`)

// testZone is the fixed part of the test DNS data.
func testZone() dnstest.Zone {
	return dnstest.Zone{
		"gmail.com":      {MX: []dnstest.MX{{Pref: 5, Host: "gmail-smtp-in.l.google.com"}}},
		"mailinator.com": {MX: []dnstest.MX{{Pref: 10, Host: "mail.mailinator.com"}}},
		"nomx.org":       {A: []string{"192.0.2.10"}},
		"broken.org":     {Rcode: dns.RcodeServerFailure},
		"intranet.org":   {MX: []dnstest.MX{{Pref: 10, Host: "mx.intranet.org", Addrs: []string{"127.0.0.1"}}}},
	}
}

// An MX host on loopback is no public mail server, unless
// -allow-private-mx says the deployment's servers are private.
func TestRunAllowPrivateMX(t *testing.T) {
	t.Parallel()
	srv := startDNS(t, 0)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{nil, "NO_MX_RECORDS"},
		{[]string{"-allow-private-mx"}, "LIKELY"},
	} {
		args := append([]string{"-dns", srv.Addr(), "-quiet", "-format", "jsonl"}, tc.args...)
		r := runCmd(t, t.Context(), "ann@intranet.org\n", args...)
		if r.code != 0 || !strings.Contains(r.stdout, `"status":"`+tc.want+`"`) {
			t.Errorf("%v: exit %d, %s%s; want %s", tc.args, r.code, r.stdout, r.stderr, tc.want)
		}
	}
}

// fallback answers the generated domains; any other name is NXDOMAIN.
func fallback(name string) (dnstest.Domain, bool) {
	m := genDomain.FindStringSubmatch(name)
	if m == nil {
		return dnstest.Domain{}, false
	}
	n, _ := strconv.Atoi(m[1])
	host := "mx1.bulkhost.net"
	if n%5 == 0 {
		host = "aspmx.l.google.com"
	}
	return dnstest.Domain{MX: []dnstest.MX{{Pref: 10, Host: host}}}, true
}

// startDNS starts a test DNS server with the given latency.
func startDNS(t testing.TB, latency time.Duration) *dnstest.Server {
	return dnstest.Start(t, testZone(), &dnstest.Options{Latency: latency, Fallback: fallback})
}

// cmdResult is what one run of the command produced.
type cmdResult struct {
	code           int
	stdout, stderr string
}

func runCmd(t *testing.T, ctx context.Context, stdin string, args ...string) cmdResult {
	t.Helper()
	var stdout, stderr strings.Builder
	code := run(ctx, args, strings.NewReader(stdin), &stdout, &stderr)
	return cmdResult{code, stdout.String(), stderr.String()}
}

// summaryRow is one "  STATUS  count  share" line of the summary.
var summaryRow = regexp.MustCompile(`(?m)^  ([A-Z_]+)\s+([\d,]+)\s+[\d.]+%$`)

// summaryCounts reads the status counts from the summary on stderr.
func summaryCounts(t testing.TB, stderr string) map[string]int {
	t.Helper()
	i := strings.LastIndex(stderr, "Summary")
	if i < 0 {
		t.Fatalf("no summary in stderr:\n%s", stderr)
	}
	counts := make(map[string]int)
	for _, m := range summaryRow.FindAllStringSubmatch(stderr[i:], -1) {
		n, err := strconv.Atoi(strings.ReplaceAll(m[2], ",", ""))
		if err != nil {
			t.Fatal(err)
		}
		counts[m[1]] = n
	}
	return counts
}

// statusColumn returns the status of every output row of a CSV output.
func statusColumn(t testing.TB, out string) (header []string, rows [][]string, statuses []string) {
	t.Helper()
	cr := csv.NewReader(strings.NewReader(out))
	cr.FieldsPerRecord = -1
	recs, err := cr.ReadAll()
	if err != nil {
		t.Fatalf("output is not CSV: %v\n%s", err, out)
	}
	if len(recs) == 0 {
		t.Fatal("no output")
	}
	header = recs[0]
	col := -1
	for i, h := range header {
		if h == "status" {
			col = i
		}
	}
	if col < 0 {
		t.Fatalf("no status column in %q", header)
	}
	for _, r := range recs[1:] {
		statuses = append(statuses, r[col])
	}
	return header, recs[1:], statuses
}

func TestRunStatuses(t *testing.T) {
	t.Parallel()
	srv := startDNS(t, 0)
	input := "name,email\n" +
		"Ann,ann@gmail.com\n" +
		"Dee,dee@mailinator.com\n" +
		"Nia,nia@nomx.org\n" +
		"Xan,xan@nx.bulkmail.net\n" +
		"Bo,bo@broken.org\n" +
		"Ex,ex@example.com\n" +
		"Bad,not an address\n" +
		"Gen,gen@d7.bulkmail.net\n" +
		"Quo,\"quo@gmail.com\n"
	want := []string{"LIKELY", "DISPOSABLE", "NO_MX_RECORDS", "INVALID_DOMAIN", "UNKNOWN", "INVALID", "INVALID_FORMAT", "LIKELY", "INVALID_FORMAT"}

	res := runCmd(t, t.Context(), input, "-dns", srv.Addr(), "-timeout", "500ms")
	if res.code != exitOK {
		t.Fatalf("exit code %d, stderr:\n%s", res.code, res.stderr)
	}
	header, rows, statuses := statusColumn(t, res.stdout)
	if want := "name,email,status,score,reason,did_you_mean,is_disposable,is_role_based,is_free,provider,domain_exists,mx_records,alias,canonical"; strings.Join(header, ",") != want {
		t.Errorf("header = %q, want %q", header, want)
	}
	if strings.Join(statuses, " ") != strings.Join(want, " ") {
		t.Errorf("statuses:\n got %v\nwant %v", statuses, want)
	}
	if n := len(rows[0]) - 12; rows[0][0] != "Ann" || rows[0][n+7] != "Google" || rows[0][n+2] != "valid" || rows[0][n+3] != "" {
		t.Errorf("first row = %q, want Ann's fields, provider Google, reason valid, no suggestion", rows[0])
	}
	if !strings.Contains(res.stderr, "line 10: quoted field never closed") {
		t.Errorf("stderr does not report line 10:\n%s", res.stderr)
	}
	counts := summaryCounts(t, res.stderr)
	if counts["LIKELY"] != 2 || counts["INVALID_FORMAT"] != 2 || counts["DISPOSABLE"] != 1 {
		t.Errorf("summary counts = %v", counts)
	}
}

func TestRunOnlyAndDedupe(t *testing.T) {
	t.Parallel()
	srv := startDNS(t, 0)
	input := "ann@gmail.com\nbad\nANN@gmail.com\nann@GMAIL.com\nbob@d1.bulkmail.net\nbad\nx@nx.bulkmail.net\n"
	tests := []struct {
		name       string
		args       []string
		emails     []string
		duplicates int
		counts     map[string]int
	}{
		{
			name:   "all rows",
			emails: []string{"ann@gmail.com", "bad", "ANN@gmail.com", "ann@GMAIL.com", "bob@d1.bulkmail.net", "bad", "x@nx.bulkmail.net"},
			counts: map[string]int{"LIKELY": 4, "INVALID_FORMAT": 2, "INVALID_DOMAIN": 1},
		},
		{
			name:   "-only LIKELY",
			args:   []string{"-only", "likely"},
			emails: []string{"ann@gmail.com", "ANN@gmail.com", "ann@GMAIL.com", "bob@d1.bulkmail.net"},
			counts: map[string]int{"LIKELY": 4, "INVALID_FORMAT": 2, "INVALID_DOMAIN": 1},
		},
		{
			name:   "-only two statuses",
			args:   []string{"-only", "INVALID_FORMAT, INVALID_DOMAIN"},
			emails: []string{"bad", "bad", "x@nx.bulkmail.net"},
			counts: map[string]int{"LIKELY": 4, "INVALID_FORMAT": 2, "INVALID_DOMAIN": 1},
		},
		{
			name:       "-dedupe keeps first occurrences",
			args:       []string{"-dedupe"},
			emails:     []string{"ann@gmail.com", "bad", "bob@d1.bulkmail.net", "x@nx.bulkmail.net"},
			duplicates: 3,
			counts:     map[string]int{"LIKELY": 2, "INVALID_FORMAT": 1, "INVALID_DOMAIN": 1},
		},
		{
			name:       "-dedupe with -only",
			args:       []string{"-dedupe", "-only", "LIKELY"},
			emails:     []string{"ann@gmail.com", "bob@d1.bulkmail.net"},
			duplicates: 3,
			counts:     map[string]int{"LIKELY": 2, "INVALID_FORMAT": 1, "INVALID_DOMAIN": 1},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"-dns", srv.Addr()}, tt.args...)
			res := runCmd(t, t.Context(), input, args...)
			if res.code != exitOK {
				t.Fatalf("exit code %d, stderr:\n%s", res.code, res.stderr)
			}
			_, rows, _ := statusColumn(t, res.stdout)
			var emails []string
			for _, r := range rows {
				emails = append(emails, r[0])
			}
			if strings.Join(emails, " ") != strings.Join(tt.emails, " ") {
				t.Errorf("rows:\n got %q\nwant %q", emails, tt.emails)
			}
			if got := summaryCounts(t, res.stderr); fmt.Sprint(got) != fmt.Sprint(tt.counts) {
				t.Errorf("summary counts = %v, want %v", got, tt.counts)
			}
			want := fmt.Sprintf("%d rows written, 0 malformed, %d duplicates dropped", len(tt.emails), tt.duplicates)
			if !strings.Contains(res.stderr, want) {
				t.Errorf("summary lacks %q:\n%s", want, res.stderr)
			}
		})
	}
}

func TestRunJSONLToFile(t *testing.T) {
	t.Parallel()
	srv := startDNS(t, 0)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.csv"), filepath.Join(dir, "out.jsonl")
	if err := os.WriteFile(in, []byte("\ufeffEmail;Name\r\nann+news@gmail.com;Ann\r\n\r\nbad;Bad\r\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := runCmd(t, t.Context(), "", "-dns", srv.Addr(), "-format", "jsonl", "-o", out, "-quiet", in)
	if res.code != exitOK || res.stdout != "" || res.stderr != "" {
		t.Fatalf("exit %d, stdout %q, stderr %q", res.code, res.stdout, res.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	type line struct {
		Line   int               `json:"line"`
		Row    map[string]string `json:"row"`
		Email  string            `json:"email"`
		Result emailcheck.Result `json:"result"`
	}
	var got []line
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	for sc.Scan() {
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, l)
	}
	if len(got) != 2 {
		t.Fatalf("got %d lines, want 2:\n%s", len(got), data)
	}
	first := got[0]
	if first.Line != 2 || first.Row["Name"] != "Ann" || first.Result.Confidence.Status != emailcheck.StatusLikely ||
		first.Result.Meta.Source != emailcheck.SourceAPI || first.Result.Confidence.CanonicalEmail == nil ||
		*first.Result.Confidence.CanonicalEmail != "ann@gmail.com" {
		t.Errorf("first line = %+v", first)
	}
	if got[1].Line != 4 || got[1].Email != "bad" || got[1].Result.Confidence.Status != emailcheck.StatusInvalidFormat {
		t.Errorf("second line = %+v", got[1])
	}
}

func TestRunExitCodes(t *testing.T) {
	t.Parallel()
	srv := startDNS(t, 0)
	dir := t.TempDir()
	in := filepath.Join(dir, "in.txt")
	if err := os.WriteFile(in, []byte("a@gmail.com\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		args   []string
		code   int
		stderr string
	}{
		{"help", []string{"-help"}, exitOK, "Usage: bulk"},
		{"unknown flag", []string{"-nope"}, exitError, "flag provided but not defined"},
		{"bad format", []string{"-format", "xml"}, exitError, `-format "xml"`},
		{"bad status", []string{"-only", "GOOD"}, exitError, `unknown status "GOOD"`},
		{"two files", []string{in, in}, exitError, "one input file"},
		{"missing file", []string{filepath.Join(dir, "nope.txt")}, exitError, "no such file"},
		{"output over input", []string{"-o", in, in}, exitError, "would overwrite the input"},
		{"no email column", []string{"-dns", srv.Addr()}, exitError, "cannot find the email column"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			res := runCmd(t, t.Context(), "name,age\nAnn,3\n", tt.args...)
			if res.code != tt.code || !strings.Contains(res.stderr, tt.stderr) {
				t.Errorf("exit %d, want %d; stderr should contain %q:\n%s", res.code, tt.code, tt.stderr, res.stderr)
			}
		})
	}
}

func TestRunInterrupted(t *testing.T) {
	t.Parallel()
	srv := startDNS(t, 100*time.Millisecond)
	var b strings.Builder
	const n = 2000
	for i := range n {
		fmt.Fprintf(&b, "u%d@d%d.bulkmail.net\n", i, i)
	}
	ctx, cancel := context.WithCancel(t.Context())
	// Interrupted once the run is under way (the nameserver has answered
	// 200 queries, so the first addresses are done), whatever the time.
	var canceledAt atomic.Pointer[time.Time]
	go func() {
		for ctx.Err() == nil && srv.Queries() < 200 {
			time.Sleep(5 * time.Millisecond)
		}
		now := time.Now()
		canceledAt.Store(&now)
		cancel()
	}()
	res := runCmd(t, ctx, b.String(), "-dns", srv.Addr(), "-concurrency", "20")
	// Stopping waits for no lookup to finish: the 2,000 lookups left at
	// 100 ms over 20 at once would take 10 s, so a stop that took that
	// long did not stop them.
	if at := canceledAt.Load(); at == nil {
		t.Fatal("the run ended before it was interrupted")
	} else if took := time.Since(*at); took > 10*time.Second {
		t.Errorf("stopping took %v", took)
	}
	if res.code != exitInterrupted {
		t.Fatalf("exit code %d, want %d; stderr:\n%s", res.code, exitInterrupted, res.stderr)
	}
	_, rows, statuses := statusColumn(t, res.stdout)
	if len(rows) == 0 || len(rows) >= n {
		t.Fatalf("wrote %d rows, want some but not all of %d", len(rows), n)
	}
	for i, r := range rows {
		if want := fmt.Sprintf("u%d@d%d.bulkmail.net", i, i); r[0] != want || statuses[i] != "LIKELY" {
			t.Fatalf("row %d = %q %s, want %q LIKELY (rows must be an in-order prefix)", i, r[0], statuses[i], want)
		}
	}
	if !strings.Contains(res.stderr, "Summary (interrupted") {
		t.Errorf("no interrupted summary:\n%s", res.stderr)
	}
	if got := summaryCounts(t, res.stderr); got["LIKELY"] != len(rows) {
		t.Errorf("summary counts %v, want LIKELY %d", got, len(rows))
	}
}

func TestProgressLines(t *testing.T) {
	t.Parallel()
	srv := startDNS(t, 30*time.Millisecond)
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	var in strings.Builder
	for i := range 300 {
		fmt.Fprintf(&in, "u%d@d%d.bulkmail.net\n", i, i)
	}
	opts, err := parseArgs([]string{"-concurrency", "10"}, &strings.Builder{})
	if err != nil {
		t.Fatal(err)
	}
	opts.progressEvery = 100 * time.Millisecond
	var stdout, stderr strings.Builder
	if code := execute(t.Context(), opts, local(v, opts), strings.NewReader(in.String()), &stdout, &stderr); code != exitOK {
		t.Fatalf("exit %d:\n%s", code, stderr.String())
	}
	if n := strings.Count(stderr.String(), "progress: "); n < 2 {
		t.Errorf("%d progress lines, want several:\n%s", n, stderr.String())
	}
	if !regexp.MustCompile(`(?m)^progress: [\d,]+ addresses, [\d,]+/s; LIKELY [\d,]+$`).MatchString(stderr.String()) {
		t.Errorf("no well-formed progress line:\n%s", stderr.String())
	}
}

// Probing needs a HELO name and a sender of the operator's.
func TestSMTPProbeFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"-smtp-probe"}, false},
		{[]string{"-smtp-probe", "-smtp-helo", "probe.example.org"}, false},
		{[]string{"-smtp-probe", "-smtp-from", "bounces@example.org"}, false},
		{[]string{"-smtp-probe", "-smtp-helo", "probe.example.org", "-smtp-from", "bounces@example.org", "-smtp-port", "2525"}, true},
		{[]string{"-smtp-helo", "ignored.example.org"}, true},
	} {
		o, err := parseArgs(tc.args, io.Discard)
		if (err == nil) != tc.ok {
			t.Errorf("%v: %v, want ok %v", tc.args, err, tc.ok)
		}
		if err == nil && o.smtpProbe && o.smtp.Port != 2525 {
			t.Errorf("%v: port %d", tc.args, o.smtp.Port)
		}
	}
	r := runCmd(t, t.Context(), "a@b.example\n", "-smtp-probe")
	if r.code == 0 || !strings.Contains(r.stderr, "-smtp-helo") {
		t.Errorf("-smtp-probe alone: exit %d, %s", r.code, r.stderr)
	}
}

// -api cleans the list through a remote deployment, with the same output.
func TestRunThroughAPI(t *testing.T) {
	t.Parallel()
	dns := startDNS(t, 0)
	svc, err := service.New(memstore.NewBackend(), &service.Config{Checks: &emailcheck.Config{Nameservers: []string{dns.Addr()}}})
	if err != nil {
		t.Fatal(err)
	}
	key := store.NewSecret()
	if _, _, err := service.Bootstrap(t.Context(), svc.Backend().Accounts, service.BootstrapParams{Email: "bulk@example.org", Key: key, Credits: 10_000}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); svc.Run(ctx) }()
	srv := httptest.NewServer(svc.Mux())
	defer func() { srv.Close(); cancel(); <-done }()

	input := "ann@gmail.com\nbad\nx@nx.bulkmail.net\nbob@d1.bulkmail.net\n"
	remote := runCmd(t, t.Context(), input, "-api", srv.URL, "-key", key, "-quiet")
	local := runCmd(t, t.Context(), input, "-dns", dns.Addr(), "-quiet")
	if remote.code != 0 || local.code != 0 {
		t.Fatalf("exit %d (%s), %d (%s)", remote.code, remote.stderr, local.code, local.stderr)
	}
	if remote.stdout != local.stdout {
		t.Fatalf("through the API:\n%s\nin-process:\n%s", remote.stdout, local.stdout)
	}
	if r := runCmd(t, t.Context(), input, "-api", srv.URL, "-key", store.NewSecret(), "-quiet"); r.code == 0 || !strings.Contains(r.stderr, "invalid_api_key") {
		t.Fatalf("an unknown key: exit %d, %s", r.code, r.stderr)
	}
}
