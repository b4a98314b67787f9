package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/store/memstore"
)

// slowLists is a memory store whose lists of the accounts in slow take
// until release is closed to commit: as a store ingesting a list of a
// million rows does (on PostgreSQL, a list of one address and 999,999
// lines that are not addresses, 2 MB sent in a moment, keeps the
// store busy about 20 s, and from an account without credits ends 402
// with nothing charged).
// memDriver is what the memory store's driver implements.
type memDriver interface {
	jobsdriver.ChargingDriver
	jobsdriver.Notifier
	jobsdriver.StatsDriver
	jobsdriver.BatchDeferrer
	jobsdriver.BatchDriver
	jobsdriver.BatchDeleter
	jobsdriver.ListDriver
	jobsdriver.ListDraftDriver
}

type slowLists struct {
	memDriver
	mu       sync.Mutex
	slow     map[string]bool
	release  chan struct{}
	begun    atomic.Int64 // lists begun
	inCommit atomic.Int64 // slow lists waiting in their commit
}

func (s *slowLists) BeginList(ctx context.Context, p jobs.BeginListParams) (jobs.ListWriter, error) {
	s.begun.Add(1)
	w, err := s.memDriver.BeginList(ctx, p)
	s.mu.Lock()
	slow := s.slow[p.AccountID]
	s.mu.Unlock()
	if err != nil || !slow {
		return w, err
	}
	return slowWriter{ListWriter: w, release: s.release, inCommit: &s.inCommit}, nil
}

type slowWriter struct {
	jobs.ListWriter
	release  chan struct{}
	inCommit *atomic.Int64
}

func (w slowWriter) Commit(ctx context.Context) (jobs.ListInfo, error) {
	w.inCommit.Add(1)
	defer w.inCommit.Add(-1)
	select {
	case <-w.release:
	case <-ctx.Done():
	}
	return w.ListWriter.Commit(ctx)
}

// TestListUploadsHeldWhileSubmitted: eight accounts from four networks
// send two small lists each, fast, that the store takes long to ingest
// (lists of many rows that cost nothing). Their upload slots go back once
// their bodies are in: while they are submitted, another account's list
// is taken.
func TestListUploadsHeldWhileSubmitted(t *testing.T) {
	t.Parallel()
	sl := &slowLists{slow: map[string]bool{}, release: make(chan struct{})}
	f := setup(t, &options{
		driver: func(st *memstore.Store) jobsdriver.Driver { sl.memDriver = st.Backend().Jobs.(memDriver); return sl },
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
		a, key := f.newAccount(t, fmt.Sprintf("ingest%d@good.com", i), 10, store.AllPermissions())
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
	for deadline := time.Now().Add(time.Minute); sl.inCommit.Load() < 16; {
		if time.Now().After(deadline) {
			t.Fatalf("%d lists being submitted after a minute, want 16", sl.inCommit.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	code, body := sendList(t, srv, f.key, "203.0.113.9")
	close(sl.release)
	released = true
	if code != http.StatusAccepted {
		t.Fatalf("a customer's list while eight accounts' sixteen lists were being submitted: %d %s", code, body)
	}
}

// TestListSubmissionsPerAccount: an account has at most two lists being
// submitted at once; a third is refused with 429 without being staged,
// and an account without credits is refused with 402 before its rows
// are staged.
func TestListSubmissionsPerAccount(t *testing.T) {
	t.Parallel()
	sl := &slowLists{slow: map[string]bool{}, release: make(chan struct{})}
	f := setup(t, &options{
		driver: func(st *memstore.Store) jobsdriver.Driver { sl.memDriver = st.Backend().Jobs.(memDriver); return sl },
	})
	srv := httptest.NewServer(f.h)
	t.Cleanup(srv.Close)
	a, key := f.newAccount(t, "busy@good.com", 10, store.AllPermissions())
	sl.mu.Lock()
	sl.slow[a.ID] = true
	sl.mu.Unlock()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() { sendList(t, srv, key, "198.51.100.7") })
	}
	for deadline := time.Now().Add(time.Minute); sl.inCommit.Load() < 2; {
		if time.Now().After(deadline) {
			t.Fatalf("%d lists being submitted after a minute, want 2", sl.inCommit.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	begun := sl.begun.Load()
	code, body := sendList(t, srv, key, "198.51.100.7")
	if code != http.StatusTooManyRequests || sl.begun.Load() != begun {
		t.Errorf("a third list of the account while two are submitted: %d %s (%d lists begun, want %d)", code, body, sl.begun.Load(), begun)
	}
	close(sl.release)
	wg.Wait()

	b, broke := f.newAccount(t, "broke@good.com", 1, store.AllPermissions())
	if _, err := f.ledger.Charge(context.Background(), b.ID, f.balance(t, b.ID), "spent"); err != nil {
		t.Fatal(err)
	}
	begun = sl.begun.Load()
	code, body = sendList(t, srv, broke, "198.51.100.8")
	if code != http.StatusPaymentRequired || sl.begun.Load() != begun {
		t.Errorf("a list of an account without credits: %d %s (%d lists begun, want %d)", code, body, sl.begun.Load(), begun)
	}
}
