package dashboard_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
)

// dropSchema removes a test's PostgreSQL schema.
func dropSchema(tb testing.TB, url, schema string) {
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		tb.Log(err)
		return
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+pgx.Identifier{schema}.Sanitize()+" CASCADE"); err != nil {
		tb.Log(err)
	}
}
