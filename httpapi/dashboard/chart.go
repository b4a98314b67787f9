package dashboard

import (
	"fmt"
	"html/template"
	"strconv"
	"strings"
	"time"

	"github.com/validmail/validmail/credits"
)

// chartDays is how many days the overview's chart shows.
const chartDays = 30

// usageChart draws the credits used per day (charges less refunds) over
// the last days as an SVG bar chart, with a title per bar for screen
// readers and tooltips, from the ledger's per-day totals.
func usageChart(totals []credits.DayTotal, now time.Time, days int) template.HTML {
	today := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	start := today.AddDate(0, 0, -(days - 1))
	used := make([]int64, days)
	for _, t := range totals {
		if t.Day.Before(start) {
			continue
		}
		i := int(t.Day.Sub(start) / (24 * time.Hour))
		if i < 0 || i >= days {
			continue
		}
		switch t.Reason {
		case credits.ReasonCharge, credits.ReasonRefund:
			used[i] -= t.Sum
		}
	}
	var peak int64 = 1
	var total int64
	for _, n := range used {
		peak = max(peak, n)
		total += max(n, 0)
	}
	const w, h, pad, axis = 600, 120, 4, 20
	bw := float64(w-2*pad) / float64(days)
	var b strings.Builder
	if total == 0 {
		fmt.Fprintf(&b, `<p class="chart-note">No credits used in the last %d days.</p>`, days)
	} else {
		fmt.Fprintf(&b, `<p class="chart-note">%s used in the last %d days.</p>`, creditCount(total), days)
	}
	fmt.Fprintf(&b, `<svg class="chart" viewBox="0 0 %d %d" role="img" aria-labelledby="chart-title chart-desc" xmlns="http://www.w3.org/2000/svg">`, w, h+axis)
	fmt.Fprintf(&b, `<title id="chart-title">Credits used per day, last %d days</title>`, days)
	fmt.Fprintf(&b, `<desc id="chart-desc">%s used in all; the busiest day used %d.</desc>`, creditCount(total), peak)
	fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" class="axis"/>`, pad, h, w-pad, h)
	for i, n := range used {
		n = max(n, 0)
		bh := float64(n) / float64(peak) * float64(h-10)
		x := float64(pad) + float64(i)*bw
		day := start.AddDate(0, 0, i)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" class="bar"><title>%s: %d</title></rect>`,
			x+1, float64(h)-bh, bw-2, bh, day.Format("Jan 2"), n)
		switch {
		case i == 0:
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="label first">%s</text>`, x, h+14, day.Format("Jan 2"))
		case i == days-1:
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="label last">%s</text>`, x+bw, h+14, day.Format("Jan 2"))
		case i%7 == 0 && i < days-4:
			fmt.Fprintf(&b, `<text x="%.1f" y="%d" class="label">%s</text>`, x+bw/2, h+14, day.Format("Jan 2"))
		}
	}
	b.WriteString(`</svg>`)
	return template.HTML(b.String())
}

// creditCount is "1 credit" or "n credits".
func creditCount(n int64) string {
	if n == 1 {
		return "1 credit"
	}
	return strconv.FormatInt(n, 10) + " credits"
}
