package pgstore

import (
	"context"
	"encoding/json"
)

// Dump returns every row of every table in the store's schema as JSON, an
// object mapping table names to arrays of rows (bytea columns appear as
// hex). It reads the whole schema: it is meant for tests and debugging.
func (s *Store) Dump(ctx context.Context) ([]byte, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind IN ('r', 'p') AND NOT c.relispartition
		ORDER BY c.relname`, s.schema)
	if err != nil {
		return nil, fail(ctx, "dump", err)
	}
	var tables []string
	for rows.Next() {
		var t string
		if err := rows.Scan(&t); err != nil {
			rows.Close()
			return nil, fail(ctx, "dump", err)
		}
		tables = append(tables, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fail(ctx, "dump", err)
	}
	out := make(map[string]json.RawMessage, len(tables))
	for _, t := range tables {
		var data []byte
		err := s.pool.QueryRow(ctx, s.sql(`SELECT coalesce(json_agg(row_to_json(t)), '[]') FROM {schema}.`+
			quoteIdent(t)+` t`)).Scan(&data)
		if err != nil {
			return nil, fail(ctx, "dump "+t, err)
		}
		out[t] = data
	}
	return json.Marshal(out)
}
