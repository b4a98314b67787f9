// Package mail sends the console's messages (an email confirmation, a
// password reset link) through a [Mailer]: a [Relay] hands them to an
// SMTP relay the operator runs or rents, and a [Log] writes them to a
// log, for development.
//
// Messages are plain text in UTF-8, quoted-printable, with one recipient;
// [Message.Check] refuses what could smuggle a header in.
package mail

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"mime/quotedprintable"
	netmail "net/mail"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/google/uuid"
)

// ErrInvalidMessage reports a message that cannot be sent as it is: no
// recipient, a recipient that is not one plain address, or a line break
// or invalid UTF-8 in a header.
var ErrInvalidMessage = errors.New("mail: invalid message")

// Message is one plain-text message to one recipient.
type Message struct {
	// To is the recipient's address, without a display name.
	To string
	// Subject is the subject line, one line of UTF-8.
	Subject string
	// Body is the text, UTF-8; lines end with "\n".
	Body string
}

// Mailer sends messages. Send returns once the message is accepted for
// delivery (by a relay, or written to a log), or with the reason it was
// not; it honours ctx. A Mailer may be called from many goroutines.
type Mailer interface {
	Send(ctx context.Context, m Message) error
}

// Check reports whether m can be sent: an error wrapping
// [ErrInvalidMessage] if not.
func (m Message) Check() error {
	a, err := netmail.ParseAddress(m.To)
	switch {
	case err != nil || a.Name != "" || a.Address != m.To:
		return fmt.Errorf("%w: recipient %q is not one plain address", ErrInvalidMessage, m.To)
	case strings.ContainsAny(m.Subject, "\r\n") || !utf8.ValidString(m.Subject):
		return fmt.Errorf("%w: the subject must be one line of UTF-8", ErrInvalidMessage)
	case !utf8.ValidString(m.Body):
		return fmt.Errorf("%w: the body must be UTF-8", ErrInvalidMessage)
	}
	return nil
}

// needsUTF8 reports whether the envelope needs SMTPUTF8 (RFC 6531).
func needsUTF8(addrs ...string) bool {
	for _, a := range addrs {
		for i := range len(a) {
			if a[i] >= utf8.RuneSelf {
				return true
			}
		}
	}
	return false
}

// compose returns m as an Internet message (RFC 5322) from from, dated
// now, with CRLF line ends.
func compose(m Message, from *netmail.Address, now time.Time) []byte {
	var b bytes.Buffer
	domain := from.Address[strings.LastIndexByte(from.Address, '@')+1:]
	header := func(k, v string) { b.WriteString(k + ": " + v + "\r\n") }
	header("From", from.String())
	header("To", "<"+m.To+">")
	header("Subject", mime.QEncoding.Encode("utf-8", m.Subject))
	header("Date", now.Format(time.RFC1123Z))
	header("Message-ID", "<"+uuid.NewString()+"@"+domain+">")
	header("MIME-Version", "1.0")
	header("Content-Type", "text/plain; charset=utf-8")
	header("Content-Transfer-Encoding", "quoted-printable")
	header("Auto-Submitted", "auto-generated")
	b.WriteString("\r\n")
	body := strings.ReplaceAll(strings.ReplaceAll(m.Body, "\r\n", "\n"), "\n", "\r\n")
	qp := quotedprintable.NewWriter(&b)
	qp.Write([]byte(body))
	qp.Close()
	return b.Bytes()
}

// Log is a [Mailer] that writes each message to a logger at info level,
// links included, and sends nothing: for development, where no relay
// runs. Anyone who reads the log can follow the links.
type Log struct {
	// Logger receives the messages; nil discards them.
	Logger *slog.Logger
}

// Send implements [Mailer].
func (l Log) Send(ctx context.Context, m Message) error {
	if err := m.Check(); err != nil {
		return err
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if l.Logger != nil {
		l.Logger.InfoContext(ctx, "mail: not sent (no SMTP relay configured)", "to", m.To, "subject", m.Subject, "body", m.Body)
	}
	return nil
}
