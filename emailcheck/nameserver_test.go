package emailcheck

import (
	"context"
	"errors"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func TestRTOFromRoundTrips(t *testing.T) {
	ns := newNameserver("127.0.0.1:53", 2*time.Second, 1024)
	if ns.rto != initialRTO {
		t.Fatalf("RTO before any answer %v; want %v", ns.rto, initialRTO)
	}
	if short := newNameserver("127.0.0.1:53", 100*time.Millisecond, 1024); short.rto != 100*time.Millisecond {
		t.Fatalf("RTO before any answer with QueryTimeout 100ms: %v", short.rto)
	}
	// RFC 6298 §2.2: the first sample sets SRTT to R and RTTVAR to R/2.
	ns.sample(time.Time{}, 100*time.Millisecond)
	if ns.srtt != 100*time.Millisecond || ns.rttvar != 50*time.Millisecond || ns.rto != 300*time.Millisecond {
		t.Fatalf("after one 100ms sample: srtt %v rttvar %v rto %v; want 100ms 50ms 300ms", ns.srtt, ns.rttvar, ns.rto)
	}
	// §2.3: RTTVAR = 3/4 RTTVAR + 1/4 |SRTT - R|, SRTT = 7/8 SRTT + 1/8 R.
	ns.sample(time.Time{}, 20*time.Millisecond)
	if ns.srtt != 90*time.Millisecond || ns.rttvar != 57500*time.Microsecond {
		t.Fatalf("after a 20ms sample: srtt %v rttvar %v; want 90ms 57.5ms", ns.srtt, ns.rttvar)
	}
	// Steady fast answers bring the RTO down to its floor, never below.
	for range 100 {
		ns.sample(time.Time{}, time.Millisecond)
	}
	if ns.rto != minRTO {
		t.Fatalf("RTO after steady 1ms answers %v; want the floor %v", ns.rto, minRTO)
	}
	// A timeout doubles it, once for the queries sent under it.
	sent := time.Now()
	ns.inFlight = 2
	ns.timedOut(sent, false)
	ns.timedOut(sent, false)
	if ns.rto != 2*minRTO {
		t.Fatalf("RTO after two timeouts of queries sent together %v; want %v", ns.rto, 2*minRTO)
	}
	// Doubling stops at QueryTimeout.
	for range 10 {
		ns.inFlight++
		ns.timedOut(time.Now(), false)
	}
	if ns.rto != 2*time.Second {
		t.Fatalf("RTO after many timeouts %v; want QueryTimeout", ns.rto)
	}
	// A fresh measurement ends the doubling.
	ns.sample(time.Time{}, time.Millisecond)
	if ns.rto >= time.Second {
		t.Fatalf("RTO after an answer %v; want it from the measurements again", ns.rto)
	}
	if ns.inFlight != 0 {
		t.Fatalf("%d in flight after every query timed out", ns.inFlight)
	}
}

func TestWindow(t *testing.T) {
	ctx := context.Background()
	ns := newNameserver("127.0.0.1:53", 2*time.Second, 1024)
	if got := ns.stats().Window; got != initialWindow {
		t.Fatalf("first window %d; want %d", got, initialWindow)
	}
	// Before any loss, answers grow the window by fastGrowth each.
	for range 10 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	for range 10 {
		ns.answered(time.Now(), false)
	}
	if got, want := ns.stats().Window, initialWindow+10*fastGrowth; got != want {
		t.Fatalf("window after 10 answers %d; want %d", got, want)
	}

	// A timeout alone shrinks nothing (a dead name is never answered), but
	// gives the query's place back. A query sent after them was answered:
	// the loss is their names', and the RTO stays.
	lost := time.Now()
	for range 3 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	ns.answered(time.Now(), false)
	win := ns.limit()
	rto, _ := ns.standing()
	ns.timedOut(lost, false)
	ns.timedOut(lost, false)
	if ns.limit() != win || ns.inFlight != 0 {
		t.Fatalf("after two timeouts: window %d, %d in flight; want %d and 0", ns.limit(), ns.inFlight, win)
	}
	if got, _ := ns.standing(); got != rto {
		t.Fatalf("RTO after two timeouts of queries overtaken by an answer: %v; want %v", got, rto)
	}
	// A question answered to a retransmission was dropped: the window
	// halves, once for the queries sent under the same window.
	cut := ns.lost(lost, win)
	if cut == 0 || ns.limit() != win/2 {
		t.Fatalf("loss: cut %d, window %d; want %d", cut, ns.limit(), win/2)
	}
	if again := ns.lost(lost, win); again != 0 || ns.limit() != win/2 {
		t.Fatalf("second loss of the same window: cut %d, window %d; want 0 and %d", again, ns.limit(), win/2)
	}
	// Its late answer shows it was not lost: the halving is undone.
	ns.late(10*time.Millisecond, cut)
	if ns.limit() != win {
		t.Fatalf("after the late answer: window %d; want %d back", ns.limit(), win)
	}
	if ns.inFlight != 0 {
		t.Fatalf("%d in flight once every query ended", ns.inFlight)
	}
	// Once a query was lost, slow start grows by one place an answer.
	ns.ssthresh = ns.maxWin
	win = ns.limit()
	for range 5 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		ns.answered(time.Now(), false)
	}
	if got := ns.limit(); got != win+5 {
		t.Fatalf("window after 5 answers following a loss: %d; want %d", got, win+5)
	}

	// Past the threshold the window grows by one per window of answers.
	win = ns.limit()
	ns.ssthresh = float64(win)
	for range win {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		ns.answered(time.Now(), false)
	}
	if got := ns.limit(); got < win || got > win+1 {
		t.Fatalf("window after a window of answers past the threshold: %d; want %d or %d", got, win, win+1)
	}

	// Never below the floor, never above MaxInFlight.
	small := newNameserver("127.0.0.1:53", 2*time.Second, 8)
	if small.limit() != 8 {
		t.Fatalf("first window %d with MaxInFlight 8", small.limit())
	}
	for range 20 {
		sent := time.Now()
		if err := small.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		if err := small.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		small.answered(time.Now(), false)
		small.cut = time.Time{}
		small.timedOut(sent, false)
		small.lost(sent, small.limit())
	}
	if small.limit() != minWindow {
		t.Fatalf("window after many losses %d; want the floor %d", small.limit(), minWindow)
	}
	for range 100 {
		if err := small.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		small.answered(time.Now(), false)
	}
	if small.limit() > 8 {
		t.Fatalf("window %d above MaxInFlight 8", small.limit())
	}
}

// The first flight ends at a hole: a query of it unanswered for two
// round trips while later ones were answered. The window then falls to
// twice the answers the first flight had, and grows by one an answer.
func TestFirstFlightHole(t *testing.T) {
	ctx := context.Background()
	ns := newNameserver("127.0.0.1:53", 2*time.Second, 1024)
	start := time.Now().Add(-time.Second)
	// Ten queries of the first flight, sent a second ago; the first is
	// never answered.
	var marks []*flightMark
	for range 10 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		marks = append(marks, ns.track(start))
	}
	// Answers of 5 ms for the other queries, in order: the first is a
	// hole once it has waited two round trips (it has waited a second).
	marks[1].done.Store(true)
	ns.answered(time.Now().Add(-5*time.Millisecond), false)
	if ns.fast || ns.flight != nil {
		t.Fatalf("after a hole: first flight %v with %d marks; want it over", ns.fast, len(ns.flight))
	}
	// No answer came in the first flight before the hole: the window
	// falls to the floor (and the answer adds one).
	if got := ns.limit(); got > minWindow+1 {
		t.Fatalf("window after a hole with no answer before it: %d; want at most %d", got, minWindow+1)
	}
	for range 9 {
		ns.release(false) // the others end unanswered
	}
	if ns.track(time.Now()) != nil {
		t.Fatal("a query tracked after the first flight ended")
	}
	win := ns.limit()
	for range 3 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		ns.answered(time.Now(), false)
	}
	if got := ns.limit(); got > win+3 {
		t.Fatalf("window after the first flight grew from %d to %d in 3 answers; want at most one an answer", win, got)
	}

	// Without a hole, answers grow the window by fastGrowth until it
	// reaches MaxInFlight, which ends the first flight.
	ok := newNameserver("127.0.0.1:53", 2*time.Second, initialWindow+30)
	var sent []*flightMark
	for range 10 {
		if err := ok.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, ok.track(time.Now()))
	}
	for _, m := range sent {
		m.done.Store(true)
		ok.answered(time.Now(), false)
	}
	if ok.limit() != initialWindow+30 || ok.fast {
		t.Fatalf("first flight with no hole: window %d, first flight %v; want %d and over", ok.limit(), ok.fast, initialWindow+30)
	}
}

// Queries beyond the window wait, first attempts ahead of retries, and a
// waiter whose context ends leaves the line.
func TestWindowWaits(t *testing.T) {
	ns := newNameserver("127.0.0.1:53", 2*time.Second, 2)
	ctx := context.Background()
	for range 2 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var order []string
	var wg sync.WaitGroup
	start := func(name string, retry bool) {
		wg.Go(func() {
			if err := ns.acquire(ctx, retry); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			order = append(order, name)
			mu.Unlock()
		})
		waitCond(t, func() bool { return ns.stats().Waiting == len(name) })
	}
	// Names of growing length, so each waits for the one before to queue.
	start("f", false)
	start("ff", false)
	cctx, cancel := context.WithCancel(ctx)
	gone := make(chan error, 1)
	go func() { gone <- ns.acquire(cctx, false) }()
	waitCond(t, func() bool { return ns.stats().Waiting == 3 })
	cancel()
	if err := <-gone; !errors.Is(err, context.Canceled) {
		t.Fatalf("cancelled waiter: %v", err)
	}
	if w := ns.stats().Waiting; w != 2 {
		t.Fatalf("%d waiting after one left; want 2", w)
	}
	start("rrr", true)
	// Places come free one by one: the first attempts in turn, then the
	// retry.
	for i, want := range []string{"f", "ff", "rrr"} {
		ns.release(false)
		waitCond(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(order) == i+1 })
		mu.Lock()
		got := order[i]
		mu.Unlock()
		if got != want {
			t.Fatalf("grant %d went to %s; want %s", i, got, want)
		}
	}
	wg.Wait()
	if st := ns.stats(); st.InFlight != 2 || st.Waiting != 0 {
		t.Fatalf("stats %+v; want 2 in flight, none waiting", st)
	}
}

// waitCond polls cond until it holds, failing after a minute.
func waitCond(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("condition not met after a minute")
		}
	}
}

// A ping whose first datagram is lost is sent again after the RTO, and
// the second is answered: one lost datagram is no outage.
func TestPingRetransmits(t *testing.T) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	var mu sync.Mutex
	got := 0
	go func() {
		buf := make([]byte, 4096)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(buf[:n]) != nil || len(q.Question) != 1 {
				continue
			}
			// The root's question is the ping; the canary's random
			// names are answered NXDOMAIN.
			rcode := dns.RcodeNameError
			switch {
			case q.Question[0].Qtype == dns.TypeSOA:
				// The trust check: the root and com exist.
				rcode = dns.RcodeSuccess
			case q.Question[0].Name == ".":
				mu.Lock()
				got++
				first := got == 1
				mu.Unlock()
				if first {
					continue // lost
				}
				rcode = dns.RcodeRefused
			}
			wire, _ := new(dns.Msg).SetRcode(q, rcode).Pack()
			_, _ = conn.WriteToUDP(wire, from)
		}
	}()
	v, err := New(&Config{Nameservers: []string{conn.LocalAddr().String()}, QueryTimeout: time.Hour, MaxInFlight: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	// The window is full and a lookup waits: the ping goes past them.
	if err := v.resolver.servers[0].acquire(context.Background(), false); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := v.PingNameservers(ctx); err != nil {
		t.Fatalf("ping: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if got != 2 {
		t.Fatalf("the server saw %d pings; want 2", got)
	}
}

// Until the first loss the window grows by fastGrowth places per answer
// (quadrupling every round trip); below the threshold after a loss, by one
// place per answer, doubling every round trip (slow start); a timeout of a query the server passed
// over ends the doubling without shrinking the window; past it, the window
// grows by one place per window's worth of answers; after a halving,
// answers to the queries sent before it grow nothing.
func TestWindowGrowth(t *testing.T) {
	ctx := context.Background()
	ns := newNameserver("127.0.0.1:53", 2*time.Second, 4096)
	ns.cwnd = 100
	for range 100 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	for range 100 {
		ns.answered(time.Now(), false)
	}
	if got := ns.limit(); got != 400 {
		t.Fatalf("window 100 after 100 answers before any loss: %d; want 400", got)
	}
	ns.endFlightLocked() // a loss, since undone, ended the first flight
	for range 400 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		ns.answered(time.Now(), false)
	}
	if got := ns.limit(); got != 800 {
		t.Fatalf("window 400 after 400 answers in slow start: %d; want 800", got)
	}

	passedOver := time.Now()
	if err := ns.acquire(ctx, false); err != nil {
		t.Fatal(err)
	}
	if err := ns.acquire(ctx, false); err != nil {
		t.Fatal(err)
	}
	ns.answered(time.Now(), false) // sent after the one that times out
	win := ns.limit()
	if !ns.timedOut(passedOver, false) {
		t.Fatal("a query passed over by the server: not the name's loss")
	}
	if got := ns.limit(); got != win {
		t.Fatalf("window after a timeout: %d; want %d", got, win)
	}
	for range win {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		ns.answered(time.Now(), false)
	}
	if got := ns.limit(); got < win || got > win+1 {
		t.Fatalf("window %d after as many answers past slow start: %d; want %d at most", win, got, win+1)
	}

	before := time.Now()
	for range 3 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	ns.answered(time.Now(), false) // sent later than the lost one
	win = ns.limit()
	ns.timedOut(before, false)
	if ns.lost(before, win) == 0 {
		t.Fatal("no halving")
	}
	ns.answered(before, false)
	if got := ns.limit(); got != win/2 {
		t.Fatalf("window after an answer sent before the halving: %d; want %d", got, win/2)
	}
}

// A query whose RTO passed is queued while the server answers queries
// sent before it and none sent half a round trip or more after it; it is not
// when the server answered nothing since it was sent (it may be down), nor
// once a query sent well after it was answered (it was passed over).
func TestQueued(t *testing.T) {
	ctx := context.Background()
	ns := newNameserver("127.0.0.1:53", 2*time.Second, 1024)
	sent := time.Now().Add(-100 * time.Millisecond)
	earlier := sent.Add(-time.Millisecond)
	ns.sample(sent.Add(-time.Second), 20*time.Millisecond)
	if ns.queued(sent) {
		t.Fatal("queued before the server answered anything since")
	}
	for _, at := range []time.Time{earlier, sent.Add(10 * time.Millisecond)} {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		ns.answered(at, false)
		if !ns.queued(sent) {
			t.Fatalf("not queued after the answer to a query sent %v after it", at.Sub(sent))
		}
	}
	if err := ns.acquire(ctx, false); err != nil {
		t.Fatal(err)
	}
	ns.answered(sent.Add(80*time.Millisecond), false)
	ns.mu.Lock()
	ns.srtt = 20 * time.Millisecond // whatever this machine's delays made it
	ns.mu.Unlock()
	if ns.queued(sent) {
		t.Fatalf("queued after the answer to a query sent 80ms after it (smoothed round trip %v)", ns.stats().SRTT)
	}
}

// A burst after a time with nothing in flight begins a first flight
// again, from the window or initialWindow, whichever is less; a trickle
// does not, and a flight all of whose queries ended is over.
func TestFirstFlightAfterIdle(t *testing.T) {
	ctx := context.Background()
	ns := newNameserver("127.0.0.1:53", 2*time.Second, 1024)
	// A first flight of 256 queries in flight, answered without a hole:
	// each answer grows the window by fastGrowth, up to MaxInFlight.
	for range initialWindow {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		ns.track(time.Now()).done.Store(true)
	}
	for range initialWindow {
		ns.answered(time.Now(), false)
	}
	if ns.fast || ns.limit() != 1024 {
		t.Fatalf("after the first flight: window %d, first flight %v; want 1024 and over", ns.limit(), ns.fast)
	}
	// A trickle: a few queries at a time, never restartBurst in flight.
	for range 50 {
		for range 3 {
			if err := ns.acquire(ctx, false); err != nil {
				t.Fatal(err)
			}
		}
		for range 3 {
			ns.answered(time.Now(), false)
		}
	}
	if ns.fast || ns.limit() < 1024 {
		t.Fatalf("after a trickle: window %d, first flight %v; want 1024 and no flight", ns.limit(), ns.fast)
	}
	// A burst: the restartBurst-th query in flight begins a first flight
	// at initialWindow.
	for i := range restartBurst {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
		if want := i == restartBurst-1; ns.fast != want {
			t.Fatalf("query %d of a burst in flight: first flight %v, want %v", i+1, ns.fast, want)
		}
	}
	if got := ns.limit(); got != initialWindow {
		t.Fatalf("window at a burst after idle: %d; want %d", got, initialWindow)
	}
	// The burst's answers come without a hole: the window quadruples
	// back towards MaxInFlight, and once nothing is in flight the flight
	// is over.
	for range restartBurst {
		ns.answered(time.Now(), false)
	}
	if want := initialWindow + fastGrowth*restartBurst; ns.fast || ns.limit() != want {
		t.Fatalf("after the burst: window %d, first flight %v; want %d and over", ns.limit(), ns.fast, want)
	}
	// A server that showed it takes few: a burst after idle starts from
	// the window as it is, not from initialWindow.
	ns.mu.Lock()
	ns.cwnd, ns.idle = 40, true
	ns.mu.Unlock()
	for range 40 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	if got := ns.limit(); !ns.fast || got != 40 {
		t.Fatalf("burst after idle with a window of 40: window %d, first flight %v; want 40 and a flight", got, ns.fast)
	}
}

// A query waiting for a place at a server whose RTO doubles (it stopped
// answering) leaves the queue, so that it can go to another server; one
// that may not leave, and the places in flight, stay.
func TestWaiterLeavesServerThatWentSilent(t *testing.T) {
	ns := newNameserver("127.0.0.1:53", 10*time.Second, 2)
	ctx := context.Background()
	sent := time.Now()
	for range 2 {
		if err := ns.acquire(ctx, false); err != nil {
			t.Fatal(err)
		}
	}
	leaving := make(chan bool, 1)
	go func() {
		slower, err := ns.acquireOrLeave(ctx, false, true)
		if err != nil {
			t.Error(err)
		}
		leaving <- slower
	}()
	waitCond(t, func() bool { return ns.stats().Waiting == 1 })
	staying := make(chan bool, 1)
	go func() {
		slower, err := ns.acquireOrLeave(ctx, false, false)
		if err != nil {
			t.Error(err)
		}
		staying <- slower
	}()
	waitCond(t, func() bool { return ns.stats().Waiting == 2 })
	if _, silent := ns.standing(); silent {
		t.Fatal("silent before any timeout")
	}

	// Nothing answered since the query was sent: the server may have
	// stopped answering, its RTO doubles, and it has gone silent.
	ns.timedOut(sent, false)
	if !<-leaving {
		t.Fatal("the waiter that may leave was granted instead of leaving")
	}
	if rto, silent := ns.standing(); !silent || rto != 2*initialRTO {
		t.Fatalf("after the timeout: RTO %v, silent %v; want %v and silent", rto, silent, 2*initialRTO)
	}
	// The place the timeout gave back went to the waiter that stays.
	if slower := <-staying; slower {
		t.Fatal("the waiter that may not leave left")
	}
	if st := ns.stats(); st.InFlight != 2 || st.Waiting != 0 {
		t.Fatalf("stats %+v; want 2 in flight, none waiting", st)
	}
	// An answer ends the silence.
	ns.answered(time.Now(), false)
	if _, silent := ns.standing(); silent {
		t.Fatal("still silent after an answer")
	}
}

// pick prefers a server that answers to one that went silent, however
// their RTOs compare, and goes back to the RTO band when all are silent.
func TestPickPassesOverSilentServer(t *testing.T) {
	server := func(rto time.Duration, silent bool) *nameserver {
		ns := newNameserver("127.0.0.1:53", 10*time.Second, 16)
		ns.rto, ns.silent = rto, silent
		ns.backoff = time.Now() // gone silent just now: no probe due
		return ns
	}
	cases := []struct {
		name     string
		seq      []*nameserver
		tries    []int
		failover bool
		want     int
	}{
		// A dead server backed off from its first guess (800 ms) beside
		// one measured slow on a loaded host (1.5 s): the answering one.
		{"silentLowerRTO", []*nameserver{server(800*time.Millisecond, true), server(1500*time.Millisecond, false)}, []int{1, 0}, false, 1},
		{"silentUntried", []*nameserver{server(800*time.Millisecond, true), server(1500*time.Millisecond, false)}, []int{0, 1}, false, 1},
		// Both answering: the RTO band, then the fewer tries.
		{"bandFewerTries", []*nameserver{server(800*time.Millisecond, false), server(1100*time.Millisecond, false)}, []int{1, 0}, false, 1},
		{"outOfBand", []*nameserver{server(800*time.Millisecond, false), server(1500*time.Millisecond, false)}, []int{1, 0}, false, 0},
		// All silent: as if none were.
		{"allSilent", []*nameserver{server(800*time.Millisecond, true), server(3200*time.Millisecond, true)}, []int{1, 0}, false, 0},
		// A failover (a server failed outright) asks the one asked least.
		{"failover", []*nameserver{server(800*time.Millisecond, true), server(1500*time.Millisecond, false)}, []int{0, 1}, true, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := pick(c.seq, c.tries, c.failover); got != c.want {
				t.Fatalf("pick = %d; want %d", got, c.want)
			}
		})
	}
}

// A server gone silent is probed once its RTO has passed since it went
// silent: one query of those picking at once goes to it, if it is among
// those answering about as fast as the fastest, and the next probe is due
// an RTO later.
func TestPickProbesSilentServer(t *testing.T) {
	silent := newNameserver("127.0.0.1:53", 10*time.Second, 16)
	// An RTO of a second: the second pick comes well within it, however
	// busy the machine.
	silent.rto, silent.silent = time.Second, true
	silent.backoff = time.Now().Add(-2 * time.Second)
	slow := newNameserver("127.0.0.1:54", 10*time.Second, 16)
	slow.rto = 1500 * time.Millisecond
	seq, tries := []*nameserver{slow, silent}, []int{0, 0}
	if got := pick(seq, tries, false); got != 1 {
		t.Fatalf("first pick after the silent server's RTO passed = %d; want the probe, 1", got)
	}
	if got := pick(seq, tries, false); got != 0 {
		t.Fatalf("second pick = %d; want 0: the probe was taken", got)
	}
	silent.mu.Lock()
	silent.probed = time.Now().Add(-2 * time.Second)
	silent.mu.Unlock()
	if got := pick(seq, tries, false); got != 1 {
		t.Fatalf("pick an RTO after the probe = %d; want the next probe, 1", got)
	}
	// Out of the band of the one that answers: no probe, none taken.
	silent.mu.Lock()
	silent.rto, silent.probed = 5*time.Second, time.Time{}
	silent.backoff = time.Now().Add(-time.Minute)
	silent.mu.Unlock()
	if got := pick(seq, tries, false); got != 0 {
		t.Fatalf("pick with the silent server out of band = %d; want 0", got)
	}
	if !silent.probed.IsZero() {
		t.Fatal("a probe was taken by a query that went elsewhere")
	}
}
