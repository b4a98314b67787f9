package uploads

import (
	"errors"
	"io"
	"net/http"
	"os"
	"sync"
	"time"
)

// Pace is the least rate at which an upload must keep sending: MinBytes
// within each Window, and the whole body within MaxDuration. A server's
// ReadTimeout bounds a whole request; an upload read at a Pace instead
// lives as long as its bytes keep coming, up to MaxDuration.
type Pace struct {
	Window      time.Duration
	MinBytes    int64
	MaxDuration time.Duration
}

// DefaultPace is 1 MiB per 5 s (about 205 KiB/s) within 30 minutes: a
// list of 256 MiB sent at the least pace takes about 21 minutes, and a
// stalled upload is let go within 5 s.
var DefaultPace = Pace{Window: 5 * time.Second, MinBytes: 1 << 20, MaxDuration: 30 * time.Minute}

// OrDefault returns p, or DefaultPace's values where p has none.
func (p Pace) OrDefault() Pace {
	if p.Window <= 0 {
		p.Window = DefaultPace.Window
	}
	if p.MinBytes <= 0 {
		p.MinBytes = DefaultPace.MinBytes
	}
	if p.MaxDuration <= 0 {
		p.MaxDuration = DefaultPace.MaxDuration
	}
	return p
}

// Reader reads a request's body at a [Pace]: it sets the connection's
// read deadline a Window ahead when created, and again each time MinBytes
// more bytes have arrived (never past MaxDuration from the start), so that
// a server's ReadTimeout no longer ends the upload while one that stalls
// is ended at the deadline. It counts the bytes on the upload's [Slot],
// if any, and ends the read at once when the slot is evicted. On a
// ResponseWriter that cannot set deadlines (a test's recorder) it only
// reads and counts.
type Reader struct {
	r     io.Reader
	rc    *http.ResponseController
	pace  Pace
	slot  *Slot
	since int64 // bytes since the deadline was last pushed
	start time.Time
	now   func() time.Time

	mu    sync.Mutex
	paced bool  // deadlines are set on the connection
	done  bool  // the body is in: deadlines are no longer touched
	end   error // why the read ended early, if it did
}

// NewReader returns body read at pace (zero fields are DefaultPace's) on
// w's connection, counted on slot (which may be nil).
func NewReader(w http.ResponseWriter, body io.Reader, pace Pace, slot *Slot) *Reader {
	rd := &Reader{r: body, rc: http.NewResponseController(w), pace: pace.OrDefault(), slot: slot, now: time.Now}
	rd.start = rd.now()
	rd.paced = rd.rc.SetReadDeadline(rd.deadline()) == nil
	if slot != nil {
		slot.OnEvict(rd.evict)
	}
	return rd
}

// deadline is the next read deadline.
func (rd *Reader) deadline() time.Time { return rd.pace.next(rd.start, rd.now()) }

// next is the next deadline of a transfer at p begun at start: a window
// after now, within MaxDuration of start.
func (p Pace) next(start, now time.Time) time.Time {
	d := now.Add(p.Window)
	if last := start.Add(p.MaxDuration); d.After(last) {
		d = last
	}
	return d
}

// evict ends the read: a read in progress returns at once.
func (rd *Reader) evict() {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.end == nil {
		rd.end = ErrEvicted
	}
	if rd.paced && !rd.done {
		rd.rc.SetReadDeadline(time.Unix(1, 0))
	}
}

// Read implements io.Reader.
func (rd *Reader) Read(p []byte) (int, error) {
	if err := rd.Err(); err != nil {
		return 0, err
	}
	n, err := rd.r.Read(p)
	if rd.slot != nil {
		rd.slot.Add(int64(n))
	}
	rd.since += int64(n)
	if err == io.EOF {
		// The whole body is in: the server's background read of the
		// connection must not end the request at the last deadline
		// while the handler still works on what it read.
		rd.Done()
	}
	rd.mu.Lock()
	defer rd.mu.Unlock()
	if rd.end != nil {
		return n, rd.end
	}
	if rd.paced && rd.since >= rd.pace.MinBytes && !rd.done {
		rd.since = 0
		rd.rc.SetReadDeadline(rd.deadline())
	}
	if err != nil && errors.Is(err, os.ErrDeadlineExceeded) {
		rd.end = ErrStalled
		if !rd.now().Before(rd.start.Add(rd.pace.MaxDuration)) {
			rd.end = ErrTooLong
		}
		return n, rd.end
	}
	return n, err
}

// Err returns why the read ended early: [ErrStalled], [ErrTooLong],
// [ErrEvicted], or nil.
func (rd *Reader) Err() error {
	rd.mu.Lock()
	defer rd.mu.Unlock()
	return rd.end
}

// Done tells the reader that the body is in (or no longer read): the
// connection's read deadline is cleared and no longer touched, and the
// slot, from now on working on what was read, can no longer be evicted.
// Call it once the body is read, and (deferred) before the handler
// returns; later calls do nothing.
func (rd *Reader) Done() {
	rd.mu.Lock()
	first := !rd.done
	if first && rd.paced {
		rd.rc.SetReadDeadline(time.Time{})
	}
	rd.done = true
	rd.mu.Unlock()
	// Outside rd.mu: an eviction holds the slots' lock, then rd.mu.
	if first && rd.slot != nil {
		rd.slot.Pin()
	}
}

// Writer writes a response's body at a [Pace], as [Reader] reads a
// request's: it sets the connection's write deadline a Window ahead when
// created, and again each time MinBytes more are written (never past
// MaxDuration from the start), so that a client that stops reading is
// cut off rather than holding what the body is sent from. On a
// ResponseWriter that cannot set deadlines it only writes.
type Writer struct {
	w     io.Writer
	rc    *http.ResponseController
	pace  Pace
	since int64 // bytes since the deadline was last pushed
	start time.Time
	paced bool
}

// NewWriter returns w written at pace (zero fields are DefaultPace's).
func NewWriter(w http.ResponseWriter, pace Pace) *Writer {
	pw := &Writer{w: w, rc: http.NewResponseController(w), pace: pace.OrDefault(), start: time.Now()}
	pw.paced = pw.rc.SetWriteDeadline(pw.pace.next(pw.start, pw.start)) == nil
	return pw
}

// Write implements io.Writer.
func (pw *Writer) Write(b []byte) (int, error) {
	n, err := pw.w.Write(b)
	pw.since += int64(n)
	if pw.paced && pw.since >= pw.pace.MinBytes {
		pw.since = 0
		pw.rc.SetWriteDeadline(pw.pace.next(pw.start, time.Now()))
	}
	return n, err
}

// Done sends what is buffered, at the pace still, then clears the
// connection's write deadline, so that a kept-alive connection's next
// request is not cut.
func (pw *Writer) Done() error {
	if !pw.paced {
		return nil
	}
	err := pw.rc.Flush()
	pw.rc.SetWriteDeadline(time.Time{})
	return err
}
