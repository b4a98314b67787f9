package service_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/storeurl"
)

// instant validates every address at once as LIKELY.
type instant struct{}

func (instant) Validate(_ context.Context, email string, _ ...emailcheck.CallOption) (emailcheck.Result, error) {
	r := emailcheck.Result{Email: email, Validations: emailcheck.Validations{Syntax: true, DomainExists: true, MXRecords: true}}
	r.Confidence.Status = emailcheck.StatusLikely
	r.Confidence.Score = 90
	r.Confidence.AliasStatus = emailcheck.AliasMaybeNot
	r.Reason = emailcheck.ReasonValid
	r.Confidence.EquivalentDomains = []string{}
	r.Provider.Name = "Other"
	return r, nil
}

// BenchmarkExportCSV measures GET /api/v1/batches/{id}/results?format=csv
// of a completed batch of 1,000 on every backend the environment names
// (VALIDMAIL_TEST_POSTGRES, VALIDMAIL_TEST_REDIS), through the service's
// handler.
func BenchmarkExportCSV(b *testing.B) {
	targets := []struct{ name, url string }{{"memory", "memory"}}
	if u := os.Getenv("VALIDMAIL_TEST_POSTGRES"); u != "" {
		targets = append(targets, struct{ name, url string }{"postgres", u})
	}
	if u := os.Getenv("VALIDMAIL_TEST_REDIS"); u != "" {
		targets = append(targets, struct{ name, url string }{"redis", u})
	}
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) {
			ctx := context.Background()
			url := tg.url
			ns := "bench_" + strings.ReplaceAll(uuid.NewString()[:8], "-", "")
			switch tg.name {
			case "postgres":
				url += sep(url) + "schema=" + ns
				b.Cleanup(func() { dropSchema(b, tg.url, ns) })
			case "redis":
				url += sep(url) + "prefix=" + ns
			}
			be, err := storeurl.Open(ctx, url, &storeurl.Options{Workers: 8, Init: true})
			if err != nil {
				b.Fatal(err)
			}
			svc, err := service.New(be, &service.Config{Validator: instant{}, Workers: 8})
			if err != nil {
				b.Fatal(err)
			}
			_, key, err := service.Bootstrap(ctx, be.Accounts, service.BootstrapParams{Email: "bench@example.org", Credits: 1000})
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			sctx, stop := context.WithCancel(ctx)
			served := make(chan error, 1)
			go func() { served <- svc.Serve(sctx, ln) }()
			defer func() { stop(); <-served }()

			emails := make([]string, 1000)
			for i := range emails {
				emails[i] = fmt.Sprintf("user%d@example.org", i)
			}
			body, _ := json.Marshal(map[string]any{"emails": emails})
			call := func(method, target, body string) *httptest.ResponseRecorder {
				req := httptest.NewRequest(method, target, strings.NewReader(body))
				req.Header.Set("x-api-key", key)
				req.Header.Set("Content-Type", "application/json")
				rec := httptest.NewRecorder()
				svc.Mux().ServeHTTP(rec, req)
				return rec
			}
			rec := call("POST", "/validate/async", string(body))
			if rec.Code != http.StatusAccepted {
				b.Fatalf("submit: %d %s", rec.Code, rec.Body)
			}
			var sub struct {
				BatchID string `json:"batch_id"`
			}
			json.Unmarshal(rec.Body.Bytes(), &sub)
			deadline := time.Now().Add(30 * time.Second)
			for {
				rec = call("GET", "/api/v1/batches/"+sub.BatchID, "")
				if strings.Contains(rec.Body.String(), `"state":"completed"`) {
					break
				}
				if time.Now().After(deadline) {
					b.Fatalf("batch not completed: %s", rec.Body)
				}
				time.Sleep(10 * time.Millisecond)
			}
			b.ReportAllocs()
			for b.Loop() {
				rec := call("GET", "/api/v1/batches/"+sub.BatchID+"/results?format=csv", "")
				if rec.Code != 200 || strings.Count(rec.Body.String(), "\n") != 1001 {
					b.Fatalf("export: %d, %d lines", rec.Code, strings.Count(rec.Body.String(), "\n"))
				}
			}
			b.ReportMetric(float64(b.Elapsed().Microseconds())/1000/float64(b.N), "ms/export")
		})
	}
}

func sep(url string) string {
	if strings.Contains(url, "?") {
		return "&"
	}
	return "?"
}

// dropSchema removes a benchmark's PostgreSQL schema.
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
