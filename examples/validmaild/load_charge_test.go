package main

import (
	"context"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/emailcheck/dnstest"
)

// TestLoadOneAccountPostgres measures GET /validate of one account on
// PostgreSQL (rate limits off, cached domain, 32 clients) beside pgbench
// running the one-row charge statement, with 32 clients, on the same
// account: the two alternate, three runs each, so that the machine's load
// weighs on both alike. Afterwards the account's balance is the sum of its
// entries.
//
//	VALIDMAIL_LOAD=1 go test -run TestLoadOneAccountPostgres -v ./examples/validmaild
func TestLoadOneAccountPostgres(t *testing.T) {
	skipUnlessLoad(t)
	if _, err := exec.LookPath("pgbench"); err != nil {
		t.Skip("pgbench is not installed: skipping (apt-get install postgresql-contrib)")
	}
	storeURL := freshPostgres(t)
	dnsSrv := dnstest.Start(t, zone(), nil)
	api, key := loadAPI(t, storeURL, dnsSrv.Addr())
	apiURL := serveLoopback(t, api) + "/validate?email=jane.doe@gmail.com"

	u, err := url.Parse(storeURL)
	if err != nil {
		t.Fatal(err)
	}
	schema := pgx.Identifier{u.Query().Get("schema")}.Sanitize()
	base := os.Getenv("VALIDMAIL_TEST_POSTGRES")
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var account string
	if err := conn.QueryRow(ctx, `SELECT account FROM `+schema+`.credit_balances`).Scan(&account); err != nil {
		t.Fatal(err)
	}
	script := filepath.Join(t.TempDir(), "charge.sql")
	charge := `WITH balance AS (UPDATE ` + schema + `.credit_balances SET balance = balance - 1 WHERE account = '` + account + `' AND balance >= 1 RETURNING balance) ` +
		`INSERT INTO ` + schema + `.credit_entries (account, delta, reason, reference) SELECT '` + account + `', -1, 'charge', 'pgbench' FROM balance;` + "\n"
	if err := os.WriteFile(script, []byte(charge), 0o600); err != nil {
		t.Fatal(err)
	}
	tpsRE := regexp.MustCompile(`tps = ([0-9.]+)`)
	pgbench := func() float64 {
		out, err := exec.Command("pgbench", "-n", "-c", "32", "-j", "2", "-T", "4", "-f", script, "-h", u.Hostname(), "-p", cmpPort(u.Port()), "-U", u.User.Username(), stringsTrimSlash(u.Path)).CombinedOutput()
		if err != nil {
			t.Fatalf("pgbench: %v\n%s", err, out)
		}
		m := tpsRE.FindSubmatch(out)
		if m == nil {
			t.Fatalf("pgbench output:\n%s", out)
		}
		tps, _ := strconv.ParseFloat(string(m[1]), 64)
		return tps
	}
	hammer(apiURL, key, 32, 2000, 5*time.Second) // fills the DNS cache, warms up
	var bench, ours []float64
	for range 3 {
		bench = append(bench, pgbench())
		r := hammer(apiURL, key, 32, 1_000_000, 4*time.Second)
		if r.errors > 0 {
			t.Fatalf("%d errors of %d requests", r.errors, r.requests)
		}
		ours = append(ours, r.perSecond())
	}
	bm, om := median(bench), median(ours)
	t.Logf("pgbench, one-row charge of one account, 32 clients: %.0f tps (runs %s)", bm, fmtRates(bench))
	t.Logf("GET /validate, one account, PostgreSQL, 32 clients: %.0f req/s (runs %s)", om, fmtRates(ours))
	t.Logf("ratio: %.2fx (target ≥ 3x)", om/bm)

	var balance, sum int64
	if err := conn.QueryRow(ctx, `SELECT (SELECT balance FROM `+schema+`.credit_balances WHERE account = $1),
		(SELECT sum(delta) FROM `+schema+`.credit_entries WHERE account = $1)`, account).Scan(&balance, &sum); err != nil {
		t.Fatal(err)
	}
	if balance != sum {
		t.Errorf("balance %d, entries sum to %d", balance, sum)
	}
}

// cmpPort is port, or PostgreSQL's default when it is empty.
func cmpPort(port string) string {
	if port == "" {
		return "5432"
	}
	return port
}

// stringsTrimSlash is a URL path without its leading slash: the database.
func stringsTrimSlash(p string) string {
	if len(p) > 0 && p[0] == '/' {
		return p[1:]
	}
	return p
}
