package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/validmail/validmail/emailcheck"
)

// statusOrder is the order statuses are listed in: the validator's order
// of precedence.
var statusOrder = []emailcheck.Status{
	emailcheck.StatusDeliverable, emailcheck.StatusCatchAll,
	emailcheck.StatusLikely, emailcheck.StatusUndeliverable, emailcheck.StatusDisposable,
	emailcheck.StatusNoMXRecords, emailcheck.StatusUnknown,
	emailcheck.StatusInvalidDomain, emailcheck.StatusInvalid,
	emailcheck.StatusInvalidFormat,
}

// maxProviders bounds the provider counts kept; later new names are
// counted as "(other)".
const maxProviders = 10_000

// stats counts what a run did. It is safe for concurrent use.
type stats struct {
	mu         sync.Mutex
	start      time.Time
	total      int64 // input size in bytes; 0 when unknown
	done       int64 // input bytes consumed through the last validated row
	validated  int64 // rows validated, malformed ones included
	written    int64 // rows written after -only
	malformed  int64
	duplicates int64
	byStatus   map[emailcheck.Status]int64
	providers  map[string]int64
}

func newStats(start time.Time, total int64) *stats {
	return &stats{
		start:     start,
		total:     total,
		byStatus:  make(map[emailcheck.Status]int64),
		providers: make(map[string]int64),
	}
}

// add counts one validated row.
func (s *stats) add(r row, res emailcheck.Result, written bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.validated++
	s.done = r.end
	if written {
		s.written++
	}
	if r.err != nil {
		s.malformed++
	}
	s.byStatus[res.Confidence.Status]++
	if p := res.Provider.Name; res.Validations.MXRecords && p != "" && p != "Unknown" {
		if _, ok := s.providers[p]; !ok && len(s.providers) >= maxProviders {
			p = "(other)"
		}
		s.providers[p]++
	}
}

// addDuplicate counts a row dropped by -dedupe.
func (s *stats) addDuplicate(r row) {
	s.mu.Lock()
	s.duplicates++
	s.done = max(s.done, r.end)
	s.mu.Unlock()
}

// snapshot is a consistent copy of the counters.
type snapshot struct {
	elapsed    time.Duration
	total      int64
	done       int64
	validated  int64
	written    int64
	malformed  int64
	duplicates int64
	byStatus   map[emailcheck.Status]int64
	providers  map[string]int64
}

func (s *stats) snapshot(now time.Time) snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return snapshot{
		elapsed:    now.Sub(s.start),
		total:      s.total,
		done:       s.done,
		validated:  s.validated,
		written:    s.written,
		malformed:  s.malformed,
		duplicates: s.duplicates,
		byStatus:   maps.Clone(s.byStatus),
		providers:  maps.Clone(s.providers),
	}
}

// rate is addresses validated per second.
func (s snapshot) rate() float64 {
	if sec := s.elapsed.Seconds(); sec > 0 {
		return float64(s.validated) / sec
	}
	return 0
}

// statuses lists the statuses seen, in statusOrder then by name.
func (s snapshot) statuses() []emailcheck.Status {
	var out []emailcheck.Status
	for _, st := range statusOrder {
		if s.byStatus[st] > 0 {
			out = append(out, st)
		}
	}
	var other []emailcheck.Status
	for st := range s.byStatus {
		if !slices.Contains(statusOrder, st) {
			other = append(other, st)
		}
	}
	slices.Sort(other)
	return append(out, other...)
}

// statusCounts is "LIKELY 9,120 · INVALID_FORMAT 31 ..." for progress.
func (s snapshot) statusCounts() string {
	var parts []string
	for _, st := range s.statuses() {
		parts = append(parts, fmt.Sprintf("%s %s", st, thousands(s.byStatus[st])))
	}
	return strings.Join(parts, " · ")
}

// topProviders returns up to n provider names, most frequent first.
func (s snapshot) topProviders(n int) []string {
	names := slices.Collect(maps.Keys(s.providers))
	slices.SortFunc(names, func(a, b string) int {
		return cmp.Or(cmp.Compare(s.providers[b], s.providers[a]), strings.Compare(a, b))
	})
	return names[:min(n, len(names))]
}

// writeSummary prints the end-of-run table.
func writeSummary(w io.Writer, s snapshot, interrupted bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	title := "Summary"
	if interrupted {
		title = "Summary (interrupted: rows after the last one written were not validated)"
	}
	fmt.Fprintf(tw, "%s\n", title)
	fmt.Fprintf(tw, "  status\t%12s\t%7s\n", "count", "share")
	for _, st := range s.statuses() {
		n := s.byStatus[st]
		fmt.Fprintf(tw, "  %s\t%12s\t%7s\n", st, thousands(n), percent(n, s.validated))
	}
	fmt.Fprintf(tw, "  total\t%12s\t%7s\n", thousands(s.validated), percent(s.validated, s.validated))
	if top := s.topProviders(5); len(top) > 0 {
		fmt.Fprintf(tw, "  top providers\t%12s\t%7s\n", "count", "share")
		for _, p := range top {
			n := s.providers[p]
			fmt.Fprintf(tw, "  %s\t%12s\t%7s\n", p, thousands(n), percent(n, s.validated))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintf(w, "%s rows written, %s malformed, %s duplicates dropped\n%s addresses in %s (%s addresses/s)\n",
		thousands(s.written), thousands(s.malformed), thousands(s.duplicates),
		thousands(s.validated), s.elapsed.Round(time.Millisecond), thousands(int64(s.rate())))
	return err
}

func percent(n, of int64) string {
	if of == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100*float64(n)/float64(of))
}

// thousands formats n with comma separators: 1234567 → "1,234,567".
func thousands(n int64) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}
