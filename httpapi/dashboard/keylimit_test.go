package dashboard_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"testing"

	"github.com/validmail/validmail/httpapi/dashboard"
)

// Concurrent key creations in the console never leave an account with
// more active keys than the bound, on any backend.
func TestKeyLimitConcurrent(t *testing.T) {
	const limit, posts = 5, 20
	for _, be := range testBackends(t) {
		t.Run(be.name, func(t *testing.T) {
			b := be.open(t)
			s := startSite(t, b, func(dc *dashboard.Config, _ string) { dc.MaxKeys = limit })
			email := "limit-" + be.name + "@example.com"
			u := newUser(t, s.base)
			u.signup(email)
			ctx := context.Background()
			a, err := b.Accounts.GetAccountByEmail(ctx, email)
			if err != nil {
				t.Fatal(err)
			}
			held := func() int {
				ks, err := b.Accounts.ListKeys(ctx, a.ID)
				if err != nil {
					t.Fatal(err)
				}
				n := 0
				for _, k := range ks {
					if !k.Revoked() {
						n++
					}
				}
				return n
			}
			before := held()
			var mu sync.Mutex
			codes := map[int]int{}
			var wg sync.WaitGroup
			for range posts {
				wg.Go(func() {
					a := u.do("POST", "/dashboard/keys", url.Values{"name": {"k"}, "permissions": {"validate"}})
					if a.code == http.StatusConflict && !strings.Contains(a.body, "active keys, the most allowed") {
						t.Errorf("refusal without its message:\n%s", a.body)
					}
					mu.Lock()
					codes[a.code]++
					mu.Unlock()
				})
			}
			wg.Wait()
			if codes[http.StatusCreated] != limit-before || codes[http.StatusConflict] != posts-(limit-before) {
				t.Errorf("answers %v with %d keys held before, want %d created and the rest refused", codes, before, limit-before)
			}
			if n := held(); n != limit {
				t.Errorf("%d active keys, want %d", n, limit)
			}
		})
	}
}
