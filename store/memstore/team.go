package memstore

import (
	"cmp"
	"context"
	"slices"
	"time"

	"github.com/google/uuid"

	"github.com/validmail/validmail/store"
)

var (
	_ store.Team     = (*Store)(nil)
	_ store.AuditLog = (*Store)(nil)
)

// teamState is what the Store keeps of teams; its maps are made on first
// use and the Store's mutex guards them.
type teamState struct {
	members map[string]*store.Member      // member id → member
	byEmail map[string]string             // normalized email → member id
	invites map[string]store.Invitation   // hash → invitation
	audit   map[string][]store.AuditEntry // account id → entries, oldest first
}

// Invite implements [store.Team]. Expired invitations are dropped as new
// ones are made.
func (s *Store) Invite(ctx context.Context, inv store.Invitation) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	if err := store.CheckRole(inv.Role); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.accounts[inv.AccountID]; !ok {
		return store.ErrNotFound
	}
	if s.team.invites == nil {
		s.team.invites = make(map[string]store.Invitation)
	}
	now := time.Now()
	for h, old := range s.team.invites {
		if !now.Before(old.Expiry) {
			delete(s.team.invites, h)
		}
	}
	s.team.invites[inv.Hash] = inv
	return nil
}

// AcceptInvitation implements [store.Team].
func (s *Store) AcceptInvitation(ctx context.Context, hash, passwordHash string) (store.Member, error) {
	if err := ctxErr(ctx); err != nil {
		return store.Member{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, ok := s.team.invites[hash]
	if !ok {
		return store.Member{}, store.ErrTokenInvalid
	}
	delete(s.team.invites, hash)
	if !time.Now().Before(inv.Expiry) {
		return store.Member{}, store.ErrTokenInvalid
	}
	if _, ok := s.accounts[inv.AccountID]; !ok {
		return store.Member{}, store.ErrTokenInvalid
	}
	norm := store.NormalizeEmail(inv.Email)
	if _, taken := s.team.byEmail[norm]; taken {
		return store.Member{}, store.ErrEmailTaken
	}
	n := 0
	for _, m := range s.team.members {
		if m.AccountID == inv.AccountID {
			n++
		}
	}
	if n >= store.MaxMembers {
		return store.Member{}, store.ErrTeamFull
	}
	m := &store.Member{ID: uuid.NewString(), AccountID: inv.AccountID, Email: inv.Email, Role: inv.Role,
		PasswordHash: passwordHash, CreatedAt: time.Now().UTC()}
	if s.team.members == nil {
		s.team.members = make(map[string]*store.Member)
		s.team.byEmail = make(map[string]string)
	}
	s.team.members[m.ID] = m
	s.team.byEmail[norm] = m.ID
	return *m, nil
}

// Member implements [store.Team].
func (s *Store) Member(ctx context.Context, accountID, memberID string) (store.Member, error) {
	if err := ctxErr(ctx); err != nil {
		return store.Member{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.team.members[memberID]
	if !ok || m.AccountID != accountID {
		return store.Member{}, store.ErrNotFound
	}
	return *m, nil
}

// MemberByEmail implements [store.Team].
func (s *Store) MemberByEmail(ctx context.Context, email string) (store.Member, error) {
	if err := ctxErr(ctx); err != nil {
		return store.Member{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id, ok := s.team.byEmail[store.NormalizeEmail(email)]
	if !ok {
		return store.Member{}, store.ErrNotFound
	}
	return *s.team.members[id], nil
}

// Members implements [store.Team].
func (s *Store) Members(ctx context.Context, accountID string) ([]store.Member, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []store.Member
	for _, m := range s.team.members {
		if m.AccountID == accountID {
			out = append(out, *m)
		}
	}
	slices.SortFunc(out, func(a, b store.Member) int {
		return cmp.Or(a.CreatedAt.Compare(b.CreatedAt), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// RemoveMember implements [store.Team].
func (s *Store) RemoveMember(ctx context.Context, accountID, memberID string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	m, ok := s.team.members[memberID]
	if !ok || m.AccountID != accountID {
		return store.ErrNotFound
	}
	delete(s.team.members, memberID)
	norm := store.NormalizeEmail(m.Email)
	delete(s.team.byEmail, norm)
	for h, inv := range s.team.invites {
		if inv.AccountID == accountID && store.NormalizeEmail(inv.Email) == norm {
			delete(s.team.invites, h)
		}
	}
	return nil
}

// Invitations implements [store.Team].
func (s *Store) Invitations(ctx context.Context, accountID string) ([]store.Invitation, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	var out []store.Invitation
	for _, inv := range s.team.invites {
		if inv.AccountID == accountID && now.Before(inv.Expiry) {
			out = append(out, inv)
		}
	}
	slices.SortFunc(out, func(a, b store.Invitation) int {
		return cmp.Or(a.Expiry.Compare(b.Expiry), cmp.Compare(a.Hash, b.Hash))
	})
	return out, nil
}

// Invitation implements [store.Team].
func (s *Store) Invitation(ctx context.Context, hash string) (store.Invitation, error) {
	if err := ctxErr(ctx); err != nil {
		return store.Invitation{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, ok := s.team.invites[hash]
	if !ok || !time.Now().Before(inv.Expiry) {
		return store.Invitation{}, store.ErrTokenInvalid
	}
	return inv, nil
}

// RevokeInvitation implements [store.Team].
func (s *Store) RevokeInvitation(ctx context.Context, accountID, hash string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	inv, ok := s.team.invites[hash]
	if !ok || inv.AccountID != accountID {
		return store.ErrNotFound
	}
	delete(s.team.invites, hash)
	return nil
}

// AddAudit implements [store.AuditLog].
func (s *Store) AddAudit(ctx context.Context, e store.AuditEntry) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	e = store.CutAudit(e)
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.team.audit == nil {
		s.team.audit = make(map[string][]store.AuditEntry)
	}
	log := append(s.team.audit[e.AccountID], e)
	if len(log) > store.MaxAuditEntries {
		log = slices.Clone(log[len(log)-store.MaxAuditEntries:])
	}
	s.team.audit[e.AccountID] = log
	return nil
}

// Audit implements [store.AuditLog].
func (s *Store) Audit(ctx context.Context, accountID string, offset, limit int) ([]store.AuditEntry, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	log := s.team.audit[accountID]
	var out []store.AuditEntry
	for i := len(log) - 1 - max(offset, 0); i >= 0 && len(out) < limit; i-- {
		out = append(out, log[i])
	}
	return out, nil
}
