package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"sync"
	"time"

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
)

// workbookRetryAfter is the Retry-After, in seconds, of a workbook
// refused for want of a place.
const workbookRetryAfter = "5"

// slotWait bounds the wait for the slots' store: one that does not
// answer by then counts as failed.
const slotWait = 5 * time.Second

// workbookSlotTTL is how long a workbook's slot is held without renewal:
// an instance that dies while making one frees its slot within it.
const workbookSlotTTL = 2 * time.Minute

// WorkbookLimits bounds the .xlsx workbooks being made at once. A
// workbook is made whole before its first byte is sent, its rows spilling
// to a temporary file, so each one made costs a core and disk until it
// is sent; CSV exports stream and are not bounded here.
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
	if g.logger == nil {
		g.logger = slog.New(slog.DiscardHandler)
	}
	return g
}

// Enter takes a place to make a workbook of account. ok is false when
// this process makes as many as it may, or the account has as many being
// made: the caller refuses the request (429), to be tried again in
// seconds. Otherwise the caller must call leave once the workbook is
// sent or abandoned. The account's slot is renewed while held, so a
// workbook may take longer than the slot's time to live. A failure of
// the slots' store, or no answer within seconds, lets the workbook be
// made, logged: an outage there does not stop exports.
func (g *WorkbookGate) Enter(ctx context.Context, account string) (leave func(), ok bool) {
	select {
	case g.here <- struct{}{}:
	default:
		return nil, false
	}
	var b [12]byte
	rand.Read(b[:])
	holder := "workbook-" + hex.EncodeToString(b[:])
	key := "workbooks:" + account
	actx, cancel := context.WithTimeout(ctx, slotWait)
	got, err := g.slots.AcquireSlot(actx, key, holder, g.perAccount, workbookSlotTTL)
	cancel()
	if err != nil && ctx.Err() != nil {
		// The request is gone: nothing to make.
		<-g.here
		return nil, false
	}
	if err != nil {
		g.logger.WarnContext(ctx, "httpapi: workbook slots failed; workbook made", "err", err)
		return func() { <-g.here }, true
	}
	if !got {
		<-g.here
		return nil, false
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() { g.renew(ctx, key, holder, done) })
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			defer cancel()
			if err := g.slots.ReleaseSlot(rctx, key, holder); err != nil {
				g.logger.WarnContext(ctx, "httpapi: workbook slot not released; it lapses on its own", "err", err)
			}
			<-g.here
		})
	}, true
}

// renew keeps holder's slot of key until done is closed.
func (g *WorkbookGate) renew(ctx context.Context, key, holder string, done <-chan struct{}) {
	t := time.NewTicker(workbookSlotTTL / 4)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-t.C:
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			if _, err := g.slots.AcquireSlot(rctx, key, holder, g.perAccount, workbookSlotTTL); err != nil {
				g.logger.WarnContext(ctx, "httpapi: workbook slot not renewed", "err", err)
			}
			cancel()
		}
	}
}
