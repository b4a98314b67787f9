package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/store/redisstore"
)

// TestHugeLedger measures what an account with a long credit history
// costs to read: GET /api/v1/credits/history and the console's overview,
// with the latency of each and the server's resident memory before and
// after. It is a measurement, run only when VALIDMAIL_HUGE is set (to 1
// for a million entries, or to the number wanted):
//
//	VALIDMAIL_HUGE=1 VALIDMAIL_TEST_POSTGRES=… VALIDMAIL_TEST_REDIS=… \
//	  go test -run TestHugeLedger -v -timeout 30m ./examples/validmaild
//
// The entries are written straight into the store, a charge and its
// refund per request over the last weeks, as an account validating at
// its limit would have written them.
func TestHugeLedger(t *testing.T) {
	n := hugeEntries(t)
	for _, st := range stores()[1:] {
		t.Run(st.name, func(t *testing.T) {
			url := st.fresh(t)
			out, err := exec.Command(binary, "account", "create", "-email", "huge@example.com", "-store", url).Output()
			if err != nil {
				t.Fatalf("account create: %v", err)
			}
			var acct struct {
				AccountID string `json:"account_id"`
				APIKey    string `json:"api_key"`
			}
			if err := json.Unmarshal(out, &acct); err != nil {
				t.Fatal(err)
			}
			setpw := exec.Command(binary, "account", "set-password", "-email", "huge@example.com", "-store", url)
			setpw.Stdin = strings.NewReader("a long history's passphrase\n")
			if out, err := setpw.CombinedOutput(); err != nil {
				t.Fatalf("account set-password: %v %s", err, out)
			}
			began := time.Now()
			switch st.name {
			case "postgres":
				fillPostgres(t, url, acct.AccountID, n)
			case "redis":
				fillRedis(t, url, acct.AccountID, n)
			}
			t.Logf("%d entries written in %v", n, time.Since(began).Round(time.Millisecond))

			// Rate limits off: this measures what a read costs, not how
			// often one may be made.
			in := start(t, "-store", url, "-workers", "0", "-rate-limit", "-1")
			m := hugeMeter{t: t, in: in, key: acct.APIKey, cookie: signIn(t, in.base, "huge@example.com", "a long history's passphrase")}
			// The first overview: on Redis it counts a history older than
			// the totals, once.
			first := m.time("/dashboard/", true)
			t.Logf("first overview: %v", first.Round(time.Microsecond))
			var h history
			m.get("/api/v1/credits/history?limit=50", false, &h)
			if len(h.Entries) != 50 || h.NextCursor == nil {
				t.Fatalf("history: %d entries, next %v", len(h.Entries), h.NextCursor)
			}
			// A cursor deep in the history: half way.
			mid, _ := strconv.ParseInt(h.Entries[0].ID, 10, 64)
			deep := encodeHugeCursor(strconv.FormatInt(mid-int64(n/2), 10))
			for range 5 { // warm up
				m.time("/api/v1/credits/history?limit=50", false)
				m.time("/dashboard/", true)
			}
			rss0, _ := procMemory(t, in.cmd.Process.Pid)
			for _, c := range []struct {
				name, path string
				console    bool
			}{
				{"history?limit=50", "/api/v1/credits/history?limit=50", false},
				{"history?limit=50, half way", "/api/v1/credits/history?limit=50&cursor=" + deep, false},
				{"history?limit=100, next page", "/api/v1/credits/history?limit=100&cursor=" + *h.NextCursor, false},
				{"account", "/api/v1/account", false},
				{"console overview", "/dashboard/", true},
			} {
				var ds []time.Duration
				for range 200 {
					ds = append(ds, m.time(c.path, c.console))
				}
				t.Logf("%-30s %s", c.name, quantiles(ds))
				// A page costs what a page holds, not what the history
				// holds; the bound is generous for a loaded machine.
				if p50 := medianDuration(ds); p50 > hugeMaxP50 {
					t.Errorf("%s: p50 %v, want under %v with %d entries", c.name, p50, hugeMaxP50, n)
				}
			}
			// Six callers at once, as the report that found the problem.
			var mu sync.Mutex
			var ds []time.Duration
			var wg sync.WaitGroup
			for range 6 {
				wg.Go(func() {
					for range 50 {
						d := m.time("/api/v1/credits/history?limit=1", false)
						mu.Lock()
						ds = append(ds, d)
						mu.Unlock()
					}
				})
			}
			wg.Wait()
			t.Logf("%-30s %s", "6 parallel history?limit=1", quantiles(ds))
			rss1, hwm := procMemory(t, in.cmd.Process.Pid)
			t.Logf("server RSS: %d MB after warm-up, %d MB after, peak %d MB", rss0>>10, rss1>>10, hwm>>10)
			if medianDuration(ds) > hugeMaxP50 {
				t.Errorf("6 parallel history?limit=1: p50 %v, want under %v", medianDuration(ds), hugeMaxP50)
			}
			// Reading pages holds a page at a time: the history itself
			// (hundreds of MB as JSON) never enters the server.
			if grew := (rss1 - rss0) << 10; grew > hugeMaxGrowth {
				t.Errorf("server RSS grew by %d MB over the reads, want under %d MB", grew>>20, hugeMaxGrowth>>20)
			}
			in.stop()
		})
	}
}

// The bounds TestHugeLedger asserts: the median latency of each request,
// and the growth of the server's resident memory over the reads.
const (
	hugeMaxP50    = 50 * time.Millisecond
	hugeMaxGrowth = 64 << 20
)

// medianDuration returns the median of ds.
func medianDuration(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// hugeEntries reads VALIDMAIL_HUGE, skipping the test when it is unset.
func hugeEntries(t *testing.T) int {
	v := os.Getenv("VALIDMAIL_HUGE")
	if v == "" {
		t.Skip("VALIDMAIL_HUGE is not set: skipping the long-history measurement")
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("VALIDMAIL_HUGE=%q: want 1 (a million entries) or a number of entries", v)
	}
	if n == 1 {
		n = 1_000_000
	}
	return n &^ 1
}

type history struct {
	Entries []struct {
		ID string `json:"id"`
	} `json:"entries"`
	NextCursor *string `json:"next_cursor"`
}

// encodeHugeCursor makes the API's cursor for an entry id.
func encodeHugeCursor(id string) string {
	return base64.RawURLEncoding.EncodeToString([]byte("0:" + id))
}

// hugeMeter times requests to one instance.
type hugeMeter struct {
	t      *testing.T
	in     *instance
	key    string
	cookie string
}

// time sends GET path (with the session when console, else the key) and
// returns how long the whole response took.
func (m hugeMeter) time(path string, console bool) time.Duration {
	start := time.Now()
	m.get(path, console, nil)
	return time.Since(start)
}

func (m hugeMeter) get(path string, console bool, into any) {
	m.t.Helper()
	req, _ := http.NewRequest("GET", m.in.base+path, nil)
	if console {
		req.Header.Set("Cookie", m.cookie)
	} else {
		req.Header.Set("X-Api-Key", m.key)
	}
	resp, err := hugeClient.Do(req)
	if err != nil {
		m.t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || resp.StatusCode != 200 {
		m.t.Fatalf("GET %s: %d %v %.300s", path, resp.StatusCode, err, body)
	}
	if console && !strings.Contains(string(body), "huge@example.com") {
		m.t.Fatalf("GET %s: not the account's console page: %.300s", path, body)
	}
	if into != nil {
		if err := json.Unmarshal(body, into); err != nil {
			m.t.Fatal(err)
		}
	}
}

// hugeClient follows no redirect: a console page that sends to the
// sign-in page is a failure.
var hugeClient = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

// signIn signs in to the console and returns the session's Cookie header.
func signIn(t *testing.T, base, email, password string) string {
	noFollow := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noFollow.PostForm(base+"/dashboard/login", neturl.Values{"email": {email}, "password": {password}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	for _, c := range resp.Cookies() {
		if strings.HasSuffix(c.Name, "vm_session") {
			return c.Name + "=" + c.Value
		}
	}
	t.Fatalf("sign-in: %d, no session cookie", resp.StatusCode)
	return ""
}

// quantiles formats the median, 99th percentile and maximum of ds.
func quantiles(ds []time.Duration) string {
	slices.Sort(ds)
	q := func(p float64) time.Duration {
		return ds[min(len(ds)-1, int(p*float64(len(ds))))].Round(time.Microsecond)
	}
	return fmt.Sprintf("n=%d p50 %v p99 %v max %v", len(ds), q(0.5), q(0.99), ds[len(ds)-1].Round(time.Microsecond))
}

// procMemory returns a process's resident and peak resident memory, in KB.
func procMemory(t *testing.T, pid int) (rss, hwm int64) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && (f[0] == "VmRSS:" || f[0] == "VmHWM:") {
			v, _ := strconv.ParseInt(f[1], 10, 64)
			if f[0] == "VmRSS:" {
				rss = v
			} else {
				hwm = v
			}
		}
	}
	return rss, hwm
}

// fillPostgres appends n entries to the account in one statement, as a
// charge and a refund per request, one every 2.5 s up to now.
func fillPostgres(t *testing.T, storeURL, account string, n int) {
	u, err := neturl.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	schema := q.Get("schema")
	q.Del("schema")
	u.RawQuery = q.Encode()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		INSERT INTO `+schema+`.credit_entries (account, delta, reason, reference, created_at)
		SELECT $1, CASE WHEN g % 2 = 1 THEN -1 ELSE 1 END, CASE WHEN g % 2 = 1 THEN 'charge' ELSE 'refund' END,
		       'req-' || ((g + 1) / 2), now() - ($2::int - g) * interval '1.25 seconds'
		FROM generate_series(1, $2::int) AS g`, account, n)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, `ANALYZE `+schema+`.credit_entries`); err != nil {
		t.Fatal(err)
	}
}

// fillRedis appends n entries to the account's history list, as
// fillPostgres does; the store's totals do not hold them yet, as with a
// history written before the store kept totals.
func fillRedis(t *testing.T, storeURL, account string, n int) {
	c, prefix := redisTarget(t, storeURL)
	s, err := redisstore.New(c, &redisstore.Config{Prefix: prefix})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	last, err := c.IncrBy(ctx, s.KeyName(account, "seq:entry"), int64(n)).Result()
	if err != nil {
		t.Fatal(err)
	}
	first := last - int64(n) + 1
	now := time.Now().UnixMicro()
	type entry struct {
		ID      string `json:"id"`
		Account string `json:"account"`
		Delta   string `json:"delta"`
		Reason  string `json:"reason"`
		Ref     string `json:"ref"`
		Key     string `json:"key"`
		T       string `json:"t"`
	}
	const chunk = 10000
	for i := 0; i < n; i += chunk {
		vals := make([]any, 0, chunk)
		for g := i + 1; g <= min(i+chunk, n); g++ {
			e := entry{ID: strconv.FormatInt(first+int64(g-1), 10), Account: account, Delta: "1", Reason: "refund",
				Ref: "req-" + strconv.Itoa((g+1)/2), T: strconv.FormatInt(now-int64(n-g)*1_250_000, 10)}
			if g%2 == 1 {
				e.Delta, e.Reason = "-1", "charge"
			}
			b, _ := json.Marshal(e)
			vals = append(vals, string(b))
		}
		if err := c.RPush(ctx, s.KeyName(account, "hist:"+account), vals...).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
