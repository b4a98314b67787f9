package dnstest

import (
	"net"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// Proxy forwards UDP queries to a nameserver and its answers back, and
// drops what a test says: every n-th query (a lossy path), or every
// query and answer while it is dead (a resolver that stopped answering
// with its socket still open, no ICMP error).
type Proxy struct {
	conn      *net.UDPConn
	target    *net.UDPAddr
	dropEvery atomic.Int64
	dead      atomic.Bool
	received  atomic.Int64
}

// StartProxy starts a proxy on a loopback port in front of target
// ("host:port") and closes it when the test ends.
func StartProxy(tb testing.TB, target string) *Proxy {
	tb.Helper()
	up, err := net.ResolveUDPAddr("udp", target)
	if err != nil {
		tb.Fatal(err)
	}
	conn, err := net.ListenUDP("udp", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		tb.Fatal(err)
	}
	p := &Proxy{conn: conn, target: up}
	tb.Cleanup(func() { conn.Close() })
	go p.serve()
	return p
}

// Addr returns the proxy's address, as "host:port".
func (p *Proxy) Addr() string { return p.conn.LocalAddr().String() }

// SetDropEvery drops every n-th query received from now on; 0 drops none.
func (p *Proxy) SetDropEvery(n int) { p.dropEvery.Store(int64(max(n, 0))) }

// SetDead makes the proxy drop every query, and every answer that comes
// back, while dead is set.
func (p *Proxy) SetDead(dead bool) { p.dead.Store(dead) }

// Received returns how many queries reached the proxy, dropped or not.
func (p *Proxy) Received() int64 { return p.received.Load() }

func (p *Proxy) serve() {
	buf := make([]byte, 65536)
	for {
		n, from, err := p.conn.ReadFromUDP(buf)
		if err != nil {
			return
		}
		k := p.received.Add(1)
		if every := p.dropEvery.Load(); p.dead.Load() || every > 0 && k%every == 0 {
			continue
		}
		go p.forward(slices.Clone(buf[:n]), from)
	}
}

// forward sends one query to the target on a socket of its own and
// relays the answer, if one comes within 10 s.
func (p *Proxy) forward(query []byte, from *net.UDPAddr) {
	c, err := net.DialUDP("udp", nil, p.target)
	if err != nil {
		return
	}
	defer c.Close()
	if _, err := c.Write(query); err != nil {
		return
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	answer := make([]byte, 65536)
	n, err := c.Read(answer)
	if err == nil && !p.dead.Load() {
		p.conn.WriteToUDP(answer[:n], from)
	}
}
