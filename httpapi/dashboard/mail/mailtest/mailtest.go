// Package mailtest runs an SMTP server on loopback that keeps what it
// receives, for tests of code that sends mail through a relay.
package mailtest

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"mime"
	"mime/quotedprintable"
	"net"
	netmail "net/mail"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/emersion/go-smtp"
)

// Received is one message as the server took it.
type Received struct {
	// From and To are the envelope's sender and recipients.
	From string
	To   []string
	// Data is the message as sent.
	Data []byte
}

// Header returns the decoded value of the message's header field.
func (r Received) Header(name string) string {
	m, err := netmail.ReadMessage(strings.NewReader(string(r.Data)))
	if err != nil {
		return ""
	}
	v, err := new(mime.WordDecoder).DecodeHeader(m.Header.Get(name))
	if err != nil {
		return ""
	}
	return v
}

// Text returns the message's body, decoded from quoted-printable when
// it is so encoded, with "\n" line ends.
func (r Received) Text() string {
	m, err := netmail.ReadMessage(strings.NewReader(string(r.Data)))
	if err != nil {
		return ""
	}
	var body io.Reader = m.Body
	if strings.EqualFold(m.Header.Get("Content-Transfer-Encoding"), "quoted-printable") {
		body = quotedprintable.NewReader(body)
	}
	b, _ := io.ReadAll(body)
	return strings.ReplaceAll(string(b), "\r\n", "\n")
}

// Server is an SMTP server on 127.0.0.1 that accepts every message.
type Server struct {
	// Addr is the server's host:port.
	Addr string

	srv     *smtp.Server
	mu      sync.Mutex
	msgs    []Received
	changed chan struct{} // closed and replaced at each message
	refuse  error
}

// Start starts a server, offering STARTTLS when tlsConfig is set, and
// stops it when the test ends.
func Start(t testing.TB, tlsConfig *tls.Config) *Server {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &Server{Addr: ln.Addr().String(), changed: make(chan struct{})}
	s.srv = smtp.NewServer(smtp.BackendFunc(func(*smtp.Conn) (smtp.Session, error) { return &session{s: s}, nil }))
	s.srv.Domain = "localhost"
	s.srv.TLSConfig = tlsConfig
	s.srv.AllowInsecureAuth = false
	s.srv.ReadTimeout = time.Minute
	s.srv.WriteTimeout = time.Minute
	s.srv.EnableSMTPUTF8 = true
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.srv.Serve(ln)
	}()
	t.Cleanup(func() {
		// Closing the listener ends Serve even before it has registered
		// the listener with the server.
		ln.Close()
		s.srv.Close()
		<-done
	})
	return s
}

// Refuse makes the server answer every message's DATA with err (nil
// accepts again).
func (s *Server) Refuse(err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.refuse = err
}

// Messages returns the messages received so far, oldest first.
func (s *Server) Messages() []Received {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Received(nil), s.msgs...)
}

// WaitFor returns the first message to the recipient whose text
// contains substr, waiting for it until ctx ends.
func (s *Server) WaitFor(ctx context.Context, to, substr string) (Received, error) {
	for {
		s.mu.Lock()
		ch := s.changed
		for _, m := range s.msgs {
			for _, rcpt := range m.To {
				if strings.EqualFold(rcpt, to) && strings.Contains(m.Text(), substr) {
					s.mu.Unlock()
					return m, nil
				}
			}
		}
		s.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return Received{}, errors.New("mailtest: no message to " + to + " containing " + substr)
		}
	}
}

type session struct {
	s    *Server
	from string
	to   []string
}

func (x *session) Reset()        { x.from, x.to = "", nil }
func (x *session) Logout() error { return nil }
func (x *session) Mail(from string, _ *smtp.MailOptions) error {
	x.from = from
	return nil
}
func (x *session) Rcpt(to string, _ *smtp.RcptOptions) error {
	x.to = append(x.to, to)
	return nil
}
func (x *session) Data(r io.Reader) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refuse != nil {
		return s.refuse
	}
	s.msgs = append(s.msgs, Received{From: x.from, To: x.to, Data: b})
	close(s.changed)
	s.changed = make(chan struct{})
	return nil
}
