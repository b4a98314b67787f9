//go:build unix

package emailcheck_test

import (
	"context"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/validmail/validmail/emailcheck"
)

// A disposable list's path that names a FIFO no one writes to fails its
// reload within the reload's context instead of blocking it, and with it
// Stats (each metrics scrape) and the service's start, forever.
func TestDisposableFeedFIFO(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "burners.fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no FIFO here: %v", err)
	}
	feed, err := emailcheck.NewDisposableFeed(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- feed.Reload(ctx) }()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a FIFO: Reload took a list")
		}
	case <-time.After(60 * time.Second):
		// Unblock the reader so that the test ends.
		if w, err := os.OpenFile(path, os.O_WRONLY, 0); err == nil {
			_ = w.Close()
		}
		<-done
		t.Fatal("a FIFO without a writer: Reload blocked for 60s past its 2s context")
	}
}
