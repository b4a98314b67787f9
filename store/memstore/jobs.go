package memstore

import (
	"cmp"
	"container/heap"
	"context"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
	"github.com/validmail/validmail/webhook"
)

// Enqueue implements [jobsdriver.Driver].
func (s *jobsDriver) Enqueue(ctx context.Context, p jobtype.EnqueueParams) ([]string, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if len(p.Emails) == 0 {
		return nil, jobtype.ErrEmptyBatch
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.enqueueLocked(p), nil
}

// EnqueueCharged implements [jobsdriver.ChargingDriver]: the charge and the jobs
// are written under one lock.
func (s *jobsDriver) EnqueueCharged(ctx context.Context, p jobtype.EnqueueChargedParams) ([]string, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if len(p.Emails) == 0 {
		return nil, jobtype.ErrEmptyBatch
	}
	n := int64(len(p.Emails))
	s.mu.Lock()
	defer s.mu.Unlock()
	// A replayed key answers with the ids of the first submission and
	// charges nothing, as long as it names the same batch: the client that
	// lost the first answer gets it again.
	t := now()
	if p.IdempotencyKey != "" {
		if b, ok := s.batches[p.AccountID][p.IdempotencyKey]; ok && t.Before(b.Expires) {
			if len(b.IDs) != len(p.Emails) || b.Fingerprint != p.Fingerprint {
				return nil, fmt.Errorf("%w: key %q", credits.ErrIdempotencyConflict, p.IdempotencyKey)
			}
			return slices.Clone(b.IDs), nil
		}
	}
	// The batch's record, not the ledger, remembers the key: the record
	// expires, the ledger's entries stay.
	c := credits.Change{AccountID: p.AccountID, Delta: -n, Reason: credits.ReasonCharge, Reference: p.IdempotencyKey}
	// Check the charge before writing anything: a refused charge must
	// leave no job behind. Under the one lock nothing can change between
	// the check and the writes below.
	if _, err := s.checkLocked(c); err != nil {
		return nil, err
	}
	ids := s.enqueueLocked(jobtype.EnqueueParams{AccountID: p.AccountID, Emails: p.Emails, Cost: 1, Source: p.Source})
	if c.Reference == "" {
		c.Reference = "jobs:" + ids[0] + "-" + ids[len(ids)-1]
	}
	s.writeLocked(c)
	if p.IdempotencyKey != "" {
		m := s.batches[p.AccountID]
		if m == nil {
			m = make(map[string]batch)
			s.batches[p.AccountID] = m
		}
		ttl := cmp.Or(p.IdempotencyTTL, jobtype.DefaultIdempotencyTTL)
		m[p.IdempotencyKey] = batch{IDs: slices.Clone(ids), Fingerprint: p.Fingerprint, Expires: t.Add(ttl)}
	}
	return ids, nil
}

func (s *Store) enqueueLocked(p jobtype.EnqueueParams) []string {
	t := now()
	ids := make([]string, len(p.Emails))
	// The batch is named after its first job; ids are consecutive under
	// the lock, so the batch's jobs are first .. first+n-1.
	first := s.jobSeq + 1
	batchID := strconv.FormatUint(first, 10)
	source := cmp.Or(p.Source, jobtype.SourceAPI)
	s.groups[p.AccountID] = append(s.groups[p.AccountID], first)
	s.batchNo[p.AccountID]++
	s.tallies[first] = &tally{account: p.AccountID, source: source, total: len(p.Emails), counts: map[emailcheck.Status]int{}, created: t,
		number: s.batchNo[p.AccountID]}
	turn := s.takeTurnsLocked(p.AccountID, len(p.Emails))
	for i, email := range p.Emails {
		s.jobSeq++
		id := s.jobSeq
		s.jobs[id] = &job{Job: jobtype.Job{
			ID:        strconv.FormatUint(id, 10),
			AccountID: p.AccountID,
			Email:     email,
			State:     jobtype.StateActive,
			Cost:      p.Cost,
			BatchID:   batchID,
			Source:    source,
			CreatedAt: t,
		}, turn: turn + uint64(i), seq: id}
		s.ready.push(readyJob{turn: turn + uint64(i), id: id})
		ids[i] = strconv.FormatUint(id, 10)
	}
	// Wake the subscribed pools without blocking: a full channel already
	// holds a wake-up they have not read.
	for ch := range s.subs {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
	return ids
}

// Subscribe implements [jobsdriver.Notifier].
func (s *jobsDriver) Subscribe(ctx context.Context) (<-chan struct{}, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	ch := make(chan struct{}, 1)
	s.mu.Lock()
	s.subs[ch] = struct{}{}
	s.mu.Unlock()
	context.AfterFunc(ctx, func() {
		s.mu.Lock()
		delete(s.subs, ch)
		s.mu.Unlock()
	})
	return ch, nil
}

// Lease implements [jobsdriver.Driver].
func (s *jobsDriver) Lease(ctx context.Context, p jobsdriver.LeaseParams) ([]jobsdriver.Lease, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	if p.Max < 1 || p.Duration <= 0 {
		return nil, fmt.Errorf("jobs: invalid lease request (max %d, duration %v)", p.Max, p.Duration)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := now()
	// Jobs retried for later wait in the delayed heap; move those now due
	// to the ready heap, which hands out the lowest turn first (the fair
	// order, see [jobsdriver.Driver]), each with a new turn behind its account's
	// jobs waiting now.
	for len(s.delayed) > 0 && !s.delayed[0].at.After(t) {
		d := heap.Pop(&s.delayed).(delayedJob)
		if j, ok := s.jobs[d.id]; ok && j.state == available && j.runAt.Equal(d.at) {
			j.turn = s.takeTurnsLocked(j.AccountID, 1)
			s.ready.push(readyJob{turn: j.turn, id: d.id})
		}
	}
	out := make([]jobsdriver.Lease, 0, min(p.Max, len(s.ready)))
	exp := t.Add(p.Duration)
	for len(out) < p.Max && len(s.ready) > 0 {
		e := s.ready.pop()
		j, ok := s.jobs[e.id]
		// The heaps may hold ids of jobs removed, leased or given another
		// turn since they were pushed; skipping them is cheaper than
		// deleting from a heap.
		if !ok || j.state != available || j.turn != e.turn {
			continue
		}
		out = append(out, s.leaseLocked(j, exp))
	}
	return out, nil
}

// leaseLocked leases j until exp.
func (s *Store) leaseLocked(j *job, exp time.Time) jobsdriver.Lease {
	s.clock = max(s.clock, j.turn)
	// A fresh token per lease: a worker whose lease was rescued and
	// handed to another can no longer change the job.
	s.tokenSeq++
	j.state = running
	j.token = strconv.FormatUint(s.tokenSeq, 36)
	j.expires = exp
	s.running[j.seq] = struct{}{}
	return jobsdriver.Lease{Job: j.Job, Token: j.token, ExpiresAt: exp}
}

// heldLocked returns the running job that token holds, or an error. It is
// the compare-and-set behind every change after leasing: the state must
// still be running and the token the current lease's, so a completed job
// is never completed twice and a worker that lost its lease (rescued after
// expiry) writes nothing ([jobtype.ErrLeaseLost]).
func (s *Store) heldLocked(id, token string) (*job, uint64, error) {
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return nil, 0, jobtype.ErrNotFound
	}
	j, ok := s.jobs[n]
	if !ok {
		return nil, 0, jobtype.ErrNotFound
	}
	if j.state != running || j.token != token || token == "" {
		return nil, 0, jobtype.ErrLeaseLost
	}
	return j, n, nil
}

// Heartbeat implements [jobsdriver.Driver].
func (s *jobsDriver) Heartbeat(ctx context.Context, p jobsdriver.HeartbeatParams) (time.Time, error) {
	if err := ctxErr(ctx); err != nil {
		return time.Time{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, _, err := s.heldLocked(p.ID, p.Token)
	if err != nil {
		return time.Time{}, err
	}
	j.expires = now().Add(p.Duration)
	return j.expires, nil
}

// Complete implements [jobsdriver.Driver].
func (s *jobsDriver) Complete(ctx context.Context, p jobsdriver.CompleteParams) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, n, err := s.heldLocked(p.ID, p.Token)
	if err != nil {
		return err
	}
	t := now()
	if p.Event != nil {
		if _, dup := s.deliveries[p.Event.ID]; dup {
			return fmt.Errorf("%w: %s", webhook.ErrDuplicate, p.Event.ID)
		}
	}
	b := s.tallyLocked(j.AccountID, j.BatchID)
	if e := p.BatchEvent; e != nil && b != nil && b.completed+1 == b.total {
		if _, dup := s.deliveries[e.ID]; dup {
			return fmt.Errorf("%w: %s", webhook.ErrDuplicate, e.ID)
		}
	}
	if p.Refund > 0 {
		c := credits.Change{AccountID: j.AccountID, Delta: p.Refund, Reason: credits.ReasonRefund, Reference: "job:" + j.ID, IdempotencyKey: "refund:job:" + j.ID}
		if _, err := s.applyLocked(c); err != nil {
			return err
		}
	}
	if p.Event != nil {
		s.addDeliveryLocked(jobEvent(j, p.Event, t))
	}
	if b != nil {
		b.completed++
		b.counts[p.Result.Confidence.Status]++
		if b.completed == b.total {
			b.completedAt = t
			if e := p.BatchEvent; e != nil {
				// The batch's final counts, under the same lock, as the
				// event's data: the webhook package makes its bytes.
				ev := jobEvent(j, e, e.CreatedAt)
				data := jobsdriver.BatchCompleted(b.batch(j.BatchID))
				ev.Batch = &data
				_ = ev.Expand() // an event with Batch always expands
				s.addDeliveryLocked(ev)
			}
		}
	}
	res := p.Result
	j.Result = &res
	j.State = jobtype.StateCompleted
	j.CompletedAt = t
	j.state = completed
	j.token = ""
	delete(s.running, n)
	s.done = append(s.done, n)
	return nil
}

// Retry implements [jobsdriver.Driver].
func (s *jobsDriver) Retry(ctx context.Context, p jobsdriver.RetryParams) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, n, err := s.heldLocked(p.ID, p.Token)
	if err != nil {
		return err
	}
	if p.Error != "" {
		j.Errors++
		j.LastError = p.Error
		j.Unjudged = p.Unjudged
	}
	if p.Error != "" && p.RunAt.IsZero() {
		// A failed attempt costs the account a turn: the job waits
		// behind the account's other jobs. One handed back for later
		// takes its turn when it comes due (see Lease), whatever the
		// caller's clock made of "later".
		j.turn = s.takeTurnsLocked(j.AccountID, 1)
	}
	s.makeAvailableLocked(j, n, p.RunAt)
	return nil
}

// takeTurnsLocked gives n consecutive turns to new jobs of account and
// returns the first: the account's jobs follow the later of its last
// turn (its jobs still waiting) and the latest turn leased (the queue's
// position), so that jobs of accounts with work waiting alternate.
func (s *Store) takeTurnsLocked(account string, n int) uint64 {
	start := max(s.clock, s.turns[account])
	s.turns[account] = start + uint64(n)
	return start + 1
}

func (s *Store) makeAvailableLocked(j *job, n uint64, runAt time.Time) {
	j.state = available
	j.token = ""
	j.runAt = runAt
	delete(s.running, n)
	if !runAt.IsZero() {
		heap.Push(&s.delayed, delayedJob{at: runAt, id: n})
	} else {
		s.ready.push(readyJob{turn: j.turn, id: n})
	}
}

// RescueExpired implements [jobsdriver.Driver].
func (s *jobsDriver) RescueExpired(ctx context.Context, p jobsdriver.RescueParams) (int, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t := now()
	count := 0
	// A rescued job counts a failure, so a job that kills its worker every
	// time runs out of attempts instead of looping forever.
	for n := range s.running {
		if p.Limit > 0 && count >= p.Limit {
			break
		}
		j, ok := s.jobs[n]
		if !ok || j.state != running || !j.expires.Before(t) {
			continue
		}
		j.Errors++
		j.LastError = "lease expired"
		j.Unjudged = 0
		s.makeAvailableLocked(j, n, time.Time{})
		count++
	}
	if count > 0 {
		for ch := range s.subs {
			select {
			case ch <- struct{}{}:
			default:
			}
		}
	}
	return count, nil
}

// Get implements [jobsdriver.Driver].
func (s *jobsDriver) Get(ctx context.Context, account, id string) (jobtype.Job, error) {
	if err := ctxErr(ctx); err != nil {
		return jobtype.Job{}, err
	}
	n, err := strconv.ParseUint(id, 10, 64)
	if err != nil {
		return jobtype.Job{}, jobtype.ErrNotFound
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	j, ok := s.jobs[n]
	// Another account's job is as unknown as a missing one, so ids cannot
	// be probed across accounts.
	if !ok || j.AccountID != account {
		return jobtype.Job{}, jobtype.ErrNotFound
	}
	out := j.Job
	if j.Result != nil {
		r := *j.Result
		out.Result = &r
	}
	return out, nil
}

// Cleanup implements [jobsdriver.Driver].
func (s *jobsDriver) Cleanup(ctx context.Context, p jobsdriver.CleanupParams) (int, error) {
	if err := ctxErr(ctx); err != nil {
		return 0, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	count := 0
	// done is in completion order, so the jobs old enough to remove are a
	// prefix of it.
	for len(s.done) > 0 && (p.Limit <= 0 || count < p.Limit) {
		j, ok := s.jobs[s.done[0]]
		if !ok { // its batch was deleted
			s.done = s.done[1:]
			continue
		}
		if !j.CompletedAt.Before(p.CompletedBefore) {
			break
		}
		delete(s.jobs, s.done[0])
		s.done = s.done[1:]
		count++
	}
	// A batch goes with its jobs: once its last job is past the
	// retention, so is the batch.
	for account, firsts := range s.groups {
		kept := firsts[:0]
		for _, first := range firsts {
			if b := s.tallies[first]; b.completed == b.total && b.completedAt.Before(p.CompletedBefore) {
				delete(s.tallies, first)
				delete(s.lists, first)
				continue
			}
			kept = append(kept, first)
		}
		if len(kept) == 0 {
			delete(s.groups, account)
		} else {
			s.groups[account] = kept
		}
	}
	// Idempotency records are removed once expired.
	t := now()
	for account, m := range s.batches {
		for key, b := range m {
			if !t.Before(b.Expires) {
				delete(m, key)
			}
		}
		if len(m) == 0 {
			delete(s.batches, account)
		}
	}
	return count, nil
}

// tallyLocked returns the counters of the account's batch, or nil.
func (s *Store) tallyLocked(account, batchID string) *tally {
	first, err := strconv.ParseUint(batchID, 10, 64)
	if err != nil {
		return nil
	}
	b := s.tallies[first]
	if b == nil || b.account != account {
		return nil
	}
	return b
}

// batchJobsLocked returns up to limit jobs of the account's batch that
// are still kept, from the id after after (0 for the first), in submission
// order, or nil when there are none. A batch's jobs are consecutive ids
// from its first, so only the page asked for is read.
func (s *Store) batchJobsLocked(account, batchID string, after uint64, limit int) []jobtype.Job {
	first, err := strconv.ParseUint(batchID, 10, 64)
	if err != nil {
		return nil
	}
	var out []jobtype.Job
	for id := max(first, after+1); len(out) < limit; id++ {
		j, ok := s.jobs[id]
		if !ok {
			if id > s.jobSeq {
				break
			}
			continue // removed after the retention
		}
		if j.BatchID != batchID {
			break
		}
		if j.AccountID != account {
			return nil
		}
		c := j.Job
		if j.Result != nil {
			r := *j.Result
			c.Result = &r
		}
		out = append(out, c)
	}
	return out
}

// Batch implements [jobsdriver.BatchDriver].
func (s *jobsDriver) Batch(ctx context.Context, accountID, batchID string) (jobtype.Batch, error) {
	if err := ctxErr(ctx); err != nil {
		return jobtype.Batch{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.tallyLocked(accountID, batchID)
	if b == nil {
		return jobtype.Batch{}, jobtype.ErrNotFound
	}
	return b.batch(batchID), nil
}

// Batches implements [jobsdriver.BatchDriver].
func (s *jobsDriver) Batches(ctx context.Context, p jobtype.BatchesParams) ([]jobtype.Batch, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	before := uint64(0)
	if p.Before != "" {
		n, err := strconv.ParseUint(p.Before, 10, 64)
		if err != nil {
			return nil, nil
		}
		before = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	groups := s.groups[p.AccountID]
	var out []jobtype.Batch
	for i := len(groups) - 1; i >= 0 && len(out) < p.Limit; i-- {
		if before != 0 && groups[i] >= before {
			continue
		}
		if b := s.tallies[groups[i]]; b != nil {
			out = append(out, b.batch(strconv.FormatUint(groups[i], 10)))
		}
	}
	return out, nil
}

// BatchJobs implements [jobsdriver.BatchDriver].
func (s *jobsDriver) BatchJobs(ctx context.Context, p jobtype.BatchJobsParams) ([]jobtype.Job, error) {
	if err := ctxErr(ctx); err != nil {
		return nil, err
	}
	after := uint64(0)
	if p.After != "" {
		n, err := strconv.ParseUint(p.After, 10, 64)
		if err != nil {
			return nil, nil
		}
		after = n
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.tallyLocked(p.AccountID, p.BatchID) == nil {
		return nil, jobtype.ErrNotFound
	}
	return s.batchJobsLocked(p.AccountID, p.BatchID, after, p.Limit), nil
}

var _ jobsdriver.BatchDeferrer = (*jobsDriver)(nil)

// DeferMany implements [jobsdriver.BatchDeferrer]: each item as Retry.
func (s *jobsDriver) DeferMany(ctx context.Context, ps []jobsdriver.RetryParams) []error {
	errs := make([]error, len(ps))
	for i, p := range ps {
		errs[i] = s.Retry(ctx, p)
	}
	return errs
}

var _ jobsdriver.BatchDeleter = (*jobsDriver)(nil)

// DeleteBatch implements [jobsdriver.BatchDeleter]: the batch's counters, jobs
// and list rows go under the lock. The heaps and the completion order
// may still name its jobs' ids; their readers skip ids with no job.
func (s *jobsDriver) DeleteBatch(ctx context.Context, accountID, batchID string) error {
	if err := ctxErr(ctx); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	b := s.tallyLocked(accountID, batchID)
	if b == nil {
		return jobtype.ErrNotFound
	}
	first, _ := strconv.ParseUint(batchID, 10, 64)
	for id := first; id < first+uint64(b.total); id++ {
		if j, ok := s.jobs[id]; ok && j.BatchID == batchID {
			delete(s.jobs, id)
			delete(s.running, id)
		}
	}
	delete(s.tallies, first)
	delete(s.lists, first)
	s.groups[accountID] = slices.DeleteFunc(s.groups[accountID], func(f uint64) bool { return f == first })
	if len(s.groups[accountID]) == 0 {
		delete(s.groups, accountID)
	}
	return nil
}
