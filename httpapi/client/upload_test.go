package client_test

import (
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi/client"
)

func TestSubmitList(t *testing.T) {
	d := deploy(t, nil)
	c, err := client.New(d.srv.URL, d.key, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := d.balance(t)
	in := "email,name\nann@gmail.com,Ann\nnot an address,X\n ANN@gmail.com ,Ann again\nbob@gmail.com,Bob\n"
	sub, err := c.SubmitList(t.Context(), strings.NewReader(in), &client.ListOptions{Name: "people.csv"})
	if err != nil {
		t.Fatal(err)
	}
	if sub.Rows != 4 || sub.Addresses != 2 || sub.Duplicates != 1 || sub.InvalidRows != 1 || sub.Charged != 2 || sub.Name != "people.csv" {
		t.Fatalf("submission %+v", sub)
	}
	if got := d.balance(t); got != before-2 {
		t.Fatalf("balance %d; want %d", got, before-2)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		b, err := c.Batch(t.Context(), sub.BatchID)
		if err != nil {
			t.Fatal(err)
		}
		if b.Name != "people.csv" || b.Number != 1 {
			t.Fatalf("batch %+v", b)
		}
		if b.State == "completed" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("batch %+v not completed", b)
		}
		time.Sleep(20 * time.Millisecond)
	}
	body, err := c.ListCSV(t.Context(), sub.BatchID, "safe")
	if err != nil {
		t.Fatal(err)
	}
	out, _ := io.ReadAll(body)
	body.Close()
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "ann@gmail.com,Ann,LIKELY,") || !strings.HasPrefix(lines[3], "bob@gmail.com,Bob,LIKELY,") {
		t.Fatalf("safe rows:\n%s", out)
	}
	if err := c.DeleteBatch(t.Context(), sub.BatchID); err != nil {
		t.Fatalf("delete: %v", err)
	}
	var apiErr *client.Error
	if _, err := c.Batch(t.Context(), sub.BatchID); !errors.As(err, &apiErr) || apiErr.Code != "batch_not_found" {
		t.Fatalf("the batch after its deletion: %v", err)
	}
	if err := c.DeleteBatch(t.Context(), sub.BatchID); !errors.As(err, &apiErr) || apiErr.Code != "batch_not_found" {
		t.Fatalf("a second delete: %v", err)
	}
	_, err = c.SubmitList(t.Context(), strings.NewReader("a,b\nc,d\n"), nil)
	if !errors.As(err, &apiErr) || apiErr.Code != "no_email_column" {
		t.Fatalf("a list without addresses: %v", err)
	}
}
