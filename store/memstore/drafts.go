package memstore

import (
	"context"
	"slices"
	"time"

	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.ListDraftDriver = (*jobsDriver)(nil)

// draftState keeps the lists waiting for confirmation: the drafts, their
// order of arrival, and their chunks.
type draftState struct {
	byID   map[string]*memDraft
	chunks map[string]map[int]memChunk // draft id → chunk number → chunk
	seq    uint64
}

type memDraft struct {
	d   jobtype.ListDraft
	seq uint64 // order of arrival
}

type memChunk struct {
	data    []byte
	expires time.Time
}

func newDraftState() draftState {
	return draftState{byID: map[string]*memDraft{}, chunks: map[string]map[int]memChunk{}}
}

// pruneDraftsLocked removes expired drafts and chunks.
func (s *Store) pruneDraftsLocked(t time.Time) {
	for id, d := range s.drafts.byID {
		if !t.Before(d.d.ExpiresAt) {
			delete(s.drafts.byID, id)
		}
	}
	for id, cs := range s.drafts.chunks {
		for n, c := range cs {
			if !t.Before(c.expires) {
				delete(cs, n)
			}
		}
		if len(cs) == 0 {
			delete(s.drafts.chunks, id)
		}
	}
}

// liveDraftLocked returns draft id if it has not expired.
func (s *Store) liveDraftLocked(id string, t time.Time) *memDraft {
	d := s.drafts.byID[id]
	if d == nil || !t.Before(d.d.ExpiresAt) {
		return nil
	}
	return d
}

func (s *Store) dropDraftLocked(id string) {
	delete(s.drafts.byID, id)
	delete(s.drafts.chunks, id)
}

func cloneDraft(d jobtype.ListDraft) jobtype.ListDraft {
	d.Meta = slices.Clone(d.Meta)
	return d
}

// PutListDraftChunk implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) PutListDraftChunk(ctx context.Context, id string, n int, data []byte, expiresAt time.Time) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	cs := s.drafts.chunks[id]
	if cs == nil {
		cs = map[int]memChunk{}
		s.drafts.chunks[id] = cs
	}
	cs[n] = memChunk{data: slices.Clone(data), expires: expiresAt}
	return nil
}

// PutListDraft implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) PutListDraft(ctx context.Context, p jobtype.PutListDraftParams) (bool, error) {
	if err := ctxErr(ctx); err != nil {
		return false, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := now()
	s.pruneDraftsLocked(t)
	d := p.Draft
	for id, o := range s.drafts.byID {
		if o.d.AccountID != d.AccountID || id == d.ID {
			continue
		}
		if p.Restore {
			return false, nil
		}
		s.dropDraftLocked(id)
	}
	if p.PerNetwork > 0 && d.Network != "" {
		for {
			var mine []*memDraft
			for id, o := range s.drafts.byID {
				if o.d.Network == d.Network && id != d.ID {
					mine = append(mine, o)
				}
			}
			if len(mine) < p.PerNetwork {
				break
			}
			oldest := slices.MinFunc(mine, func(a, b *memDraft) int { return int(a.seq) - int(b.seq) })
			s.dropDraftLocked(oldest.d.ID)
		}
	}
	s.drafts.seq++
	s.drafts.byID[d.ID] = &memDraft{d: cloneDraft(d), seq: s.drafts.seq}
	return true, nil
}

// ListDraft implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) ListDraft(ctx context.Context, accountID, id string) (jobtype.ListDraft, error) {
	if err := ctxErr(ctx); err != nil {
		return jobtype.ListDraft{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.liveDraftLocked(id, now())
	if d == nil || d.d.AccountID != accountID {
		return jobtype.ListDraft{}, jobtype.ErrNotFound
	}
	return cloneDraft(d.d), nil
}

// ListDraftChunk implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) ListDraftChunk(ctx context.Context, id string, n int) ([]byte, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	c, ok := s.drafts.chunks[id][n]
	if !ok || !now().Before(c.expires) {
		return nil, jobtype.ErrNotFound
	}
	return slices.Clone(c.data), nil
}

// TakeListDraft implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) TakeListDraft(ctx context.Context, accountID, id string) (jobtype.ListDraft, error) {
	if err := ctxErr(ctx); err != nil {
		return jobtype.ListDraft{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	d := s.liveDraftLocked(id, now())
	if d == nil || d.d.AccountID != accountID {
		return jobtype.ListDraft{}, jobtype.ErrNotFound
	}
	delete(s.drafts.byID, id)
	return cloneDraft(d.d), nil
}

// DeleteListDraft implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) DeleteListDraft(ctx context.Context, id string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.dropDraftLocked(id)
	return nil
}
