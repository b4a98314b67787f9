package pgstore_test

import (
	"context"
	"testing"

	"github.com/validmail/validmail/store/pgstore"
)

// openSchema returns a Store over an existing schema, migrating it.
func openSchema(tb testing.TB, schema string) *pgstore.Store {
	tb.Helper()
	s, err := pgstore.New(context.Background(), testPool(tb), &pgstore.Config{Schema: schema})
	if err != nil {
		tb.Fatal(err)
	}
	return s
}
