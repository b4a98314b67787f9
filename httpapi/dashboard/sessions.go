package dashboard

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/alexedwards/scs/v2"

	"github.com/validmail/validmail/store"
)

// sessionStore adapts a [store.SessionStore] to scs: the token in the
// cookie is hashed before it reaches the backend, and each session is
// saved with the account it signed in, read from its values.
//
// scs saves a loaded session again at the end of every request (to move
// its idle expiry). A session loaded by this request is only updated,
// never created, so that one ended meanwhile (a password change
// elsewhere) stays ended; sessionLoads records what a request loaded.
type sessionStore struct {
	s     store.SessionStore
	codec scs.Codec
}

// sessionLoad is what one request loaded from the store.
type sessionLoad struct {
	mu sync.Mutex
	id string
}

type sessionLoadKey struct{}

// trackSessionLoads gives each request a record of the session it loads.
func trackSessionLoads(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), sessionLoadKey{}, &sessionLoad{})))
	})
}

func loadedSession(ctx context.Context) *sessionLoad {
	l, _ := ctx.Value(sessionLoadKey{}).(*sessionLoad)
	return l
}

// FindCtx implements scs.CtxStore.
func (a sessionStore) FindCtx(ctx context.Context, token string) ([]byte, bool, error) {
	id := store.HashSecret(token)
	b, found, err := a.s.FindSession(ctx, id)
	if found && err == nil {
		if l := loadedSession(ctx); l != nil {
			l.mu.Lock()
			l.id = id
			l.mu.Unlock()
		}
	}
	return b, found, err
}

// CommitCtx implements scs.CtxStore. The save is not cancelled with the
// request: the server cancels it when a read of the body fails (an upload
// it ended for stalling or losing its slot), and the page that says so
// must still be sent with its session.
func (a sessionStore) CommitCtx(ctx context.Context, token string, b []byte, expiry time.Time) error {
	ctx = context.WithoutCancel(ctx)
	s := store.Session{ID: store.HashSecret(token), Data: b, Expiry: expiry}
	if _, values, err := a.codec.Decode(b); err == nil {
		s.AccountID, _ = values[sessAccount].(string)
	}
	if l := loadedSession(ctx); l != nil {
		l.mu.Lock()
		loaded := l.id == s.ID
		l.mu.Unlock()
		if loaded {
			return a.s.UpdateSession(ctx, s)
		}
	}
	return a.s.SaveSession(ctx, s)
}

// DeleteCtx implements scs.CtxStore.
func (a sessionStore) DeleteCtx(ctx context.Context, token string) error {
	return a.s.DeleteSession(ctx, store.HashSecret(token))
}

// Find implements scs.Store.
func (a sessionStore) Find(token string) ([]byte, bool, error) {
	return a.FindCtx(context.Background(), token)
}

// Commit implements scs.Store.
func (a sessionStore) Commit(token string, b []byte, expiry time.Time) error {
	return a.CommitCtx(context.Background(), token, b, expiry)
}

// Delete implements scs.Store.
func (a sessionStore) Delete(token string) error {
	return a.DeleteCtx(context.Background(), token)
}

// sessionID returns the stored id of the request's session, "" if it
// has none yet.
func (d *Dashboard) sessionID(ctx context.Context) string {
	if tok := d.sessions.Token(ctx); tok != "" {
		return store.HashSecret(tok)
	}
	return ""
}
