package pgstore

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/validmail/validmail/jobs/jobsdriver"
	"github.com/validmail/validmail/jobs/jobtype"
)

var _ jobsdriver.ListDraftDriver = (*jobsDriver)(nil)

// PutListDraftChunk implements [jobsdriver.ListDraftDriver]: one row of
// list_draft_chunks.
func (s *jobsDriver) PutListDraftChunk(ctx context.Context, id string, n int, data []byte, expiresAt time.Time) error {
	if data == nil {
		data = []byte{}
	}
	_, err := s.pool.Exec(ctx, s.sql(`
		INSERT INTO {schema}.list_draft_chunks (draft_id, n, data, expires_at) VALUES ($1, $2, $3, $4)
		ON CONFLICT (draft_id, n) DO UPDATE SET data = EXCLUDED.data, expires_at = EXCLUDED.expires_at`),
		id, n, data, expiresAt)
	return fail(ctx, "put list draft chunk", err)
}

// PutListDraft implements [jobsdriver.ListDraftDriver] in one transaction,
// which locks the account's and the network's drafts (an advisory lock
// on each) so that concurrent puts keep the bounds; expired drafts and
// chunks are removed first.
func (s *jobsDriver) PutListDraft(ctx context.Context, p jobtype.PutListDraftParams) (bool, error) {
	d := p.Draft
	tx, err := s.pool.Begin(ctx)
	if err != nil {
		return false, fail(ctx, "put list draft", err)
	}
	defer rollback(tx)
	if _, err := tx.Exec(ctx, s.sql(`SELECT pg_advisory_xact_lock(hashtextextended('validmail list draft ' || $2 || ' ' || k, 0))
		FROM unnest($1::text[]) AS k ORDER BY k`), []string{"account " + d.AccountID, "network " + d.Network}, s.schema); err != nil {
		return false, fail(ctx, "put list draft: lock", err)
	}
	if _, err := tx.Exec(ctx, s.sql(`
		WITH gone AS (DELETE FROM {schema}.list_drafts WHERE expires_at <= now() RETURNING id)
		DELETE FROM {schema}.list_draft_chunks WHERE expires_at <= now() OR draft_id IN (SELECT id FROM gone)`)); err != nil {
		return false, fail(ctx, "put list draft: expired", err)
	}
	var others []string
	rows, err := tx.Query(ctx, s.sql(`SELECT id FROM {schema}.list_drafts WHERE account = $1 AND id <> $2 AND expires_at > now()`), d.AccountID, d.ID)
	if err == nil {
		others, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil {
		return false, fail(ctx, "put list draft: account", err)
	}
	if p.Restore && len(others) > 0 {
		return false, nil
	}
	drop := others
	if p.PerNetwork > 0 && d.Network != "" {
		rows, err := tx.Query(ctx, s.sql(`
			SELECT id FROM {schema}.list_drafts
			WHERE network = $1 AND id <> $2 AND account <> $3 AND expires_at > now()
			ORDER BY seq DESC OFFSET $4`), d.Network, d.ID, d.AccountID, p.PerNetwork-1)
		var old []string
		if err == nil {
			old, err = pgx.CollectRows(rows, pgx.RowTo[string])
		}
		if err != nil {
			return false, fail(ctx, "put list draft: network", err)
		}
		drop = append(drop, old...)
	}
	if len(drop) > 0 {
		if _, err := tx.Exec(ctx, s.sql(`
			WITH gone AS (DELETE FROM {schema}.list_drafts WHERE id = ANY($1) RETURNING id)
			DELETE FROM {schema}.list_draft_chunks WHERE draft_id = ANY($1)`), drop); err != nil {
			return false, fail(ctx, "put list draft: drop", err)
		}
	}
	if d.Meta == nil {
		d.Meta = []byte{}
	}
	_, err = tx.Exec(ctx, s.sql(`
		INSERT INTO {schema}.list_drafts (id, account, network, meta, chunks, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
		ON CONFLICT (id) DO UPDATE SET account = EXCLUDED.account, network = EXCLUDED.network, meta = EXCLUDED.meta,
			chunks = EXCLUDED.chunks, expires_at = EXCLUDED.expires_at, seq = DEFAULT`),
		d.ID, d.AccountID, d.Network, d.Meta, d.Chunks, d.ExpiresAt)
	if err != nil {
		return false, fail(ctx, "put list draft", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fail(ctx, "put list draft: commit", err)
	}
	return true, nil
}

const draftColumns = `id, account, network, meta, chunks, expires_at`

func scanDraft(row pgx.Row) (jobtype.ListDraft, error) {
	var d jobtype.ListDraft
	err := row.Scan(&d.ID, &d.AccountID, &d.Network, &d.Meta, &d.Chunks, &d.ExpiresAt)
	return d, err
}

// ListDraft implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) ListDraft(ctx context.Context, accountID, id string) (jobtype.ListDraft, error) {
	d, err := scanDraft(s.pool.QueryRow(ctx, s.sql(`SELECT `+draftColumns+` FROM {schema}.list_drafts
		WHERE id = $1 AND account = $2 AND expires_at > now()`), id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return jobtype.ListDraft{}, jobtype.ErrNotFound
	}
	return d, fail(ctx, "list draft", err)
}

// ListDraftChunk implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) ListDraftChunk(ctx context.Context, id string, n int) ([]byte, error) {
	var data []byte
	err := s.pool.QueryRow(ctx, s.sql(`SELECT data FROM {schema}.list_draft_chunks
		WHERE draft_id = $1 AND n = $2 AND expires_at > now()`), id, n).Scan(&data)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, jobtype.ErrNotFound
	}
	if data == nil && err == nil {
		data = []byte{}
	}
	return data, fail(ctx, "list draft chunk", err)
}

// TakeListDraft implements [jobsdriver.ListDraftDriver]: one DELETE …
// RETURNING, which one of concurrent takes wins.
func (s *jobsDriver) TakeListDraft(ctx context.Context, accountID, id string) (jobtype.ListDraft, error) {
	d, err := scanDraft(s.pool.QueryRow(ctx, s.sql(`DELETE FROM {schema}.list_drafts
		WHERE id = $1 AND account = $2 AND expires_at > now() RETURNING `+draftColumns), id, accountID))
	if errors.Is(err, pgx.ErrNoRows) {
		return jobtype.ListDraft{}, jobtype.ErrNotFound
	}
	return d, fail(ctx, "take list draft", err)
}

// DeleteListDraft implements [jobsdriver.ListDraftDriver].
func (s *jobsDriver) DeleteListDraft(ctx context.Context, id string) error {
	_, err := s.pool.Exec(ctx, s.sql(`
		WITH gone AS (DELETE FROM {schema}.list_drafts WHERE id = $1 RETURNING id)
		DELETE FROM {schema}.list_draft_chunks WHERE draft_id = $1`), id)
	return fail(ctx, "delete list draft", err)
}
