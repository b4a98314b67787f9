package mail

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	netmail "net/mail"
	"net/smtp"
	"time"
)

// ErrRelayConfig reports a [RelayConfig] that cannot work.
var ErrRelayConfig = errors.New("mail: invalid relay configuration")

// DefaultRelayTimeout bounds one message's delivery to the relay when
// [RelayConfig.Timeout] is zero.
const DefaultRelayTimeout = 30 * time.Second

// RelayConfig configures a [Relay].
type RelayConfig struct {
	// Addr is the relay's host:port (port 587 or 25 usually); required.
	Addr string
	// From is the sender: an address the relay may send from, with or
	// without a display name ("Validmail <no-reply@example.com>");
	// required.
	From string
	// HELO is the name said in EHLO. Default "localhost".
	HELO string
	// Username and Password, when Username is set, authenticate with
	// AUTH PLAIN, which is sent only over TLS or to a loopback relay.
	Username, Password string
	// TLS configures STARTTLS. Default: the certificate is verified for
	// Addr's host.
	TLS *tls.Config
	// Timeout bounds one message's delivery. Default
	// [DefaultRelayTimeout].
	Timeout time.Duration
	// Now is the clock of the Date header. Default time.Now.
	Now func() time.Time
}

// Relay is a [Mailer] that hands each message to an SMTP relay over a
// new connection (the standard library's net/smtp client): STARTTLS
// whenever the relay offers it (a failed handshake fails the message; it
// is never retried in clear), AUTH PLAIN when configured, SMTPUTF8 when
// an address needs it. Delivery
// beyond the relay is the relay's job. Create one with [NewRelay].
type Relay struct {
	cfg  RelayConfig
	from *netmail.Address
	host string
}

// NewRelay returns a Relay, or an error wrapping [ErrRelayConfig].
func NewRelay(cfg RelayConfig) (*Relay, error) {
	host, port, err := net.SplitHostPort(cfg.Addr)
	if err != nil || host == "" || port == "" {
		return nil, fmt.Errorf("%w: relay address %q: want host:port", ErrRelayConfig, cfg.Addr)
	}
	from, err := netmail.ParseAddress(cfg.From)
	if err != nil {
		return nil, fmt.Errorf("%w: sender %q: %v", ErrRelayConfig, cfg.From, err)
	}
	cfg.HELO = cmp.Or(cfg.HELO, "localhost")
	cfg.Timeout = cmp.Or(cfg.Timeout, DefaultRelayTimeout)
	if cfg.TLS == nil {
		cfg.TLS = &tls.Config{ServerName: host, MinVersion: tls.VersionTLS12}
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	return &Relay{cfg: cfg, from: from, host: host}, nil
}

// From returns the sender's address.
func (r *Relay) From() string { return r.from.Address }

// Send implements [Mailer].
func (r *Relay) Send(ctx context.Context, m Message) error {
	if err := m.Check(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", r.cfg.Addr)
	if err != nil {
		return fmt.Errorf("mail: relay %s: %w", r.cfg.Addr, err)
	}
	// The whole conversation ends with ctx: its deadline bounds every
	// read and write, and a cancellation closes the connection.
	if dl, ok := ctx.Deadline(); ok {
		conn.SetDeadline(dl)
	}
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	err = r.converse(conn, m)
	if ctx.Err() != nil {
		err = fmt.Errorf("mail: relay %s: %w (%v)", r.cfg.Addr, context.Cause(ctx), err)
	}
	return err
}

func (r *Relay) converse(conn net.Conn, m Message) error {
	fail := func(step string, err error) error { return fmt.Errorf("mail: relay %s: %s: %w", r.cfg.Addr, step, err) }
	c, err := smtp.NewClient(conn, r.host)
	if err != nil {
		return fail("greeting", err)
	}
	defer c.Close()
	if err := c.Hello(r.cfg.HELO); err != nil {
		return fail("EHLO", err)
	}
	if ok, _ := c.Extension("STARTTLS"); ok {
		if err := c.StartTLS(r.cfg.TLS); err != nil {
			return fail("STARTTLS", err)
		}
	}
	if r.cfg.Username != "" {
		// PlainAuth itself refuses to send the password without TLS to
		// anything but localhost.
		if err := c.Auth(smtp.PlainAuth("", r.cfg.Username, r.cfg.Password, r.host)); err != nil {
			return fail("AUTH", err)
		}
	}
	if ok, _ := c.Extension("SMTPUTF8"); !ok && needsUTF8(r.from.Address, m.To) {
		return fail("MAIL", errors.New("the address needs SMTPUTF8, which the relay does not offer"))
	}
	// Mail asks for SMTPUTF8 and 8BITMIME itself when the relay offers them.
	if err := c.Mail(r.from.Address); err != nil {
		return fail("MAIL", err)
	}
	if err := c.Rcpt(m.To); err != nil {
		return fail("RCPT", err)
	}
	w, err := c.Data()
	if err != nil {
		return fail("DATA", err)
	}
	if _, err := bytes.NewReader(compose(m, r.from, r.cfg.Now())).WriteTo(w); err != nil {
		w.Close()
		return fail("DATA", err)
	}
	if err := w.Close(); err != nil {
		return fail("DATA", err)
	}
	c.Quit()
	return nil
}
