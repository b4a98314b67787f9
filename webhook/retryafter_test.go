package webhook

import (
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestParseRetryAfter(t *testing.T) {
	t.Parallel()
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		in   string
		want time.Duration
	}{
		{"", 0},
		{"120", 120 * time.Second},
		{" 5 ", 5 * time.Second},
		{"0", 0},
		{"-3", 0},
		{"1.5", 0},
		{"soon", 0},
		{now.Add(90 * time.Second).Format(http.TimeFormat), 90 * time.Second},
		{"Tue, 01 Jan 2030 12:10:00 GMT", 10 * time.Minute},
		{now.Add(-time.Hour).Format(http.TimeFormat), 0},
		{"99999999999999999999", 0}, // does not fit: ignored
		{strconv.FormatInt(1<<62, 10), time.Duration(1<<63-1) / time.Second * time.Second},
	}
	for _, tc := range tests {
		if got := parseRetryAfter(tc.in, now); got != tc.want {
			t.Errorf("parseRetryAfter(%q) = %v, want %v", tc.in, got, tc.want)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"", "120", "Wed, 21 Oct 2015 07:28:00 GMT", "-1", "9223372036854775807"} {
		f.Add(s)
	}
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, s string) {
		if d := parseRetryAfter(s, now); d < 0 {
			t.Fatalf("parseRetryAfter(%q) = %v, negative", s, d)
		}
	})
}

func TestJitterBounds(t *testing.T) {
	t.Parallel()
	d, err := NewDispatcher(nopOutbox{}, nopEndpoints{}, nil, &Config{Jitter: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []float64{0, 0.5, 0.999999} {
		d.rnd = func() float64 { return r }
		got := d.jitter(100 * time.Second)
		if got < 80*time.Second || got > 120*time.Second {
			t.Errorf("jitter(100s) with r=%v = %v, outside ±20%%", r, got)
		}
	}
	d.rnd = func() float64 { return 0.5 }
	if got := d.jitter(100 * time.Second); got != 100*time.Second {
		t.Errorf("jitter at the midpoint = %v, want 100s", got)
	}
}

type nopOutbox struct{ Outbox }
type nopEndpoints struct{ Endpoints }
