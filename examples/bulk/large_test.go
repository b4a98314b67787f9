package main

import (
	"bufio"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
)

// listSpec describes a generated mailing list.
type listSpec struct {
	rows, domains int
}

// genList writes a CSV list of spec.rows addresses over spec.domains
// generated domains, mixed with invalid syntax, NXDOMAIN and disposable
// domains, and rows that are not valid CSV. It returns the status each
// row must get, in order.
func genList(t testing.TB, path string, spec listSpec) []emailcheck.Status {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	want := make([]emailcheck.Status, spec.rows)
	fmt.Fprint(w, "id,name,email\r\n")
	for i := range spec.rows {
		switch {
		case i%1000 == 4:
			fmt.Fprintf(w, "%d,\"Broken %d,u%d@d1.bulkmail.net\r\n", i, i, i)
			want[i] = emailcheck.StatusInvalidFormat
		case i%50 == 1:
			fmt.Fprintf(w, "%d,Name %d,user%d@@bad\r\n", i, i, i)
			want[i] = emailcheck.StatusInvalidFormat
		case i%40 == 2:
			fmt.Fprintf(w, "%d,Name %d,u%d@nx%d.bulkmail.net\r\n", i, i, i, i%200)
			want[i] = emailcheck.StatusInvalidDomain
		case i%30 == 3:
			fmt.Fprintf(w, "%d,Name %d,u%d@mailinator.com\r\n", i, i, i)
			want[i] = emailcheck.StatusDisposable
		default:
			fmt.Fprintf(w, "%d,Name %d,u%d@d%d.bulkmail.net\r\n", i, i, i, (i*7919)%spec.domains)
			want[i] = emailcheck.StatusLikely
		}
	}
	if err := w.Flush(); err != nil {
		t.Fatal(err)
	}
	return want
}

// checkOutput streams the CSV output and checks that it holds every input
// row, in order, with the expected status; it returns the counts by
// status.
func checkOutput(t testing.TB, path string, want []emailcheck.Status) map[string]int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	cr := csv.NewReader(bufio.NewReader(f))
	cr.FieldsPerRecord = -1
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Join(header[:4], ","); got != "id,name,email,status" {
		t.Fatalf("header starts %q", got)
	}
	counts := make(map[string]int)
	i := 0
	for ; ; i++ {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("output row %d: %v", i, err)
		}
		if i >= len(want) {
			t.Fatalf("more output rows than the %d input rows", len(want))
		}
		if rec[0] != strconv.Itoa(i) || rec[3] != string(want[i]) {
			t.Fatalf("output row %d = %q, want id %d status %s", i, rec, i, want[i])
		}
		counts[rec[3]]++
	}
	if i != len(want) {
		t.Fatalf("%d output rows, want %d", i, len(want))
	}
	return counts
}

// memPeak samples the Go heap while a run goes on.
type memPeak struct {
	stop chan struct{}
	wg   sync.WaitGroup
	max  atomic.Uint64
}

func startMemPeak() *memPeak {
	m := &memPeak{stop: make(chan struct{})}
	m.wg.Go(func() {
		var ms runtime.MemStats
		t := time.NewTicker(20 * time.Millisecond)
		defer t.Stop()
		for {
			runtime.ReadMemStats(&ms)
			if ms.HeapInuse > m.max.Load() {
				m.max.Store(ms.HeapInuse)
			}
			select {
			case <-m.stop:
				return
			case <-t.C:
			}
		}
	})
	return m
}

func (m *memPeak) done() uint64 {
	close(m.stop)
	m.wg.Wait()
	return m.max.Load()
}

// vmHWM is the process's peak resident set size from /proc, or "" where
// unavailable.
func vmHWM() string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return ""
	}
	for l := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return ""
}

// TestLargeList validates a generated list of 100,000 addresses over 5,000
// domains against a DNS server answering in 20 ms. Under the race detector
// or -short it checks correctness on a smaller list.
func TestLargeList(t *testing.T) {
	spec := listSpec{rows: 100_000, domains: 5_000}
	if raceEnabled || testing.Short() {
		spec = listSpec{rows: 20_000, domains: 1_000}
	}
	srv := startDNS(t, 20*time.Millisecond)
	dir := t.TempDir()
	in, out := filepath.Join(dir, "list.csv"), filepath.Join(dir, "out.csv")
	want := genList(t, in, spec)

	// The whole command, cold DNS cache.
	runtime.GC()
	peak := startMemPeak()
	start := time.Now()
	res := runCmd(t, t.Context(), "", "-dns", srv.Addr(), "-o", out, in)
	took := time.Since(start)
	heap := peak.done()
	if res.code != exitOK {
		t.Fatalf("exit code %d; stderr:\n%s", res.code, res.stderr)
	}
	counts := checkOutput(t, out, want)
	if summary := summaryCounts(t, res.stderr); fmt.Sprint(summary) != fmt.Sprint(counts) {
		t.Errorf("summary counts %v, output counts %v", summary, counts)
	}
	malformed := spec.rows / 1000
	if got := strings.Count(res.stderr, "quoted field never closed"); got != malformed {
		t.Errorf("%d malformed rows reported, want %d", got, malformed)
	}
	t.Logf("cold cache: %d rows over %d domains in %v: %.0f addresses/s; peak Go heap in use %.1f MiB; process VmHWM %s; %d DNS queries",
		spec.rows, spec.domains, took.Round(time.Millisecond), float64(spec.rows)/took.Seconds(),
		float64(heap)/(1<<20), vmHWM(), srv.Queries())

	// The same list again with every domain cached.
	v, err := emailcheck.New(&emailcheck.Config{Nameservers: []string{srv.Addr()}})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	warm := func(yield func(string) bool) {
		for d := range spec.domains {
			if !yield(fmt.Sprintf("w@d%d.bulkmail.net", d)) {
				return
			}
		}
		for d := range 200 {
			if !yield(fmt.Sprintf("w@nx%d.bulkmail.net", d)) {
				return
			}
		}
		yield("w@mailinator.com")
	}
	for _, err := range v.ValidateMany(t.Context(), warm, nil) {
		if err != nil {
			t.Fatal(err)
		}
	}
	opts, err := parseArgs([]string{"-o", out, "-quiet", in}, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	queries := srv.Queries()
	start = time.Now()
	if code := execute(t.Context(), opts, local(v, opts), nil, io.Discard, io.Discard); code != exitOK {
		t.Fatalf("warm run: exit %d", code)
	}
	took = time.Since(start)
	checkOutput(t, out, want)
	rate := float64(spec.rows) / took.Seconds()
	t.Logf("warm cache: %d rows in %v: %.0f addresses/s; %d DNS queries", spec.rows, took.Round(time.Millisecond), rate, srv.Queries()-queries)
	if !raceEnabled && !testing.Short() && rate < 20_000 {
		t.Errorf("warm rate %.0f addresses/s, want at least 20,000", rate)
	}
}

// TestHugeInput streams 100 MB of CSV through the command from a pipe and
// reports the peak memory, which must not grow with the input. It takes
// about a minute, so it runs only when BULK_HUGE_TEST is set.
func TestHugeInput(t *testing.T) {
	if os.Getenv("BULK_HUGE_TEST") == "" {
		t.Skip("set BULK_HUGE_TEST=1 to stream 100 MB through the command")
	}
	const size = 100 << 20
	srv := startDNS(t, 20*time.Millisecond)
	pr, pw := io.Pipe()
	note := strings.Repeat("lorem ipsum ", 16)
	rows := 0
	go func() {
		w := bufio.NewWriter(pw)
		n, _ := fmt.Fprint(w, "email,note\n")
		for written := n; written < size; written += n {
			n, _ = fmt.Fprintf(w, "u%d@d%d.bulkmail.net,%s%d\n", rows, rows%5000, note, rows)
			rows++
		}
		w.Flush()
		pw.Close()
	}()
	runtime.GC()
	peak := startMemPeak()
	start := time.Now()
	var stderr strings.Builder
	code := run(t.Context(), []string{"-dns", srv.Addr(), "-quiet"}, pr, io.Discard, &stderr)
	took := time.Since(start)
	heap := peak.done()
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr.String())
	}
	t.Logf("%d MiB, %d rows in %v (%.0f addresses/s); peak Go heap in use %.1f MiB; process VmHWM %s",
		size>>20, rows, took.Round(time.Millisecond), float64(rows)/took.Seconds(), float64(heap)/(1<<20), vmHWM())
	if heap > 200<<20 {
		t.Errorf("peak heap %d MiB: memory grows with the input", heap>>20)
	}
}
