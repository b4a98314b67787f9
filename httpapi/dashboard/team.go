package dashboard

import (
	"context"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/validmail/validmail/httpapi/dashboard/mail"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/ratelimit"
)

// Teams: an account's owner (its own login) invites people by mail as
// admins or members; each signs in with an email and password of their
// own, in sessions of their own, under the sign-in limits of their own
// email. What each role may do is decided per route (routeRoles), from
// one place, so that a page and its actions refuse the same people.

// sessMember is the session key of a signed-in member's id; a session
// without it is the owner's.
const sessMember = "member"

// inviteTTL is how long an invitation link works.
const inviteTTL = 72 * time.Hour

// inviteLimit bounds the invitations an account sends: 20 an hour.
var inviteLimit = ratelimit.Limit{PerSecond: 20.0 / 3600, Burst: 20}

// auditPageSize is how many audit entries a page of the audit log shows.
const auditPageSize = 50

// viewer is who is signed in: the owner (Member zero) or a member.
type viewer struct {
	Role   store.Role
	Member store.Member
}

type viewerKey struct{}

// viewerOf returns the request's signed-in person; the owner when the
// request carries none (a route that runs before authed).
func viewerOf(ctx context.Context) viewer {
	if v, ok := ctx.Value(viewerKey{}).(viewer); ok {
		return v
	}
	return viewer{Role: store.RoleOwner}
}

// rank orders the roles: an owner may do what an admin may, and more.
func rank(r store.Role) int {
	switch r {
	case store.RoleOwner:
		return 3
	case store.RoleAdmin:
		return 2
	case store.RoleMember:
		return 1
	}
	return 0
}

// routeRoles is the least role each console path (relative to the
// prefix, as in the route table) needs; a path not listed serves every
// role. Admins manage keys and the webhook and read the audit log; only
// the owner manages billing, the team and the account's password.
var routeRoles = map[string]store.Role{
	"/keys":                           store.RoleAdmin,
	"/keys/{id}/revoke":               store.RoleAdmin,
	"/webhook":                        store.RoleAdmin,
	"/webhook/rotate":                 store.RoleAdmin,
	"/webhook/test":                   store.RoleAdmin,
	"/webhook/delete":                 store.RoleAdmin,
	"/audit":                          store.RoleAdmin,
	"/billing":                        store.RoleOwner,
	"/billing/checkout":               store.RoleOwner,
	"/billing/receipts/{id}":          store.RoleOwner,
	"/team":                           store.RoleOwner,
	"/team/invite":                    store.RoleOwner,
	"/team/{id}/remove":               store.RoleOwner,
	"/team/totp":                      store.RoleOwner,
	"/team/invitations/{hash}/revoke": store.RoleOwner,
	"/account/password":               store.RoleOwner,
	"/account/notices":                store.RoleOwner,
}

// RouteRole returns the least role a console route (a path of the route
// table) needs: [store.RoleMember] for routes every signed-in person may
// use.
func RouteRole(path string) store.Role {
	if r, ok := routeRoles[path]; ok {
		return r
	}
	return store.RoleMember
}

// roleAllowed runs h for a signed-in person whose role may use path;
// anyone else gets 403.
func (d *Dashboard) roleAllowed(path string, h func(http.ResponseWriter, *http.Request, store.Account)) func(http.ResponseWriter, *http.Request, store.Account) {
	need := RouteRole(path)
	return func(w http.ResponseWriter, r *http.Request, a store.Account) {
		if rank(viewerOf(r.Context()).Role) < rank(need) {
			d.fail(w, r, http.StatusForbidden, "Your role in this team does not allow this page. Ask the account's owner.")
			return
		}
		h(w, r, a)
	}
}

// signedInMember loads the session's member, if any: found false when
// the session names a member that was removed (the session is then
// ended, as if signed out).
func (d *Dashboard) signedInMember(ctx context.Context, a store.Account) (viewer, bool, error) {
	id := d.sessions.GetString(ctx, sessMember)
	if id == "" {
		return viewer{Role: store.RoleOwner}, true, nil
	}
	if d.cfg.Team == nil {
		return viewer{}, false, nil
	}
	m, err := d.cfg.Team.Member(ctx, a.ID, id)
	if errors.Is(err, store.ErrNotFound) {
		return viewer{}, false, nil
	}
	if err != nil {
		return viewer{}, false, err
	}
	return viewer{Role: m.Role, Member: m}, true, nil
}

// actor names the request's signed-in person for the audit log.
func actor(ctx context.Context, a store.Account) string {
	v := viewerOf(ctx)
	if v.Member.ID != "" {
		return string(v.Role) + " " + v.Member.Email
	}
	return "owner " + a.Email
}

// audit adds an entry to the account's audit log; a failure is logged,
// the action it records stands.
func (d *Dashboard) audit(ctx context.Context, a store.Account, action, detail string) {
	if d.cfg.Audit == nil {
		return
	}
	err := d.cfg.Audit.AddAudit(ctx, store.AuditEntry{AccountID: a.ID, Time: d.cfg.Now(), Actor: actor(ctx, a), Action: action, Detail: detail})
	if err != nil {
		d.cfg.Logger.ErrorContext(ctx, "dashboard: audit entry not written", "account_id", a.ID, "action", action, "err", err)
	}
}

// teamRoutes are the team's and the audit log's routes, served when the
// backend keeps them.
func (d *Dashboard) teamRoutes(pub func(string, string, http.HandlerFunc) Route,
	conf func(string, string, func(http.ResponseWriter, *http.Request, store.Account)) Route) []Route {
	var routes []Route
	if d.cfg.Team != nil {
		routes = append(routes,
			pub("GET", "/join", d.joinPage),
			pub("POST", "/join", d.join),
			conf("GET", "/team", d.teamPage),
			conf("POST", "/team/invite", d.invite),
			conf("POST", "/team/{id}/remove", d.removeMember),
			conf("POST", "/team/invitations/{hash}/revoke", d.revokeInvitation),
		)
	}
	if d.cfg.Audit != nil {
		routes = append(routes, conf("GET", "/audit", d.auditPage))
	}
	return routes
}

type teamData struct {
	Owner   string
	OwnerID string
	Members []store.Member
	// Invitations are the account's invitations not yet accepted.
	Invitations []store.Invitation
	Email       string
	Role        string
	Sent        string
	Full        bool
	// TOTPRequired says the owner requires a second factor of the team.
	TOTPRequired bool
	// TOTP says which logins (the owner's account id, members' ids) have
	// a second factor; nil without [Config.TwoFactor].
	TOTP map[string]bool
}

func (d *Dashboard) teamPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	d.renderTeam(w, r, a, http.StatusOK, teamData{Sent: r.URL.Query().Get("sent")}, "", "")
}

func (d *Dashboard) renderTeam(w http.ResponseWriter, r *http.Request, a store.Account, status int, data teamData, errMsg, field string) {
	ms, err := d.cfg.Team.Members(r.Context(), a.ID)
	if err != nil {
		d.backendError(w, r, "list members", err)
		return
	}
	data.Owner, data.OwnerID, data.Members, data.Full = a.Email, a.ID, ms, len(ms) >= store.MaxMembers
	if data.Invitations, err = d.cfg.Team.Invitations(r.Context(), a.ID); err != nil {
		d.backendError(w, r, "list invitations", err)
		return
	}
	if d.cfg.TwoFactor != nil {
		if data.TOTPRequired, err = d.cfg.TwoFactor.TeamTOTP(r.Context(), a.ID); err != nil {
			d.backendError(w, r, "team second factor", err)
			return
		}
		if data.TOTP, err = d.teamTOTPs(r.Context(), a, ms); err != nil {
			d.backendError(w, r, "second factors", err)
			return
		}
	}
	if data.Role == "" {
		data.Role = string(store.RoleMember)
	}
	d.render(w, r, status, "team", page{Title: "Team", Nav: "team", Error: errMsg, Field: field, Data: data})
}

// teamTOTPs says which of the team's logins have a second factor.
func (d *Dashboard) teamTOTPs(ctx context.Context, a store.Account, ms []store.Member) (map[string]bool, error) {
	out := make(map[string]bool, len(ms)+1)
	ids := []string{a.ID}
	for _, m := range ms {
		ids = append(ids, m.ID)
	}
	for _, id := range ids {
		_, err := d.cfg.TwoFactor.TOTP(ctx, id)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return nil, err
		}
		out[id] = err == nil
	}
	return out, nil
}

// invite mails an invitation link to an address, with the role chosen.
func (d *Dashboard) invite(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	email := strings.TrimSpace(r.PostFormValue("email"))
	role := store.Role(r.PostFormValue("role"))
	data := teamData{Email: email, Role: string(role)}
	if store.CheckRole(role) != nil {
		d.renderTeam(w, r, a, http.StatusUnprocessableEntity, data, "Choose admin or member.", "role")
		return
	}
	if !plainAddress(email) {
		d.renderTeam(w, r, a, http.StatusUnprocessableEntity, data, "Enter an email address like jane@example.com.", "email")
		return
	}
	if store.NormalizeEmail(email) == store.NormalizeEmail(a.Email) {
		d.renderTeam(w, r, a, http.StatusUnprocessableEntity, data, "That is the owner's own address.", "email")
		return
	}
	if ok, wait := d.allow(r, "invite:"+a.ID, inviteLimit); !ok {
		retryAfter(w, wait)
		d.renderTeam(w, r, a, http.StatusTooManyRequests, data, "Too many invitations were sent. Try again in "+humanWait(wait)+".", "email")
		return
	}
	taken, err := d.addressTaken(ctx, email)
	if err != nil {
		d.backendError(w, r, "look up address", err)
		return
	}
	if taken || !d.mayMail(ctx, r, email, mailOther) {
		// The same answer as a sent invitation: the inviter learns
		// nothing of an address that signs in already, and a full mail
		// budget of the recipient's keeps invitations out of its inbox.
		d.audit(ctx, a, "member.invited", email+" as "+string(role))
		http.Redirect(w, r, d.path("/team")+"?sent="+urlEscape(email), http.StatusSeeOther)
		return
	}
	tok := newToken()
	err = d.cfg.Team.Invite(ctx, store.Invitation{Hash: store.HashSecret(tok), AccountID: a.ID, Email: email, Role: role, Expiry: d.cfg.Now().Add(inviteTTL)})
	if err != nil {
		d.backendError(w, r, "invite", err)
		return
	}
	link := d.origin(r) + d.path("/join") + "?token=" + tok
	d.send(ctx, mail.Message{To: email, Subject: "You are invited to a validmail team", Body: "Hello,\n\n" +
		a.Email + " invites you to their validmail account as " + string(role) + ".\n\n" +
		"To accept, open this link within 72 hours and choose your password; it works once:\n\n" + link + "\n\n" +
		"If you do not know the sender, ignore this message.\n"})
	d.audit(ctx, a, "member.invited", email+" as "+string(role))
	http.Redirect(w, r, d.path("/team")+"?sent="+urlEscape(email), http.StatusSeeOther)
}

// removeMember removes a member; its sessions end at its next request.
func (d *Dashboard) removeMember(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	id := r.PathValue("id")
	m, err := d.cfg.Team.Member(ctx, a.ID, id)
	if err == nil {
		err = d.cfg.Team.RemoveMember(ctx, a.ID, id)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		d.fail(w, r, http.StatusNotFound, "There is no such member.")
		return
	case err != nil:
		d.backendError(w, r, "remove member", err)
		return
	}
	if d.cfg.TwoFactor != nil {
		if err := d.cfg.TwoFactor.DisableTOTP(ctx, m.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			d.cfg.Logger.WarnContext(ctx, "dashboard: a removed member's second factor not deleted", "err", err)
		}
	}
	d.audit(ctx, a, "member.removed", m.Email+" ("+string(m.Role)+")")
	d.flash(ctx, m.Email+" is no longer in the team.")
	d.redirect(w, r, "/team")
}

type joinForm struct {
	Token string
	// Email and Role are the invitation's: the address being joined.
	Email, Role string
}

// invitationGone is the join page's answer to a link that works no more.
const invitationGone = "This invitation is used, expired or unknown. Ask for a new one."

// joinPage shows the invitation's address and role, and the password
// form; a link that works no more is told so.
func (d *Dashboard) joinPage(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Cache-Control", "no-store")
	tok := r.URL.Query().Get("token")
	if len(tok) > maxNonce {
		tok = ""
	}
	inv, err := d.cfg.Team.Invitation(r.Context(), store.HashSecret(tok))
	switch {
	case errors.Is(err, store.ErrTokenInvalid):
		d.render(w, r, http.StatusGone, "join", page{Title: "Join the team", Error: invitationGone, Data: joinForm{}})
		return
	case err != nil:
		d.backendError(w, r, "invitation", err)
		return
	}
	d.render(w, r, http.StatusOK, "join", page{Title: "Join the team", Data: joinForm{Token: tok, Email: inv.Email, Role: string(inv.Role)}})
}

// revokeInvitation deletes an invitation not yet accepted: its link
// works no more.
func (d *Dashboard) revokeInvitation(w http.ResponseWriter, r *http.Request, a store.Account) {
	ctx := r.Context()
	hash := r.PathValue("hash")
	var email string
	invs, err := d.cfg.Team.Invitations(ctx, a.ID)
	for _, inv := range invs {
		if inv.Hash == hash {
			email = inv.Email
		}
	}
	if err == nil && email == "" {
		err = store.ErrNotFound
	}
	if err == nil {
		err = d.cfg.Team.RevokeInvitation(ctx, a.ID, hash)
	}
	switch {
	case errors.Is(err, store.ErrNotFound):
		d.fail(w, r, http.StatusNotFound, "There is no such invitation.")
		return
	case err != nil:
		d.backendError(w, r, "revoke invitation", err)
		return
	}
	d.audit(ctx, a, "member.invitation_revoked", email)
	d.flash(ctx, "The invitation of "+email+" is revoked: its link works no more.")
	d.redirect(w, r, "/team")
}

// join accepts an invitation with the member's password and signs the
// member in.
func (d *Dashboard) join(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	tok := r.PostFormValue("token")
	password := r.PostFormValue("password")
	form := joinForm{Token: tok}
	w.Header().Set("Cache-Control", "no-store")
	refuse := func(status int, field, msg string) {
		d.render(w, r, status, "join", page{Title: "Join the team", Error: msg, Field: field, Data: form})
	}
	if ok, wait := d.allow(r, "join-ip:"+d.clientKey(r), d.cfg.SignInLimit); !ok {
		retryAfter(w, wait)
		refuse(http.StatusTooManyRequests, "password", "Too many attempts. Try again in "+humanWait(wait)+".")
		return
	}
	if msg := d.passwordProblem(password); msg != "" {
		refuse(http.StatusUnprocessableEntity, "password", msg)
		return
	}
	hash, err := d.hasher.hash(ctx, password)
	if err != nil {
		d.backendError(w, r, "hash password", err)
		return
	}
	m, err := d.cfg.Team.AcceptInvitation(ctx, store.HashSecret(tok), hash)
	switch {
	case errors.Is(err, store.ErrTokenInvalid):
		form.Token = ""
		refuse(http.StatusGone, "", invitationGone)
		return
	case errors.Is(err, store.ErrEmailTaken):
		refuse(http.StatusConflict, "", "This address is a member of a team already: sign in with it.")
		return
	case errors.Is(err, store.ErrTeamFull):
		refuse(http.StatusConflict, "", "The team is full. Ask its owner to make room.")
		return
	case err != nil:
		d.backendError(w, r, "accept invitation", err)
		return
	}
	if _, err := d.cfg.Accounts.GetAccountByEmail(ctx, m.Email); err == nil {
		// The address signed up after it was invited: it signs in as
		// its account's owner, so it is no member.
		if err := d.cfg.Team.RemoveMember(ctx, m.AccountID, m.ID); err != nil && !errors.Is(err, store.ErrNotFound) {
			d.backendError(w, r, "remove member", err)
			return
		}
		refuse(http.StatusConflict, "", "This address has an account of its own already: sign in with it.")
		return
	} else if !errors.Is(err, store.ErrNotFound) {
		d.backendError(w, r, "get account", err)
		return
	}
	a, err := d.cfg.Accounts.GetAccount(ctx, m.AccountID)
	if err != nil {
		d.backendError(w, r, "get account", err)
		return
	}
	d.audit(context.WithValue(ctx, viewerKey{}, viewer{Role: m.Role, Member: m}), a, "member.joined", m.Email+" as "+string(m.Role))
	d.flash(ctx, "Welcome to the team.")
	// A new member has no second factor yet; a team requiring one sends
	// it to add one.
	d.signIn(w, r, a, m, "", false)
}

type auditData struct {
	Entries    []store.AuditEntry
	Page       int
	Prev, Next string
}

// auditPage shows the account's audit log, newest first, a page at a
// time (?page=N, from 1).
func (d *Dashboard) auditPage(w http.ResponseWriter, r *http.Request, a store.Account) {
	n, err := strconv.Atoi(r.URL.Query().Get("page"))
	if err != nil || n < 1 {
		n = 1
	}
	n = min(n, store.MaxAuditEntries/auditPageSize+1)
	es, err := d.cfg.Audit.Audit(r.Context(), a.ID, (n-1)*auditPageSize, auditPageSize+1)
	if err != nil {
		d.backendError(w, r, "audit log", err)
		return
	}
	data := auditData{Page: n}
	if len(es) > auditPageSize {
		es = es[:auditPageSize]
		data.Next = d.path("/audit") + "?page=" + strconv.Itoa(n+1)
	}
	if n > 1 {
		data.Prev = d.path("/audit") + "?page=" + strconv.Itoa(n-1)
	}
	data.Entries = es
	d.render(w, r, http.StatusOK, "audit", page{Title: "Audit log", Nav: "audit", Data: data})
}

// memberLogin finds the member with the email and its account, for a
// sign-in: the member's password hash, or "" and no error when no member
// has the email.
func (d *Dashboard) memberLogin(ctx context.Context, email string) (store.Member, store.Account, string, error) {
	m, err := d.cfg.Team.MemberByEmail(ctx, email)
	if errors.Is(err, store.ErrNotFound) {
		return store.Member{}, store.Account{}, "", nil
	}
	if err != nil {
		return store.Member{}, store.Account{}, "", err
	}
	a, err := d.cfg.Accounts.GetAccount(ctx, m.AccountID)
	if errors.Is(err, store.ErrNotFound) {
		return store.Member{}, store.Account{}, "", nil
	}
	if err != nil {
		return store.Member{}, store.Account{}, "", err
	}
	return m, a, m.PasswordHash, nil
}

// addressTaken reports whether email signs in already, as an account's
// owner or as a member of any team: a person signs in with one address
// as one person.
func (d *Dashboard) addressTaken(ctx context.Context, email string) (bool, error) {
	_, err := d.cfg.Accounts.GetAccountByEmail(ctx, email)
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, store.ErrNotFound) {
		return false, err
	}
	return d.memberExists(ctx, email)
}

// memberExists reports whether email is a member of a team; false
// without [Config.Team].
func (d *Dashboard) memberExists(ctx context.Context, email string) (bool, error) {
	if d.cfg.Team == nil {
		return false, nil
	}
	_, err := d.cfg.Team.MemberByEmail(ctx, email)
	if err == nil {
		return true, nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return false, nil
	}
	return false, err
}

// keyDetail names a key in the audit log: its prefix and name.
func keyDetail(k store.Key) string {
	if k.Name == "" {
		return k.Prefix + "…"
	}
	return k.Prefix + "… " + k.Name
}
