package emailcheck

import (
	"context"
	"errors"
	"fmt"
	"net"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// udpServer is a nameserver on loopback that answers every question with
// one A record, after the answers forge gives it (sent first, in order),
// and records the source port of every query.
type udpServer struct {
	conn *net.UDPConn
	// forge returns datagrams to send before the real answer.
	forge func(q *dns.Msg) []*dns.Msg

	mu    sync.Mutex
	ports map[int]int // source port → queries
}

func startUDPServer(t *testing.T, forge func(q *dns.Msg) []*dns.Msg) *udpServer {
	t.Helper()
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	s := &udpServer{conn: conn, forge: forge, ports: make(map[int]int)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		buf := make([]byte, 4096)
		for {
			n, from, err := conn.ReadFromUDP(buf)
			if err != nil {
				return
			}
			q := new(dns.Msg)
			if q.Unpack(buf[:n]) != nil {
				continue
			}
			s.mu.Lock()
			s.ports[from.Port]++
			s.mu.Unlock()
			var out []*dns.Msg
			if s.forge != nil {
				out = s.forge(q)
			}
			a := new(dns.Msg)
			a.SetReply(q)
			rr, _ := dns.NewRR(q.Question[0].Name + " 60 IN A 192.0.2.1")
			a.Answer = append(a.Answer, rr)
			for _, m := range append(out, a) {
				wire, err := m.Pack()
				if err == nil {
					_, _ = conn.WriteToUDP(wire, from)
				}
			}
		}
	}()
	t.Cleanup(func() { conn.Close(); <-done })
	return s
}

func (s *udpServer) addr() string { return s.conn.LocalAddr().String() }

// sourcePorts returns how many distinct source ports queries came from.
func (s *udpServer) sourcePorts() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.ports)
}

func query(name string) *dns.Msg {
	m := new(dns.Msg)
	m.SetQuestion(name, dns.TypeA)
	m.SetEdns0(ednsBufferSize, false)
	return m
}

func TestUDPSocketsReused(t *testing.T) {
	srv := startUDPServer(t, nil)
	tr := newUDPTransport(srv.addr())
	defer tr.close()
	ctx := context.Background()
	const n = 1000
	var wg sync.WaitGroup
	errs := make(chan error, n)
	// 50 in flight, as a resolver bounds them: enough to share every
	// socket, few enough for the test server's receive buffer.
	sem := make(chan struct{}, 50)
	for i := range n {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			name := fmt.Sprintf("d%d.example.", i)
			resp, err := tr.exchange(ctx, query(name), time.Minute)
			if err == nil && (len(resp.Answer) != 1 || resp.Answer[0].Header().Name != name) {
				err = fmt.Errorf("%s: answer %v", name, resp.Answer)
			}
			if err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	// 16 sockets, each replaced after 256 queries: 1,000 queries take
	// between 4 and 16 + 4 ports, never one per query.
	ports := srv.sourcePorts()
	t.Logf("%d queries from %d source ports", n, ports)
	if ports < n/udpQueriesPerSocket || ports > udpSockets+n/udpQueriesPerSocket+1 {
		t.Fatalf("%d source ports for %d queries; want between %d and %d", ports, n, n/udpQueriesPerSocket, udpSockets+n/udpQueriesPerSocket+1)
	}
}

func TestUDPSourcePortsChange(t *testing.T) {
	srv := startUDPServer(t, nil)
	tr := newUDPTransport(srv.addr())
	defer tr.close()
	const n = 3 * udpSockets * udpQueriesPerSocket
	sockets := map[*udpSocket]bool{}
	for i := range n {
		if _, err := tr.exchange(context.Background(), query(fmt.Sprintf("s%d.example.", i)), time.Minute); err != nil {
			t.Fatal(err)
		}
		tr.mu.Lock()
		for _, s := range tr.socks {
			if s != nil {
				sockets[s] = true
			}
		}
		tr.mu.Unlock()
	}
	// Each socket retires after its share and a new one takes its place.
	for s := range sockets {
		s.mu.Lock()
		sent := s.sent
		s.mu.Unlock()
		if sent > udpQueriesPerSocket {
			t.Errorf("a socket sent %d queries; at most %d", sent, udpQueriesPerSocket)
		}
	}
	if want := n / udpQueriesPerSocket; len(sockets) < want {
		t.Errorf("%d sockets for %d queries; want at least %d", len(sockets), n, want)
	}
	// And the server saw the source port change: the kernel picks each
	// new socket's port at random, and may pick one again.
	if ports, want := srv.sourcePorts(), n/udpQueriesPerSocket/2; ports < want {
		t.Errorf("%d source ports for %d queries; want at least %d", ports, n, want)
	}
}

// TestUDPForgedAnswersIgnored: datagrams that do not answer the pending
// query (another id, another name, another type, more than one question)
// are dropped, and the real answer that follows is taken.
func TestUDPForgedAnswersIgnored(t *testing.T) {
	forge := func(q *dns.Msg) []*dns.Msg {
		var out []*dns.Msg
		reply := func(edit func(m *dns.Msg)) {
			m := new(dns.Msg)
			m.SetReply(q)
			rr, _ := dns.NewRR(q.Question[0].Name + " 60 IN A 203.0.113.66")
			m.Answer = []dns.RR{rr}
			edit(m)
			out = append(out, m)
		}
		reply(func(m *dns.Msg) { m.Id++ })
		reply(func(m *dns.Msg) { m.Question[0].Name = "evil." + m.Question[0].Name })
		reply(func(m *dns.Msg) { m.Question[0].Qtype = dns.TypeAAAA })
		reply(func(m *dns.Msg) { m.Question = append(m.Question, m.Question[0]) })
		reply(func(m *dns.Msg) { m.Question = nil })
		return out
	}
	srv := startUDPServer(t, forge)
	tr := newUDPTransport(srv.addr())
	defer tr.close()
	for _, name := range []string{"a.example.", "MiXeD.Example."} {
		resp, err := tr.exchange(context.Background(), query(name), time.Minute)
		if err != nil {
			t.Fatal(err)
		}
		if a, ok := resp.Answer[0].(*dns.A); !ok || a.A.String() != "192.0.2.1" {
			t.Fatalf("%s: took %v; want the real answer", name, resp.Answer)
		}
	}
}

// TestUDPCaseChangedQuestion: a server may answer with the name's letters
// in another case; the answer is still taken.
func TestUDPCaseChangedQuestion(t *testing.T) {
	if !sameQuestion(append(make([]byte, headerSize-8), 0, 1, 0, 0, 0, 0, 0, 0, 3, 'F', 'o', 'O', 0, 0, 1, 0, 1),
		[]byte{3, 'f', 'o', 'o', 0, 0, 1, 0, 1}) {
		t.Error("a question differing in case is refused")
	}
	if sameQuestion(append(make([]byte, headerSize-8), 0, 1, 0, 0, 0, 0, 0, 0, 3, 'f', 'o', 'o', 0, 0, 28, 0, 1),
		[]byte{3, 'f', 'o', 'o', 0, 0, 1, 0, 1}) {
		t.Error("a question of another type is taken")
	}
}

// TestUDPRefusedFailsFast: a nameserver whose port is closed makes the
// query fail at once (ICMP port unreachable), not at its timeout.
func TestUDPRefusedFailsFast(t *testing.T) {
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	addr := conn.LocalAddr().String()
	conn.Close()
	tr := newUDPTransport(addr)
	defer tr.close()
	for i := range 3 {
		start := time.Now()
		_, err := tr.exchange(context.Background(), query("x.example."), time.Hour)
		if err == nil {
			t.Fatal("a closed port answered")
		}
		if d := time.Since(start); d > time.Minute { // the timeout would take an hour
			t.Fatalf("attempt %d: failed after %v; want at once", i, d)
		}
	}
}

// TestUDPClose: queries waiting when the transport closes fail, later ones
// are refused, and no reader outlives it.
func TestUDPClose(t *testing.T) {
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	before := runtime.NumGoroutine()
	tr := newUDPTransport(silent.LocalAddr().String())
	errc := make(chan error, 20)
	for i := range 20 {
		go func() {
			_, err := tr.exchange(context.Background(), query(fmt.Sprintf("w%d.example.", i)), time.Hour)
			errc <- err
		}()
	}
	// Close once every query waits.
	for deadline := time.Now().Add(time.Minute); tr.pending() < 20; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d queries waiting after a minute; want 20", tr.pending())
		}
	}
	tr.close()
	for range 20 {
		select {
		case err := <-errc:
			if !errors.Is(err, errTransportClosed) {
				t.Fatalf("waiting query ended with %v; want errTransportClosed", err)
			}
		case <-time.After(time.Minute):
			t.Fatal("a waiting query outlived the transport")
		}
	}
	if _, err := tr.exchange(context.Background(), query("late.example."), time.Second); !errors.Is(err, errTransportClosed) {
		t.Fatalf("query after close: %v; want errTransportClosed", err)
	}
	deadline := time.Now().Add(time.Minute)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after close; %d before", n, before)
	}
}

// TestUDPCancelled: a query whose context ends returns at once, and its
// late answer is dropped without harm.
func TestUDPCancelled(t *testing.T) {
	silent, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	tr := newUDPTransport(silent.LocalAddr().String())
	defer tr.close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := tr.exchange(ctx, query("c.example."), time.Hour); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v; want the context's", err)
	}
	if d := time.Since(start); d > time.Minute { // the timeout would take an hour
		t.Fatalf("returned after %v", d)
	}
}

// pending returns how many queries wait on the transport's sockets.
func (t *udpTransport) pending() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for _, s := range t.socks {
		if s != nil {
			s.mu.Lock()
			n += len(s.pending)
			s.mu.Unlock()
		}
	}
	return n
}

// exchange sends m and waits for the answer until ctx ends or timeout
// passes.
func (t *udpTransport) exchange(ctx context.Context, m *dns.Msg, timeout time.Duration) (*dns.Msg, error) {
	result := make(chan udpResult, 1)
	call, err := t.send(m, 0, result)
	if err != nil {
		return nil, err
	}
	defer call.forget()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case r := <-result:
		if r.err != nil {
			return nil, r.err
		}
		resp := new(dns.Msg)
		if err := resp.Unpack(r.wire); err != nil {
			return nil, err
		}
		return resp, nil
	case <-timer.C:
		return nil, errUDPTimeout
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}
