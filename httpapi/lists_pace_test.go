package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi"
)

// pacedServer serves the fixture's handler over TCP with a read timeout
// far shorter than the uploads below last, and lists paced at 1 KiB per
// 2 s.
func pacedServer(t *testing.T) (*fixture, *httptest.Server) {
	t.Helper()
	f := setup(t, &options{configure: func(c *httpapi.Config) {
		c.ListReadWindow, c.ListReadMinBytes = 2*time.Second, 1<<10
	}})
	srv := httptest.NewUnstartedServer(f.checked)
	srv.Config.ReadTimeout = 200 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	return f, srv
}

// postList sends a list whose body send writes, and returns the answer.
func postList(t *testing.T, srv *httptest.Server, key string, send func(w *io.PipeWriter)) (int, string) {
	t.Helper()
	pr, pw := io.Pipe()
	go send(pw)
	req, _ := http.NewRequest("POST", srv.URL+"/api/v1/lists?name=slow.csv", pr)
	req.Header.Set("x-api-key", key)
	req.Header.Set("Content-Type", "text/csv")
	resp, err := srv.Client().Do(req)
	pr.CloseWithError(io.ErrClosedPipe) // ends a sender still writing
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestListUploadOutlivesReadTimeout sends a list slowly, in ten pieces of
// 2 KiB 100 ms apart: at least five times the server's read timeout,
// yet every piece keeps it alive, and the whole list is taken.
func TestListUploadOutlivesReadTimeout(t *testing.T) {
	t.Parallel()
	f, srv := pacedServer(t)
	line := "slow@good.com\n"
	piece := strings.Repeat(line, 2048/len(line)+1)
	start := time.Now()
	code, body := postList(t, srv, f.key, func(w *io.PipeWriter) {
		io.WriteString(w, "email\n")
		for range 10 {
			time.Sleep(100 * time.Millisecond)
			if _, err := io.WriteString(w, piece); err != nil {
				return
			}
		}
		w.Close()
	})
	if code != http.StatusAccepted {
		t.Fatalf("a slow upload: %d %s", code, body)
	}
	if took := time.Since(start); took < srv.Config.ReadTimeout {
		t.Fatalf("the upload took %v, not past the read timeout", took)
	}
	if want := `"rows":` + strconv.Itoa(10*(2048/len(line)+1)); !strings.Contains(body, want) || !strings.Contains(body, `"charged":1`) {
		t.Fatalf("answer %s, want %s and one charge", body, want)
	}
}

// TestListUploadStalls sends the header of a list and then nothing: the
// upload is answered 408 once a window passes without its minimum, and
// nothing is charged.
func TestListUploadStalls(t *testing.T) {
	t.Parallel()
	f, srv := pacedServer(t)
	stop := make(chan struct{})
	defer close(stop)
	code, body := postList(t, srv, f.key, func(w *io.PipeWriter) {
		io.WriteString(w, "email\nstall@good.com\n")
		<-stop
	})
	if code != http.StatusRequestTimeout || !strings.Contains(body, `"code":"request_timeout"`) {
		t.Fatalf("a stalled upload: %d %s", code, body)
	}
	if bal := f.balance(t, f.acct.ID); bal != 300 {
		t.Fatalf("balance %d after a stalled upload; want 300", bal)
	}
}
