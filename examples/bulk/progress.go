package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressMode is how progress is shown on stderr.
type progressMode int

const (
	progressNone  progressMode = iota // -quiet
	progressLines                     // a plain line every interval
	progressBar                       // a redrawn bar (stderr is a terminal)
)

// maxWarnings is how many row problems are reported one by one.
const maxWarnings = 100

// reporter shows progress and row problems on stderr. warn may be called
// from any goroutine.
type reporter struct {
	w        io.Writer
	mode     progressMode
	interval time.Duration
	stats    *stats
	width    func() int // terminal columns; for progressBar

	mu       sync.Mutex // serialises output to w
	bar      *progressbar.ProgressBar
	warnings int
	stop     chan struct{}
	done     chan struct{}
}

// newReporter picks the mode: none when quiet, a bar when w is a terminal,
// plain lines otherwise.
func newReporter(w io.Writer, quiet bool, st *stats, interval time.Duration) *reporter {
	r := &reporter{w: w, mode: progressLines, interval: interval, stats: st}
	if f, ok := w.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
		r.mode = progressBar
		r.width = func() int {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
				return cols
			}
			return 80
		}
	}
	if quiet {
		r.mode = progressNone
	}
	return r
}

// start begins showing progress until finish is called.
func (r *reporter) start() {
	if r.mode == progressNone {
		return
	}
	r.stop, r.done = make(chan struct{}), make(chan struct{})
	every := r.interval
	if r.mode == progressBar {
		max := int64(-1) // unknown size: a spinner, no ETA
		if r.stats.total > 0 {
			max = r.stats.total
		}
		r.bar = progressbar.NewOptions64(max,
			progressbar.OptionSetWriter(r.w),
			progressbar.OptionUseANSICodes(true),
			progressbar.OptionSetWidth(24),
			progressbar.OptionSetPredictTime(max > 0),
			progressbar.OptionSetElapsedTime(true),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionClearOnFinish(),
			progressbar.OptionSpinnerType(14),
			// Redraw only from tick, so nothing draws after finish.
			progressbar.OptionSetSpinnerChangeInterval(0),
		)
		every = 200 * time.Millisecond
	}
	go func() {
		defer close(r.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case now := <-t.C:
				r.tick(now)
			}
		}
	}()
}

// tick draws the bar or prints one progress line.
func (r *reporter) tick(now time.Time) {
	s := r.stats.snapshot(now)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch r.mode {
	case progressBar:
		// The bar takes about 45 columns besides the description; keep
		// the line shorter than the terminal so it never wraps.
		desc := truncate(r.describe(s), r.width()-48)
		r.bar.Describe(desc)
		if s.total > 0 {
			r.bar.Set64(min(s.done, s.total))
		} else {
			r.bar.Add64(1) // turns the spinner
		}
	case progressLines:
		fmt.Fprintf(r.w, "progress: %s\n", r.describeLine(s))
	}
}

// describe is the bar's description: counts, rate and statuses.
func (r *reporter) describe(s snapshot) string {
	d := fmt.Sprintf("%s addr %s/s", thousands(s.validated), thousands(int64(s.rate())))
	if c := s.statusCounts(); c != "" {
		d += " │ " + c
	}
	return d
}

// describeLine is one plain progress line, with the share of the input
// read and an ETA when the input size is known.
func (r *reporter) describeLine(s snapshot) string {
	d := fmt.Sprintf("%s addresses, %s/s", thousands(s.validated), thousands(int64(s.rate())))
	if s.total > 0 && s.done > 0 {
		frac := float64(s.done) / float64(s.total)
		eta := time.Duration(float64(s.elapsed) * (1/frac - 1)).Round(time.Second)
		d += fmt.Sprintf(", %.0f%%, ETA %s", 100*frac, eta)
	}
	if c := s.statusCounts(); c != "" {
		d += "; " + c
	}
	return d
}

// warn reports a problem with a row, above the bar if one is shown. After
// maxWarnings only a count is kept (in the summary).
func (r *reporter) warn(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings++
	if r.warnings > maxWarnings+1 {
		return
	}
	if r.bar != nil {
		io.WriteString(r.w, "\033[2K\r") // the next tick redraws the bar
	}
	if r.warnings == maxWarnings+1 {
		fmt.Fprintf(r.w, "further row problems are not listed (see the summary)\n")
		return
	}
	fmt.Fprintf(r.w, format+"\n", args...)
}

// finish stops the progress display and erases the bar, leaving the
// cursor at the start of a clean line.
func (r *reporter) finish() {
	if r.stop == nil {
		return
	}
	close(r.stop)
	<-r.done
	r.stop = nil
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.bar != nil {
		r.bar.Exit()
		io.WriteString(r.w, "\033[2K\r")
	}
}

// truncate shortens s to at most n runes, marking the cut with "…".
func truncate(s string, n int) string {
	if n < 1 {
		return ""
	}
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
