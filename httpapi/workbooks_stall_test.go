package httpapi_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http/httptest"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs/jobsdriver"
)

// smallSendBuffer accepts connections whose send buffer is small, so
// that a client that does not read stalls the server's writes soon.
type smallSendBuffer struct{ net.Listener }

func (l smallSendBuffer) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		tc.SetWriteBuffer(4096)
	}
	return c, err
}

// A client that asks for a workbook and then stops reading does not keep
// the account's place (nor the instance's) for as long as it stalls: it
// is cut off once it falls behind the send pace (here 8 KiB a second),
// and the places are given back.
func TestWorkbookPlaceNotHeldByStalledReader(t *testing.T) {
	gate := httpapi.NewWorkbookGate(httpapi.WorkbookLimits{PerAccount: 1, PerInstance: 1, SendWindow: time.Second, SendBytes: 8 << 10})
	f := setup(t, &options{credits: 100000, configure: func(c *httpapi.Config) { c.Workbooks = gate }})
	emails := make([]string, 1000)
	for i := range emails {
		b := make([]byte, 30)
		rand.Read(b)
		emails[i] = hex.EncodeToString(b) + "@good.com"
	}
	id, _ := submit(t, f, f.key, emails...)

	srv := httptest.NewUnstartedServer(f.h)
	srv.Listener = smallSendBuffer{srv.Listener}
	srv.Start() // no WriteTimeout, as the service's server
	defer srv.Close()

	d := net.Dialer{Control: func(network, address string, c syscall.RawConn) error {
		return c.Control(func(fd uintptr) { syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048) })
	}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "GET /api/v1/batches/%s/results?format=xlsx HTTP/1.1\r\nHost: x\r\nX-Api-Key: %s\r\n\r\n", id, f.key)
	// Read the status line only, then stall.
	line, err := bufio.NewReaderSize(conn, 16).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("status %q", line)
	if line != "HTTP/1.1 200 OK\r\n" {
		t.Fatal("not a workbook")
	}
	// A bound against a hang, not a measure: the cut comes a second
	// after the writes stall.
	deadline := time.Now().Add(time.Minute)
	for {
		leave, ok := gate.Enter(context.Background(), "another-account")
		if ok {
			leave()
			return
		}
		if time.Now().After(deadline) {
			conn.SetReadDeadline(time.Now().Add(2 * time.Second))
			n, _ := io.Copy(io.Discard, io.LimitReader(conn, 1<<30))
			leave, ok := gate.Enter(context.Background(), "another-account")
			if ok {
				leave()
			}
			t.Fatalf("a client that stopped reading kept the instance's only workbook place for a minute (once %d more bytes were read, a place was free: %v)", n, ok)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// hangingSlots is an AccountSlots whose store does not answer until the
// call's context ends.
type hangingSlots struct{}

func (hangingSlots) AcquireSlot(ctx context.Context, _, _ string, _ int, _ time.Duration) (bool, error) {
	<-ctx.Done()
	return false, ctx.Err()
}
func (hangingSlots) ReleaseSlot(ctx context.Context, _, _ string) error {
	<-ctx.Done()
	return ctx.Err()
}

// A slots store that hangs neither hangs the request (the workbook is
// let through, as when the store fails) nor takes the instance's places.
func TestWorkbookGateStoreHangs(t *testing.T) {
	gate := httpapi.NewWorkbookGate(httpapi.WorkbookLimits{Slots: hangingSlots{}, PerInstance: 1})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	entered := make(chan bool, 1)
	go func() {
		leave, ok := gate.Enter(ctx, "acct-a")
		if ok {
			leave()
		}
		entered <- ok
	}()
	select {
	case ok := <-entered:
		if !ok {
			t.Fatal("a store that does not answer refused the workbook; it is to let it through, as when the store fails")
		}
	case <-time.After(time.Minute):
		_, other := gate.Enter(context.Background(), "acct-b")
		t.Fatalf("Enter hung a minute on a store that does not answer (another account's workbook meanwhile admitted: %v)", other)
	}
}

// slowSlots answers after a store's round trip.
type slowSlots struct{ jobsdriver.AccountSlots }

func (s slowSlots) AcquireSlot(ctx context.Context, a, h string, n int, ttl time.Duration) (bool, error) {
	time.Sleep(5 * time.Millisecond)
	return s.AccountSlots.AcquireSlot(ctx, a, h, n, ttl)
}

// An account at its bound that keeps asking does not crowd the other
// accounts out of the instance's places.
func TestWorkbookGateAccountAtBoundDoesNotCrowdOthers(t *testing.T) {
	gate := httpapi.NewWorkbookGate(httpapi.WorkbookLimits{Slots: slowSlots{jobsdriver.NewMemorySlots()}, PerAccount: 1, PerInstance: 4})
	ctx := context.Background()
	leave, ok := gate.Enter(ctx, "hostile")
	if !ok {
		t.Fatal("hostile's first")
	}
	defer leave()
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				if l, ok := gate.Enter(ctx, "hostile"); ok {
					l()
				}
			}
		})
	}
	refused := 0
	for i := range 50 {
		l, ok := gate.Enter(ctx, fmt.Sprint("victim-", i))
		if !ok {
			refused++
			continue
		}
		l()
	}
	close(stop)
	wg.Wait()
	if refused > 0 {
		t.Fatalf("%d of 50 other accounts' workbooks were refused while one account at its bound kept asking, the instance making a single workbook", refused)
	}
}
