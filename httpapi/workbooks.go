package httpapi

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net/http"
	"sync"
	"time"

	"github.com/validmail/validmail/httpapi/internal/uploads"
	"github.com/validmail/validmail/jobs/jobsdriver"
)

// Defaults of [WorkbookLimits].
const (
	// DefaultWorkbooksPerAccount is how many .xlsx workbooks of one
	// account may be made at once.
	DefaultWorkbooksPerAccount = 2
	// DefaultWorkbooksPerInstance is how many .xlsx workbooks one
	// process makes at once, of every account.
	DefaultWorkbooksPerInstance = 4
	// DefaultWorkbookSendWindow and DefaultWorkbookSendBytes: a client
	// takes a workbook at 1 MiB per 30 s at least (about 35 KiB/s).
	DefaultWorkbookSendWindow       = 30 * time.Second
	DefaultWorkbookSendBytes  int64 = 1 << 20
)

// workbookRetryAfter is the Retry-After, in seconds, of a workbook
// refused for want of a place.
const workbookRetryAfter = "5"

// slotWait bounds the wait for the slots' store: one that does not
// answer by then counts as failed.
const slotWait = 5 * time.Second

// workbookSendMax bounds a workbook's send: the largest (a million rows,
// about 63 MiB) takes 32 minutes at the least default pace.
const workbookSendMax = time.Hour

// workbookSlotTTL is how long a workbook's slot is held without renewal:
// an instance that dies while making one frees its slot within it.
const workbookSlotTTL = 2 * time.Minute

// WorkbookLimits bounds the .xlsx workbooks being made at once. A
// workbook's rows spill to a temporary file before its first byte is
// sent, and it is compressed as it is sent, so each one costs a core and
// disk until it is sent; CSV exports stream and are not bounded here.
type WorkbookLimits struct {
	// Slots holds each account's workbooks being made. The backend's
	// (Backend.AccountSlots) bounds an account across every instance
	// sharing it; nil keeps them in this process.
	Slots jobsdriver.AccountSlots
	// PerAccount is how many workbooks of one account may be made at
	// once. Default [DefaultWorkbooksPerAccount].
	PerAccount int
	// PerInstance is how many workbooks this process makes at once, of
	// every account. Default [DefaultWorkbooksPerInstance].
	PerInstance int
	// SendWindow and SendBytes are the least pace at which a client must
	// take a workbook: SendBytes more every SendWindow, else its
	// connection is cut and its places given back. Defaults
	// [DefaultWorkbookSendWindow] and [DefaultWorkbookSendBytes]. A
	// workbook is compressed as it is sent, so its places are held until
	// it is sent; the pace keeps a client that stops reading from
	// holding them.
	SendWindow time.Duration
	SendBytes  int64
	// Logger receives the failures of Slots, which let the workbook be
	// made. nil: they are not logged.
	Logger *slog.Logger
}

// WorkbookGate admits the making of .xlsx workbooks within its
// [WorkbookLimits]. One gate serves the API and the console of a
// process, so that its bound per instance holds for both. It is safe
// for concurrent use.
type WorkbookGate struct {
	slots      jobsdriver.AccountSlots
	perAccount int
	here       chan struct{} // a place per workbook this process makes
	send       uploads.Pace
	logger     *slog.Logger
}

// NewWorkbookGate returns a gate within l.
func NewWorkbookGate(l WorkbookLimits) *WorkbookGate {
	g := &WorkbookGate{slots: l.Slots, perAccount: l.PerAccount, logger: l.Logger}
	if g.slots == nil {
		g.slots = jobsdriver.NewMemorySlots()
	}
	if g.perAccount <= 0 {
		g.perAccount = DefaultWorkbooksPerAccount
	}
	n := l.PerInstance
	if n <= 0 {
		n = DefaultWorkbooksPerInstance
	}
	g.here = make(chan struct{}, n)
	g.send = uploads.Pace{
		Window:      cmp.Or(l.SendWindow, DefaultWorkbookSendWindow),
		MinBytes:    cmp.Or(l.SendBytes, DefaultWorkbookSendBytes),
		MaxDuration: workbookSendMax,
	}
	if g.logger == nil {
		g.logger = slog.New(slog.DiscardHandler)
	}
	return g
}

// Enter takes a place to make a workbook of account. ok is false when
// the account has as many being made, or this process makes as many as
// it may: the caller refuses the request (429), to be tried again in
// seconds. Otherwise the caller must call leave once the workbook is
// sent or abandoned; a second call does nothing. The account's slot is
// renewed while held, so a workbook may take longer than the slot's time
// to live. A failure of the slots' store, or no answer within seconds,
// lets the workbook be made, logged: an outage there does not stop
// exports. The account's slot is asked for first, so that an account at
// its bound, asking again and again, takes none of the process's places.
func (g *WorkbookGate) Enter(ctx context.Context, account string) (leave func(), ok bool) {
	var b [12]byte
	rand.Read(b[:])
	holder := "workbook-" + hex.EncodeToString(b[:])
	key := "workbooks:" + account
	actx, cancel := context.WithTimeout(ctx, slotWait)
	held, err := g.slots.AcquireSlot(actx, key, holder, g.perAccount, workbookSlotTTL)
	cancel()
	switch {
	case err != nil && ctx.Err() != nil:
		return nil, false // the request is gone: nothing to make
	case err != nil:
		g.logger.WarnContext(ctx, "httpapi: workbook slots failed; workbook made", "err", err)
	case !held:
		return nil, false
	}
	select {
	case g.here <- struct{}{}:
	default:
		if held {
			g.release(ctx, key, holder)
		}
		return nil, false
	}
	var once sync.Once
	if !held {
		return func() { once.Do(func() { <-g.here }) }, true
	}
	done := make(chan struct{})
	go g.renew(ctx, key, holder, done)
	return func() {
		once.Do(func() {
			<-g.here
			close(done)
			g.release(ctx, key, holder)
		})
	}, true
}

// release gives holder's slot of key back, within seconds.
func (g *WorkbookGate) release(ctx context.Context, key, holder string) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slotWait)
	defer cancel()
	if err := g.slots.ReleaseSlot(rctx, key, holder); err != nil {
		g.logger.WarnContext(ctx, "httpapi: workbook slot not released; it lapses on its own", "err", err)
	}
}

// renew keeps holder's slot of key until done is closed. A renewal that
// was under way when done closed is undone, so that no slot outlives
// its workbook.
func (g *WorkbookGate) renew(ctx context.Context, key, holder string, done <-chan struct{}) {
	t := time.NewTicker(workbookSlotTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
		}
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), slotWait)
		if _, err := g.slots.AcquireSlot(rctx, key, holder, g.perAccount, workbookSlotTTL); err != nil {
			g.logger.WarnContext(ctx, "httpapi: workbook slot not renewed", "err", err)
		}
		cancel()
		select {
		case <-done:
			g.release(ctx, key, holder)
			return
		default:
		}
	}
}

// Send writes the workbook sw holds as w's body at the gate's pace
// ([WorkbookLimits] SendWindow and SendBytes), so that a client that
// stops reading is cut off and its places given back.
func (g *WorkbookGate) Send(w http.ResponseWriter, sw *SheetWriter) (int64, error) {
	pw := uploads.NewWriter(w, g.send)
	n, err := sw.WriteTo(pw)
	if derr := pw.Done(); err == nil {
		err = derr
	}
	return n, err
}
