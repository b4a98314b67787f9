package memstore

import (
	"context"
	"slices"
	"strconv"
	"time"

	"github.com/validmail/validmail/store"
)

var _ store.Notices = (*Store)(nil)

// noticeState is the accounts' finish mail choices and the batches'
// notices. Its maps are made on first use; the Store's mutex guards
// them.
type noticeState struct {
	on      map[string]bool        // account id → finish mail chosen
	notices map[string]*noticeItem // batch id → its notice
	seq     uint64                 // claim tokens
}

type noticeItem struct {
	account  string
	batch    string
	due      time.Time // when pending: due at; when done: forgotten at
	done     bool
	token    string
	attempts int
}

// SetFinishMail implements [store.Notices].
func (s *Store) SetFinishMail(ctx context.Context, accountID string, on bool) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[accountID]; !ok {
		return store.ErrNotFound
	}
	if s.notices.on == nil {
		s.notices.on = make(map[string]bool)
	}
	s.notices.on[accountID] = on
	return nil
}

// FinishMail implements [store.Notices].
func (s *Store) FinishMail(ctx context.Context, accountID string) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[accountID]; !ok {
		return false, store.ErrNotFound
	}
	return s.notices.on[accountID], nil
}

// AddNotice implements [store.Notices].
func (s *Store) AddNotice(ctx context.Context, accountID, batchID string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.notices.notices == nil {
		s.notices.notices = make(map[string]*noticeItem)
	}
	if _, ok := s.notices.notices[batchID]; !ok {
		s.notices.notices[batchID] = &noticeItem{account: accountID, batch: batchID, due: time.Now()}
	}
	return nil
}

// ClaimNotices implements [store.Notices]: it forgets the done notices
// kept past [store.NoticeKeep] as it looks for due ones.
func (s *Store) ClaimNotices(ctx context.Context, now time.Time, lease time.Duration, limit int) ([]store.Notice, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var due []*noticeItem
	for id, n := range s.notices.notices {
		switch {
		case n.done && now.After(n.due):
			delete(s.notices.notices, id)
		case !n.done && !n.due.After(now):
			due = append(due, n)
		}
	}
	slices.SortFunc(due, func(a, b *noticeItem) int { return a.due.Compare(b.due) })
	var out []store.Notice
	for _, n := range due[:min(len(due), max(limit, 0))] {
		if n.token != "" {
			n.attempts++
		}
		s.notices.seq++
		n.token = strconv.FormatUint(s.notices.seq, 10)
		n.due = now.Add(lease)
		out = append(out, store.Notice{AccountID: n.account, BatchID: n.batch, Token: n.token, Attempts: n.attempts})
	}
	return out, nil
}

// held returns the notice n claims, or nil when the claim is lost.
func (s *Store) held(n store.Notice) *noticeItem {
	it := s.notices.notices[n.BatchID]
	if it == nil || it.done || it.token != n.Token || n.Token == "" {
		return nil
	}
	return it
}

// DoneNotice implements [store.Notices].
func (s *Store) DoneNotice(ctx context.Context, n store.Notice) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.held(n)
	if it == nil {
		return store.ErrNoticeLost
	}
	it.done, it.token, it.due = true, "", time.Now().Add(store.NoticeKeep)
	return nil
}

// DelayNotice implements [store.Notices].
func (s *Store) DelayNotice(ctx context.Context, n store.Notice, due time.Time) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	it := s.held(n)
	if it == nil {
		return store.ErrNoticeLost
	}
	it.token, it.due = "", due
	it.attempts++
	return nil
}
