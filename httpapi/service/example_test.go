package service_test

import (
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/memstore"
)

// A service binary of one's own: the whole service on one backend, with a
// route of the host's beside the API.
func ExampleNew() {
	svc, err := service.New(memstore.NewBackend(), nil)
	if err != nil {
		log.Fatal(err)
	}
	svc.Mux().HandleFunc("GET /hello", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintln(w, "hello")
	})
	// A real binary calls svc.Serve(ctx, ln), which runs until ctx ends;
	// here the handler is called directly.
	defer svc.Close()
	for _, path := range []string{"/hello", "/healthz", "/validate?email=jane@example.org"} {
		rec := httptest.NewRecorder()
		svc.Mux().ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
		fmt.Println(path, rec.Code)
	}
	// Output:
	// /hello 200
	// /healthz 200
	// /validate?email=jane@example.org 401
}

// Bootstrap makes sure an operator's account exists at start.
func ExampleBootstrap() {
	b := memstore.NewBackend()
	acct, key, err := service.Bootstrap(context.Background(), b.Accounts, service.BootstrapParams{Email: "ops@example.org"})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(acct.Email, len(key) > 0)
	// Output: ops@example.org true
}
