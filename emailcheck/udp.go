package emailcheck

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"sync"

	"github.com/miekg/dns"
)

// Shape of the UDP sockets a resolver keeps for each nameserver.
const (
	// udpSockets is how many connected sockets a nameserver's queries are
	// spread over: enough that a burst of answers to MaxInFlight queries
	// never fills one socket's receive buffer.
	udpSockets = 16
	// udpQueriesPerSocket is how many queries a socket sends before it is
	// replaced by a new one, on a new random source port, so that no port
	// is in use for long (an attacker guessing a port has a moving target,
	// RFC 5452 §9.2).
	udpQueriesPerSocket = 256
	// udpReadSize is the largest answer read: more than the size we
	// advertise, for servers that ignore it (a longer datagram is cut
	// short, fails to unpack, and the query is retried).
	udpReadSize = 4096
	// headerSize is the length of a DNS message's header.
	headerSize = 12
)

// errTransportClosed is returned by a transport used after the validator
// closed it.
var errTransportClosed = errors.New("emailcheck: dns: transport closed")

// udpTransport sends a nameserver's queries over a few long-lived
// connected UDP sockets instead of one new socket per query: a reader per
// socket hands each answer to the query waiting for it, matched by message
// id and question. Only answers from the nameserver reach a connected
// socket, and one that matches no pending query (late, duplicate, forged)
// is dropped. Sockets are replaced after udpQueriesPerSocket queries, so
// source ports keep changing; the kernel picks each one at random.
type udpTransport struct {
	server string

	mu     sync.Mutex
	raddr  *net.UDPAddr
	socks  [udpSockets]*udpSocket
	next   int
	closed bool
}

func newUDPTransport(server string) *udpTransport {
	return &udpTransport{server: server}
}

// udpSocket is one connected socket and the queries waiting on it.
type udpSocket struct {
	t    *udpTransport
	conn *net.UDPConn

	mu      sync.Mutex
	pending map[uint16]*udpQuery
	sent    int
	retired bool  // no new queries; closed once the last one ends
	failed  error // why the socket's read failed (a refusal), once it has
}

// udpQuery is a query waiting for its answer.
type udpQuery struct {
	question []byte // the query's question section, as sent
	tag      int
	// result receives the answer, or the socket's failure, once; the
	// sender gives it room for every query delivering to it.
	result chan<- udpResult
}

// udpResult is the outcome of one query sent over UDP: the answer's wire
// form, or why none will come.
type udpResult struct {
	tag  int // the sender's tag for the query
	wire []byte
	err  error
}

// udpCall is a query sent and waiting on a socket.
type udpCall struct {
	s  *udpSocket
	id uint16
}

// forget stops waiting: a late answer is dropped.
func (c udpCall) forget() { c.s.forget(c.id) }

// send sends m (its id is overwritten) and files it so that its answer,
// or the socket's failure, is delivered to result under tag. The caller
// forgets the call when it no longer waits.
func (t *udpTransport) send(m *dns.Msg, tag int, result chan<- udpResult) (udpCall, error) {
	q := &udpQuery{tag: tag, result: result}
	s, id, err := t.register(q)
	if err != nil {
		return udpCall{}, err
	}
	m.Id = id
	wire, err := m.Pack()
	if err != nil {
		s.forget(id)
		return udpCall{}, err
	}
	end := questionEnd(wire)
	if end < 0 {
		s.forget(id)
		return udpCall{}, fmt.Errorf("emailcheck: dns: cannot read back the question of %s", m.Question[0].Name)
	}
	s.mu.Lock()
	q.question = wire[headerSize:end]
	s.mu.Unlock()
	if _, err := s.conn.Write(wire); err != nil {
		s.forget(id)
		s.fail(err)
		if errors.Is(err, net.ErrClosed) {
			err = errTransportClosed
			// Closed under it by its reader's failure: that failure
			// (the port refusing) is the cause.
			s.mu.Lock()
			if s.failed != nil {
				err = s.failed
			}
			s.mu.Unlock()
		}
		return udpCall{}, err
	}
	return udpCall{s: s, id: id}, nil
}

// errUDPTimeout is the error of an exchange whose answer did not come in
// time.
var errUDPTimeout = timeoutError{}

// timeoutError is a net.Error whose Timeout is true.
type timeoutError struct{}

func (timeoutError) Error() string   { return "emailcheck: dns: i/o timeout" }
func (timeoutError) Timeout() bool   { return true }
func (timeoutError) Temporary() bool { return true }

// register files q on the socket the next query goes out on, opening one
// where none is open or the previous one retired or failed, and returns
// the socket and the query's message id.
func (t *udpTransport) register(q *udpQuery) (*udpSocket, uint16, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		return nil, 0, errTransportClosed
	}
	i := t.next
	t.next = (t.next + 1) % udpSockets
	if s := t.socks[i]; s != nil {
		if id, ok := s.register(q); ok {
			return s, id, nil
		}
	}
	if t.raddr == nil {
		raddr, err := net.ResolveUDPAddr("udp", t.server)
		if err != nil {
			return nil, 0, err
		}
		t.raddr = raddr
	}
	conn, err := net.DialUDP("udp", nil, t.raddr)
	if err != nil {
		return nil, 0, err
	}
	s := &udpSocket{t: t, conn: conn, pending: make(map[uint16]*udpQuery)}
	go s.read()
	t.socks[i] = s
	id, _ := s.register(q) // a new socket takes it
	return s, id, nil
}

// close closes every socket; queries still waiting fail.
func (t *udpTransport) close() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	for i, s := range t.socks {
		if s != nil {
			s.conn.Close()
			t.socks[i] = nil
		}
	}
}

// register files q under a random message id no other query on the socket
// uses, and returns the id; false when the socket takes no new queries.
// The socket retires once it has sent its share of queries.
func (s *udpSocket) register(q *udpQuery) (uint16, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.retired {
		return 0, false
	}
	id := uint16(rand.Uint32())
	for s.pending[id] != nil {
		id = uint16(rand.Uint32())
	}
	s.pending[id] = q
	s.sent++
	if s.sent >= udpQueriesPerSocket {
		s.retired = true
	}
	return id, true
}

// forget removes the query filed under id, and closes a retired socket
// nobody waits on any more.
func (s *udpSocket) forget(id uint16) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.pending, id)
	if s.retired && len(s.pending) == 0 {
		s.conn.Close()
	}
}

// fail ends the socket after a failed write: its reader stops and the
// queries waiting on it fail at once, with cause.
func (s *udpSocket) fail(cause error) {
	s.mu.Lock()
	s.retired = true
	if s.failed == nil && !errors.Is(cause, net.ErrClosed) {
		s.failed = cause
	}
	s.mu.Unlock()
	s.conn.Close()
}

// read hands each answer to the query it answers until the socket fails or
// is closed. An error on a connected UDP socket (the nameserver's port
// unreachable) cannot be told apart by query, so it fails the socket and
// every query on it, at once rather than at their timeouts.
func (s *udpSocket) read() {
	buf := make([]byte, udpReadSize)
	for {
		n, err := s.conn.Read(buf)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				err = errTransportClosed
			}
			s.mu.Lock()
			s.retired = true
			switch {
			case !errors.Is(err, errTransportClosed):
				s.failed = err
			case s.failed != nil:
				err = s.failed // closed by a failed write: its cause
			}
			pending := s.pending
			s.pending = make(map[uint16]*udpQuery)
			s.mu.Unlock()
			s.conn.Close()
			for _, q := range pending {
				q.result <- udpResult{tag: q.tag, err: err}
			}
			return
		}
		if n < headerSize {
			continue
		}
		wire := buf[:n]
		id := binary.BigEndian.Uint16(wire)
		s.mu.Lock()
		q := s.pending[id]
		if q != nil && q.question != nil && sameQuestion(wire, q.question) {
			delete(s.pending, id)
		} else {
			q = nil
		}
		s.mu.Unlock()
		if q != nil {
			q.result <- udpResult{tag: q.tag, wire: bytes.Clone(wire)}
		}
	}
}

// questionEnd returns the offset just past the single question of the
// DNS message wire, or -1 when it cannot be read. Our queries' names are
// never compressed.
func questionEnd(wire []byte) int {
	i := headerSize
	for i < len(wire) {
		l := int(wire[i])
		switch {
		case l == 0:
			if end := i + 1 + 4; end <= len(wire) {
				return end
			}
			return -1
		case l&0xC0 != 0:
			return -1
		}
		i += 1 + l
	}
	return -1
}

// sameQuestion reports whether the answer wire carries exactly one
// question, equal to question but for the case of ASCII letters in the
// name (a server may change it, RFC 4343).
func sameQuestion(wire, question []byte) bool {
	if binary.BigEndian.Uint16(wire[4:]) != 1 || len(wire) < headerSize+len(question) {
		return false
	}
	got := wire[headerSize : headerSize+len(question)]
	name := len(question) - 4
	for i := range name {
		a, b := got[i], question[i]
		if a != b && lowerASCII(a) != lowerASCII(b) {
			return false
		}
	}
	return string(got[name:]) == string(question[name:])
}

func lowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
