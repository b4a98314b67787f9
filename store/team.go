package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Role is what a member of an account may do in the console.
type Role string

// The roles. The owner is the account's own login (its email and
// password, [Accounts] and [Passwords]): it is never stored as a
// [Member], so an account created before teams existed has its owner
// already. Admins and members are the people the owner invited.
const (
	// RoleOwner manages everything: keys, the webhook, billing, the team.
	RoleOwner Role = "owner"
	// RoleAdmin manages keys and the webhook, and reads the audit log.
	RoleAdmin Role = "admin"
	// RoleMember uses the bulk tool and the batches, and sees the
	// overview; it manages neither keys, nor the webhook, nor billing.
	RoleMember Role = "member"
)

// ErrInvalidRole reports a role other than [RoleAdmin] and [RoleMember]
// where a stored member's role is expected.
var ErrInvalidRole = errors.New("store: invalid role")

// ErrTeamFull reports an account that has [MaxMembers] members already.
var ErrTeamFull = errors.New("store: team full")

// MaxMembers bounds the members of one account, its owner not counted.
const MaxMembers = 50

// CheckRole returns nil for a role a member may be invited with
// ([RoleAdmin], [RoleMember]), else an error matching [ErrInvalidRole].
func CheckRole(r Role) error {
	if r != RoleAdmin && r != RoleMember {
		return fmt.Errorf("%w: %q", ErrInvalidRole, r)
	}
	return nil
}

// Member is a person who signs in to an account's console with an email
// and password of their own.
type Member struct {
	// ID is a UUID assigned by the backend.
	ID string
	// AccountID is the account the member belongs to.
	AccountID string
	// Email is the member's sign-in address, as invited.
	Email string
	// Role is [RoleAdmin] or [RoleMember].
	Role Role
	// PasswordHash is the member's password hash, opaque to the backend
	// as in [Passwords].
	PasswordHash string
	// CreatedAt is when the member accepted the invitation.
	CreatedAt time.Time
}

// Invitation is an owner's invitation of an email to the account, as a
// backend keeps it until it is accepted or expires.
type Invitation struct {
	// Hash is the hex SHA-256 of the mailed token ([HashSecret]).
	Hash string
	// AccountID is the account the invitation is to.
	AccountID string
	// Email is the invited address: the member's sign-in address.
	Email string
	// Role is the role the member gets.
	Role Role
	// Expiry is when the invitation stops working.
	Expiry time.Time
}

// Team keeps the members of accounts and the invitations that add them.
//
// Member emails are unique across every account, compared by
// [NormalizeEmail]. Like every backend interface, a Team may be called
// concurrently from several processes sharing the backend.
type Team interface {
	// Invite stores inv until inv.Expiry. The account must exist
	// ([ErrNotFound]); the role must pass [CheckRole].
	Invite(ctx context.Context, inv Invitation) error
	// AcceptInvitation uses up the live invitation with the hash and
	// makes its email a member of its account with passwordHash, in one
	// atomic step: of two concurrent calls, one gets the member and the
	// other [ErrTokenInvalid], as does an unknown, used or expired
	// invitation. An email that is a member already (of any account):
	// [ErrEmailTaken]; an account with [MaxMembers] members: [ErrTeamFull];
	// the invitation is used up either way.
	AcceptInvitation(ctx context.Context, hash, passwordHash string) (Member, error)
	// Member returns the account's member with the id, or [ErrNotFound].
	Member(ctx context.Context, accountID, memberID string) (Member, error)
	// MemberByEmail returns the member with the email (compared by
	// [NormalizeEmail]), or [ErrNotFound].
	MemberByEmail(ctx context.Context, email string) (Member, error)
	// Members returns the account's members, oldest first.
	Members(ctx context.Context, accountID string) ([]Member, error)
	// RemoveMember removes the account's member with the id, and the
	// account's live invitations of the member's email (compared by
	// [NormalizeEmail]), so that no second invitation lets it back in;
	// an unknown member, or one of another account: [ErrNotFound].
	RemoveMember(ctx context.Context, accountID, memberID string) error
	// Invitations returns the account's live invitations, the soonest
	// to expire first.
	Invitations(ctx context.Context, accountID string) ([]Invitation, error)
	// Invitation returns the live invitation with the hash; an unknown,
	// used or expired one: [ErrTokenInvalid].
	Invitation(ctx context.Context, hash string) (Invitation, error)
	// RevokeInvitation deletes the account's invitation with the hash;
	// an unknown one, or one of another account: [ErrNotFound].
	RevokeInvitation(ctx context.Context, accountID, hash string) error
}

// MaxAuditEntries is how many audit entries a backend keeps per account:
// adding one beyond it drops the oldest.
const MaxAuditEntries = 1000

// Bounds of an [AuditEntry]'s text fields: a backend truncates longer
// values.
const (
	MaxAuditActorBytes  = 320
	MaxAuditDetailBytes = 512
)

// AuditEntry is one line of an account's audit log: who did what.
type AuditEntry struct {
	// AccountID is the account the action concerned.
	AccountID string
	// Time is when it was done; the backend sets it when zero.
	Time time.Time
	// Actor says who did it: "owner jane@example.com", "admin
	// joe@example.com", "key vm_live_ab12", "operator", "stripe".
	Actor string
	// Action names what was done: "key.created", "webhook.deleted", ….
	Action string
	// Detail is what it was done to: a key's prefix and name, a URL, an
	// email, a pack of credits.
	Detail string
}

// AuditLog keeps each account's newest [MaxAuditEntries] audit entries.
type AuditLog interface {
	// AddAudit appends e to its account's log, dropping the oldest entry
	// beyond [MaxAuditEntries]. Actor and Detail are cut to their bounds.
	AddAudit(ctx context.Context, e AuditEntry) error
	// Audit returns up to limit entries of the account's log, newest
	// first, skipping the offset newest.
	Audit(ctx context.Context, accountID string, offset, limit int) ([]AuditEntry, error)
}

// CutAudit returns e with Actor and Detail cut to their bounds (on a
// rune boundary), for backends.
func CutAudit(e AuditEntry) AuditEntry {
	e.Actor = cutUTF8(e.Actor, MaxAuditActorBytes)
	e.Detail = cutUTF8(e.Detail, MaxAuditDetailBytes)
	return e
}

func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}
