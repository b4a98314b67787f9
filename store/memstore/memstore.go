package memstore

import (
	"context"
	"encoding/json"
	"maps"
	"sync"
	"time"

	"github.com/validmail/validmail/billing"
	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/store"
	"github.com/validmail/validmail/webhook"
)

var (
	_ store.Accounts            = (*Store)(nil)
	_ store.PlanSetter          = (*Store)(nil)
	_ credits.Store             = (*Store)(nil)
	_ credits.PageStore         = (*Store)(nil)
	_ credits.TotalsStore       = (*Store)(nil)
	_ jobsdriver.Driver         = (*jobsDriver)(nil)
	_ jobsdriver.ChargingDriver = (*jobsDriver)(nil)
	_ jobsdriver.Notifier       = (*jobsDriver)(nil)
	_ jobsdriver.BatchDriver    = (*jobsDriver)(nil)
	_ billing.Store             = (*Store)(nil)
)

// Store is an in-memory backend. It is safe for concurrent use. The zero
// value is not usable; call [New].
type Store struct {
	mu sync.Mutex

	// accounts and keys
	accounts      map[string]*store.Account
	byEmail       map[string]string // normalized email → account id
	keys          map[string]*store.Key
	keyByHash     map[string]string         // hash → key id
	keysByAccount map[string][]string       // account id → key ids, oldest first
	passwords     map[string]string         // account id → password hash
	usage         map[string]map[string]int // "account month" → status → count
	console       consoleState              // confirmations and mailed tokens
	notices       noticeState               // finish mail choices and batch notices
	team          teamState                 // members, invitations, audit logs
	twoFactor     twoFactorState            // second factors, team requirements
	slots         jobsdriver.AccountSlots   // each account's jobs being validated

	// credits
	balances map[string]int64
	ledgers  map[string]*ledger // by account
	entrySeq uint64

	// jobs
	jobSeq   uint64
	tokenSeq uint64
	jobs     map[uint64]*job
	ready    turnHeap          // available jobs due now, in fair order
	delayed  runAtHeap         // available jobs due later, by run-at
	turns    map[string]uint64 // account → the last turn given to one of its jobs
	clock    uint64            // the highest turn leased so far
	running  map[uint64]struct{}
	done     []uint64                    // completed job ids, in completion order
	batches  map[string]map[string]batch // account → idempotency key → batch
	groups   map[string][]uint64         // account → first job id of each enqueue, oldest first
	tallies  map[uint64]*tally           // first job id → the batch's counters
	batchNo  map[string]int64            // account → number of its latest batch
	lists    map[uint64]*memList         // batch id → a list's rows
	drafts   draftState                  // lists waiting for confirmation
	subs     map[chan struct{}]struct{}

	// webhooks (see webhook.go)
	deliveries map[string]*webhook.Delivery // event id → delivery
	pending    map[string]*webhook.Delivery // the unfinished subset of deliveries
	endpoints  map[string]webhook.Endpoint  // account id → endpoint

	// billing (see billing.go)
	checkouts map[string]billing.Checkout // checkout id → checkout
}

// batch is a charged batch remembered under its idempotency key until
// Expires.
type batch struct {
	IDs         []string
	Fingerprint string
	Expires     time.Time
}

// tally is a batch's counters, kept as its jobs complete.
type tally struct {
	account     string
	source      string
	total       int
	completed   int
	counts      map[emailcheck.Status]int
	created     time.Time
	completedAt time.Time
	name        string
	number      int64
}

// batch returns the batch the tally counts, named id.
func (t *tally) batch(id string) jobtype.Batch {
	b := jobtype.Batch{
		ID: id, AccountID: t.account, Source: t.source, State: jobtype.StateActive,
		CreatedAt: t.created, Total: t.total, Completed: t.completed,
		Counts: maps.Clone(t.counts), Name: t.name, Number: t.number,
	}
	if t.completed == t.total {
		b.State, b.CompletedAt = jobtype.StateCompleted, t.completedAt
	}
	return b
}

type jobState uint8

const (
	available jobState = iota
	running
	completed
)

type job struct {
	jobtype.Job
	state   jobState
	token   string
	expires time.Time
	runAt   time.Time
	turn    uint64 // its place in the fair order (see [jobsdriver.Driver])
	seq     uint64 // its id, as a number
}

// New returns an empty Store.
func New() *Store {
	return &Store{
		slots:         jobsdriver.NewMemorySlots(),
		accounts:      make(map[string]*store.Account),
		byEmail:       make(map[string]string),
		keys:          make(map[string]*store.Key),
		keyByHash:     make(map[string]string),
		keysByAccount: make(map[string][]string),
		passwords:     make(map[string]string),
		usage:         make(map[string]map[string]int),
		balances:      make(map[string]int64),
		ledgers:       make(map[string]*ledger),
		jobs:          make(map[uint64]*job),
		running:       make(map[uint64]struct{}),
		turns:         make(map[string]uint64),
		batches:       make(map[string]map[string]batch),
		groups:        make(map[string][]uint64),
		tallies:       make(map[uint64]*tally),
		batchNo:       make(map[string]int64),
		lists:         make(map[uint64]*memList),
		drafts:        newDraftState(),
		subs:          make(map[chan struct{}]struct{}),
		deliveries:    make(map[string]*webhook.Delivery),
		pending:       make(map[string]*webhook.Delivery),
		endpoints:     make(map[string]webhook.Endpoint),
		checkouts:     make(map[string]billing.Checkout),
	}
}

// Dump returns every piece of data the Store holds, JSON-encoded. It is
// meant for tests and debugging.
func (s *Store) Dump(ctx context.Context) ([]byte, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	js := make([]jobtype.Job, 0, len(s.jobs))
	for _, j := range s.jobs {
		js = append(js, j.Job)
	}
	entries := make(map[string][]credits.Entry, len(s.ledgers))
	for acct, l := range s.ledgers {
		entries[acct] = l.entries(acct)
	}
	return json.Marshal(struct {
		Accounts   map[string]*store.Account
		Keys       map[string]*store.Key
		Entries    map[string][]credits.Entry
		Jobs       []jobtype.Job
		Batches    map[string]map[string]batch
		Deliveries map[string]*webhook.Delivery
		Endpoints  map[string]webhook.Endpoint
	}{s.accounts, s.keys, entries, js, s.batches, s.deliveries, s.endpoints})
}

// now is the store's clock.
func now() time.Time { return time.Now().UTC() }

// turnHeap is a min-heap of ready jobs by turn, then id. Its push and pop
// are its own, not container/heap's, so that an entry is never boxed in an
// interface: an enqueue pushes one per job.
type turnHeap []readyJob

// readyJob is an entry of a turnHeap: a job and the turn it was pushed
// with (a job given a new turn since is pushed again; the old entry is
// skipped).
type readyJob struct{ turn, id uint64 }

func (e readyJob) before(o readyJob) bool {
	return e.turn < o.turn || (e.turn == o.turn && e.id < o.id)
}

// push adds e.
func (h *turnHeap) push(e readyJob) {
	*h = append(*h, e)
	a := *h
	for i := len(a) - 1; i > 0; {
		parent := (i - 1) / 2
		if !a[i].before(a[parent]) {
			break
		}
		a[i], a[parent] = a[parent], a[i]
		i = parent
	}
}

// pop removes and returns the first entry; the heap must not be empty.
func (h *turnHeap) pop() readyJob {
	a := *h
	top := a[0]
	n := len(a) - 1
	a[0] = a[n]
	a = a[:n]
	for i := 0; ; {
		least, l, r := i, 2*i+1, 2*i+2
		if l < n && a[l].before(a[least]) {
			least = l
		}
		if r < n && a[r].before(a[least]) {
			least = r
		}
		if least == i {
			break
		}
		a[i], a[least] = a[least], a[i]
		i = least
	}
	*h = a
	return top
}

type delayedJob struct {
	at time.Time
	id uint64
}

// runAtHeap is a min-heap of delayed jobs by run-at.
type runAtHeap []delayedJob

func (h runAtHeap) Len() int           { return len(h) }
func (h runAtHeap) Less(i, j int) bool { return h[i].at.Before(h[j].at) }
func (h runAtHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *runAtHeap) Push(x any)        { *h = append(*h, x.(delayedJob)) }
func (h *runAtHeap) Pop() any {
	old := *h
	x := old[len(old)-1]
	*h = old[:len(old)-1]
	return x
}

func ctxErr(ctx context.Context) error { return ctx.Err() }
