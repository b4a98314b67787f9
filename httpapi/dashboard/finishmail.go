package dashboard

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
)

// The mail an account may choose, on its account page, when one of its
// batches or lists finishes (off until chosen). It goes out once per
// batch whatever the instances, and survives their crashes but for two
// narrow windows named below:
//
//   - a worker's completion of a batch's job adds the batch's notice to
//     the store ([store.Notices.AddNotice]) if the account chose the mail,
//     once per batch and instance ([Dashboard.BatchProgress]); adding it
//     again changes nothing, and a done notice is remembered, so that a
//     batch is noticed once;
//   - every instance looks for due notices ([Dashboard.RunNotices]) and
//     claims them for a lease ([DefaultNoticeLease]): one instance holds a
//     notice at a time; a notice whose batch still runs is looked at again
//     later, one whose mail failed is retried a minute later, and one whose
//     instance crashed, before or after the batch finished, is claimed
//     again by another once the lease ends;
//   - the mail is sent, then the notice marked done: only an instance
//     dying between the relay's acceptance and that mark sends it twice.
//
// The notice is written after a completion is committed, not with it: an
// instance dying between a one-job batch's only completion and its notice,
// or a choice turned on within [choiceTTL] of a batch's last completion,
// leaves that batch without a mail.
//
// The choice is read again before the mail is sent: turning it off stops
// the notices already waiting.

// Defaults of the finish mail.
const (
	// DefaultNoticeInterval is how often an instance looks for due
	// notices.
	DefaultNoticeInterval = 5 * time.Second
	// DefaultNoticeLease is how long a claimed notice is the claiming
	// instance's: past it, another instance claims it again.
	DefaultNoticeLease = 2 * time.Minute
)

const (
	// noticeRecheck is when a notice whose batch still runs is looked at
	// again.
	noticeRecheck = 10 * time.Second
	// noticeRetry is when a notice whose mail failed is tried again.
	noticeRetry = time.Minute
	// noticeBatch bounds the notices claimed at once.
	noticeBatch = 20
	// choiceTTL is how long an instance remembers an account's choice.
	choiceTTL = 5 * time.Second
	// maxNoticed bounds the batches an instance remembers having noticed.
	maxNoticed = 10_000
)

// notices is an instance's memory of what it added: the accounts'
// choices, briefly, and the batches noticed.
type notices struct {
	mu      sync.Mutex
	choices map[string]choice   // account id → its choice
	noticed map[string]struct{} // batch ids whose notice this instance added
}

type choice struct {
	on      bool
	expires time.Time
}

// BatchProgress is the worker pool's hook ([jobs.PoolConfig.OnComplete])
// for the finish mail: after a job of a batch completes, it adds the
// batch's notice if the account chose the mail, once per batch on this
// instance. Without [Config.Notices] it does nothing. Errors are logged:
// the batch's next completion, on any instance, adds the notice again.
func (d *Dashboard) BatchProgress(ctx context.Context, job jobs.Job) {
	st := d.cfg.Notices
	if st == nil || job.BatchID == "" {
		return
	}
	n := &d.notices
	n.mu.Lock()
	_, done := n.noticed[job.BatchID]
	c, known := n.choices[job.AccountID]
	n.mu.Unlock()
	if done {
		return
	}
	now := d.cfg.Now()
	if !known || now.After(c.expires) {
		on, err := st.FinishMail(ctx, job.AccountID)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			d.cfg.Logger.WarnContext(ctx, "dashboard: finish mail choice", "account", job.AccountID, "err", err)
			return
		}
		c = choice{on: on, expires: now.Add(choiceTTL)}
		n.mu.Lock()
		if n.choices == nil || len(n.choices) >= maxNoticed {
			n.choices = make(map[string]choice)
		}
		n.choices[job.AccountID] = c
		n.mu.Unlock()
	}
	if !c.on {
		return
	}
	if err := st.AddNotice(ctx, job.AccountID, job.BatchID); err != nil {
		d.cfg.Logger.WarnContext(ctx, "dashboard: batch notice", "batch", job.BatchID, "err", err)
		return
	}
	n.mu.Lock()
	if n.noticed == nil || len(n.noticed) >= maxNoticed {
		n.noticed = make(map[string]struct{})
	}
	n.noticed[job.BatchID] = struct{}{}
	n.mu.Unlock()
}

// RunNotices mails the due notices of finished batches until ctx ends,
// looking every [Config.NoticeInterval]; it returns nil then. Without
// [Config.Notices] it only waits for ctx. Run it on every instance: the
// store gives each notice to one at a time.
func (d *Dashboard) RunNotices(ctx context.Context) error {
	if d.cfg.Notices == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(d.cfg.NoticeInterval)
	defer t.Stop()
	for {
		if _, err := d.SendNotices(ctx); err != nil && ctx.Err() == nil {
			d.cfg.Logger.WarnContext(ctx, "dashboard: batch notices", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// SendNotices claims the notices due now and settles each: mailed and
// done, looked at again later (its batch still runs, or its mail
// failed), or done without mail (the batch is gone, or the account no
// longer wants it). It returns how many mails it sent.
func (d *Dashboard) SendNotices(ctx context.Context) (sent int, err error) {
	st := d.cfg.Notices
	if st == nil {
		return 0, nil
	}
	claimedAt := d.cfg.Now()
	claimed, err := st.ClaimNotices(ctx, claimedAt, d.cfg.NoticeLease, noticeBatch)
	if err != nil {
		return 0, err
	}
	// A mail is sent only while the lease has time left for the relay to
	// take it: a mail sent past the lease could go out twice, the other
	// instance having claimed the notice again. The notices left once
	// that time is up are given back, due now.
	send := min(mailTimeout, d.cfg.NoticeLease/2)
	stop := claimedAt.Add(d.cfg.NoticeLease - send)
	var errs []error
	for _, n := range claimed {
		if now := d.cfg.Now(); now.After(stop) {
			if err := st.DelayNotice(ctx, n, now); err != nil && !errors.Is(err, store.ErrNoticeLost) {
				errs = append(errs, err)
			}
			continue
		}
		mailed, err := d.settleNotice(ctx, n, send)
		if mailed {
			sent++
		}
		if err != nil && !errors.Is(err, store.ErrNoticeLost) {
			errs = append(errs, err)
		}
	}
	return sent, errors.Join(errs...)
}

// settleNotice mails one claimed notice's batch if it is done, and
// settles the notice; the relay has send to take the mail.
func (d *Dashboard) settleNotice(ctx context.Context, n store.Notice, send time.Duration) (mailed bool, err error) {
	st := d.cfg.Notices
	later := func(after time.Duration, cause error) (bool, error) {
		if err := st.DelayNotice(ctx, n, d.cfg.Now().Add(after)); err != nil {
			return false, errors.Join(cause, err)
		}
		return false, cause
	}
	b, err := d.cfg.Queue.Batch(ctx, n.AccountID, n.BatchID)
	if errors.Is(err, jobs.ErrNotFound) {
		return false, st.DoneNotice(ctx, n)
	}
	if err != nil {
		return later(noticeRetry, err)
	}
	if b.State != jobs.StateCompleted {
		return later(noticeRecheck, nil)
	}
	on, err := st.FinishMail(ctx, n.AccountID)
	if errors.Is(err, store.ErrNotFound) || err == nil && !on {
		return false, st.DoneNotice(ctx, n)
	}
	if err != nil {
		return later(noticeRetry, err)
	}
	a, err := d.cfg.Accounts.GetAccount(ctx, n.AccountID)
	if errors.Is(err, store.ErrNotFound) || err == nil && a.Unconfirmed {
		return false, st.DoneNotice(ctx, n)
	}
	if err != nil {
		return later(noticeRetry, err)
	}
	m := d.finishMessage(ctx, a, b)
	sctx, cancel := context.WithTimeout(ctx, send)
	err = d.mailer.Send(sctx, m)
	cancel()
	if err != nil {
		return later(noticeRetry, fmt.Errorf("dashboard: finish mail of batch %s: %w", b.ID, err))
	}
	return true, st.DoneNotice(ctx, n)
}

// finishMessage is the mail telling a that its batch b finished: its
// counts by status and the link to its page.
func (d *Dashboard) finishMessage(ctx context.Context, a store.Account, b jobs.Batch) mail.Message {
	row := batchRow{Batch: b}
	what := "batch"
	if _, err := d.cfg.Queue.List(ctx, a.ID, b.ID); err == nil {
		what = "list"
	}
	var body strings.Builder
	unit := "addresses"
	if b.Total == 1 {
		unit = "address"
	}
	fmt.Fprintf(&body, "Hello,\n\nYour %s %s is validated: %s unique %s.\n\n", what, row.Label(), thousands(int64(b.Total)), unit)
	statuses := make([]string, 0, len(b.Counts))
	for s := range b.Counts {
		statuses = append(statuses, string(s))
	}
	slices.Sort(statuses)
	for _, s := range statuses {
		fmt.Fprintf(&body, "  %s (%s): %s\n", statusName(s), s, thousands(int64(b.Counts[emailcheck.Status(s)])))
	}
	fmt.Fprintf(&body, "\nIts results and downloads:\n\n%s\n\n", d.cfg.BaseURL+d.path("/batches/"+b.ID))
	body.WriteString("You get this mail because you turned it on on your account page, where you can turn it off.\n")
	return mail.Message{To: a.Email, Subject: "Your " + what + " " + row.Label() + " is validated", Body: body.String()}
}

// accountView is what the account page shows: the account, and its
// finish mail choice when the console offers the mail.
type accountView struct {
	store.Account
	// Notices tells whether the console offers the finish mail;
	// FinishMail is the account's choice.
	Notices, FinishMail bool
}

// accountView reads a's finish mail choice for its page. A store that
// does not answer leaves the choice out of the page, logged.
func (d *Dashboard) accountView(ctx context.Context, a store.Account) accountView {
	v := accountView{Account: a}
	if d.cfg.Notices == nil || a.Unconfirmed {
		return v
	}
	on, err := d.cfg.Notices.FinishMail(ctx, a.ID)
	if err != nil {
		d.cfg.Logger.WarnContext(ctx, "dashboard: finish mail choice", "account", a.ID, "err", err)
		return v
	}
	v.Notices, v.FinishMail = true, on
	return v
}

// saveNotices serves POST /account/notices: the field finish_mail ("on"
// or absent, a checkbox) turns the finish mail on or off.
func (d *Dashboard) saveNotices(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	if d.cfg.Notices == nil {
		d.fail(w, r, http.StatusNotFound, "This console sends no mail when a batch finishes.")
		return
	}
	var on bool
	switch v := r.PostFormValue("finish_mail"); v {
	case "on":
		on = true
	case "":
	default:
		d.fail(w, r, http.StatusBadRequest, "The field finish_mail is on or absent.")
		return
	}
	if err := d.cfg.Notices.SetFinishMail(ctx, a.ID, on); err != nil {
		d.backendError(w, r, "set finish mail", err)
		return
	}
	d.notices.forget(a.ID)
	if on {
		d.flash(ctx, "You will get a mail at "+a.Email+" when a batch or list finishes.")
	} else {
		d.flash(ctx, "You will get no mail when a batch or list finishes.")
	}
	d.redirect(w, r, "/account")
}

// forget drops the account's remembered choice, so that this instance
// reads it afresh.
func (n *notices) forget(accountID string) {
	n.mu.Lock()
	delete(n.choices, accountID)
	n.mu.Unlock()
}
