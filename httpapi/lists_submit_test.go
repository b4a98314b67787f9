package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
)

// slowLists is a memory store whose lists of the accounts in slow take
// until release is closed to commit: as a store ingesting a list of a
// million rows does (on PostgreSQL, a list of one address and 999,999
// lines that are not addresses, 2 MB sent in a moment, keeps the
// store busy about 20 s, and from an account without credits ends 402
// with nothing charged).
type slowLists struct {
	*memstore.Store
	mu      sync.Mutex
	slow    map[string]bool
	release chan struct{}
}

func (s *slowLists) BeginList(ctx context.Context, p jobs.BeginListParams) (jobs.ListWriter, error) {
	w, err := s.Store.BeginList(ctx, p)
	s.mu.Lock()
	slow := s.slow[p.AccountID]
	s.mu.Unlock()
	if err != nil || !slow {
		return w, err
	}
	return slowWriter{ListWriter: w, release: s.release}, nil
}

type slowWriter struct {
	jobs.ListWriter
	release chan struct{}
}

func (w slowWriter) Commit(ctx context.Context) (jobs.ListInfo, error) {
	select {
	case <-w.release:
	case <-ctx.Done():
	}
	return w.ListWriter.Commit(ctx)
}

// TestListUploadsHeldWhileSubmitted: eight accounts from four networks
// send two small lists each, fast, that the store takes long to ingest
// (lists of many rows that cost nothing). While they are submitted, every
// upload slot of the instance is theirs: another account's list is still
// taken.
func TestListUploadsHeldWhileSubmitted(t *testing.T) {
	t.Parallel()
	sl := &slowLists{slow: map[string]bool{}, release: make(chan struct{})}
	f := setup(t, &options{
		driver: func(st *memstore.Store) jobs.Driver { sl.Store = st; return sl },
		configure: func(c *httpapi.Config) {
			c.ClientIP = func(r *http.Request) string { return r.Header.Get("X-Test-Client") }
		},
	})
	srv := httptest.NewServer(f.h)
	t.Cleanup(srv.Close)
	var wg sync.WaitGroup
	defer wg.Wait()
	released := false
	defer func() {
		if !released {
			close(sl.release)
		}
	}()
	for i := range 8 {
		a, key := f.newAccount(t, fmt.Sprintf("ingest%d@good.com", i), 0, store.AllPermissions())
		sl.mu.Lock()
		sl.slow[a.ID] = true
		sl.mu.Unlock()
		for range 2 {
			wg.Go(func() {
				req, _ := http.NewRequest("POST", srv.URL+"/api/v1/lists", strings.NewReader("email\nslow@good.com\n"))
				req.Header.Set("x-api-key", key)
				req.Header.Set("X-Test-Client", fmt.Sprintf("198.51.%d.7", i/2))
				req.Header.Set("Content-Type", "text/csv")
				if resp, err := srv.Client().Do(req); err == nil {
					resp.Body.Close()
				}
			})
		}
	}
	waitHeld(t, f, httpapi.DefaultMaxListUploads)
	code, body := sendList(t, srv, f.key, "203.0.113.9")
	close(sl.release)
	released = true
	if code != http.StatusAccepted {
		t.Fatalf("a customer's list while eight accounts' sixteen lists were being submitted: %d %s", code, body)
	}
}
