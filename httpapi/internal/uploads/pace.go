package uploads

import (
	"errors"
	"io"
	"net/http"
	"os"
	"time"
)

// Pace is the least rate at which an upload must keep sending: MinBytes
// within each Window. A server's ReadTimeout bounds a whole request; an
// upload read at a Pace instead lives as long as its bytes keep coming.
type Pace struct {
	Window   time.Duration
	MinBytes int64
}

// DefaultPace is 1 MiB per 30 s: a list of 256 MiB may take over two
// hours on a slow line, and a stalled one is let go within 30 s.
var DefaultPace = Pace{Window: 30 * time.Second, MinBytes: 1 << 20}

// orDefault returns p, or DefaultPace's values where p has none.
func (p Pace) orDefault() Pace {
	if p.Window <= 0 {
		p.Window = DefaultPace.Window
	}
	if p.MinBytes <= 0 {
		p.MinBytes = DefaultPace.MinBytes
	}
	return p
}

// Reader reads a request's body at a [Pace]: it sets the connection's
// read deadline a Window ahead when created, and again each time MinBytes
// more bytes have arrived, so that a server's ReadTimeout no longer ends
// the upload while one that stalls is ended at the deadline. On a
// ResponseWriter that cannot set deadlines (a test's recorder) it only
// reads.
type Reader struct {
	r       io.Reader
	rc      *http.ResponseController
	pace    Pace
	since   int64 // bytes since the deadline was last pushed
	paced   bool
	stalled bool
	now     func() time.Time
}

// NewReader returns body read at pace (zero fields are DefaultPace's) on
// w's connection.
func NewReader(w http.ResponseWriter, body io.Reader, pace Pace) *Reader {
	rd := &Reader{r: body, rc: http.NewResponseController(w), pace: pace.orDefault(), now: time.Now}
	rd.paced = rd.rc.SetReadDeadline(rd.now().Add(rd.pace.Window)) == nil
	return rd
}

// Read implements io.Reader.
func (rd *Reader) Read(p []byte) (int, error) {
	n, err := rd.r.Read(p)
	rd.since += int64(n)
	if rd.paced && rd.since >= rd.pace.MinBytes {
		rd.since = 0
		rd.rc.SetReadDeadline(rd.now().Add(rd.pace.Window))
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		rd.stalled = true
	}
	if err == io.EOF && rd.paced {
		// The whole body is in: the server's background read of the
		// connection must not end the request at the last deadline
		// while the handler still works on what it read.
		rd.rc.SetReadDeadline(time.Time{})
		rd.paced = false
	}
	return n, err
}

// Stalled reports whether a read failed at the deadline: the client sent
// less than the pace's minimum within a window.
func (rd *Reader) Stalled() bool { return rd.stalled }
