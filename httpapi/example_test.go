package httpapi_test

import (
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/validmail/validmail/credits"
	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs"
	"github.com/validmail/validmail/store/memstore"
)

// Mount the API under /email/ of an existing mux.
func ExampleNewHandler() {
	st := memstore.New()
	ledger := credits.New(st, nil)
	queue, err := jobs.NewQueue(st, ledger, nil)
	if err != nil {
		log.Fatal(err)
	}
	v, err := emailcheck.New(nil)
	if err != nil {
		log.Fatal(err)
	}
	defer v.Close()
	h, err := httpapi.NewHandler(httpapi.Config{Validator: v, Ledger: ledger, Queue: queue, Accounts: st})
	if err != nil {
		log.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/email/", http.StripPrefix("/email", h))

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest("GET", "/email/validate?email=jane@example.com", nil))
	fmt.Println(rec.Code, rec.Header().Get("Content-Type"))
	// Output: 401 application/problem+json
}
