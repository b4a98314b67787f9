package lists_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/jobs/lists"
	"github.com/validmail/validmail/store/memstore"
)

// A console takes a file, shows its preview and cost, and on the
// customer's confirmation submits it as one batch.
func Example() {
	ctx := context.Background()
	st := memstore.New()
	ledger := credits.New(st, nil)
	ledger.Grant(ctx, "acct", 10, "")
	q, _ := jobs.NewQueue(st.Backend().Jobs, ledger, nil)

	file := strings.NewReader("name,email\nAnn,ann@example.org\nBob,bob@example.org\nAnn again, ANN@example.org\nNobody,n/a\n")
	sp, err := lists.Read(ctx, file, nil)
	if err != nil {
		fmt.Println(err) // a *lists.ParseError: no column, too many rows, not UTF-8, …
		return
	}
	defer sp.Close()
	p, _ := sp.Preview(ctx, 2)
	fmt.Printf("column %q; first rows %q; %d rows, %d unique, %d duplicates, %d not addresses: %d credits\n",
		p.Header[p.Column], p.First, p.Rows, p.Unique, p.Duplicates, p.InvalidRows, p.Cost)

	info, err := lists.Submit(ctx, q, sp, lists.SubmitParams{AccountID: "acct", Name: "customers.csv", Source: jobs.SourceDashboard})
	if err != nil {
		fmt.Println(err) // credits.ErrInsufficient: nothing charged, no batch
		return
	}
	b, _ := q.Batch(ctx, "acct", info.BatchID)
	bal, _ := ledger.Balance(ctx, "acct")
	fmt.Printf("Batch %d — %s: %d jobs, charged %d, balance %d\n", b.Number, b.Name, b.Total, info.Charged, bal)
	// Output:
	// column "email"; first rows [["Ann" "ann@example.org"] ["Bob" "bob@example.org"]]; 4 rows, 2 unique, 1 duplicates, 1 not addresses: 2 credits
	// Batch 1 — customers.csv: 2 jobs, charged 2, balance 8
}
