package httpapi_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/validmail/validmail/httpapi"
	"github.com/validmail/validmail/jobs/jobsdriver"
)

// failingSlots is an AccountSlots whose store does not answer.
type failingSlots struct{}

func (failingSlots) AcquireSlot(context.Context, string, string, int, time.Duration) (bool, error) {
	return false, errors.New("slots: store down")
}
func (failingSlots) ReleaseSlot(context.Context, string, string) error {
	return errors.New("slots: store down")
}

// The gate admits an account's workbooks up to PerAccount, across gates
// sharing their slots (two instances sharing a backend), and a process's
// up to PerInstance; leaving frees the place; a store that fails lets
// workbooks through.
func TestWorkbookGate(t *testing.T) {
	ctx := context.Background()
	shared := jobsdriver.NewMemorySlots()
	one := httpapi.NewWorkbookGate(httpapi.WorkbookLimits{Slots: shared, PerAccount: 2, PerInstance: 2})
	two := httpapi.NewWorkbookGate(httpapi.WorkbookLimits{Slots: shared, PerAccount: 2, PerInstance: 2})
	enter := func(g *httpapi.WorkbookGate, account string, want bool, why string) func() {
		t.Helper()
		leave, ok := g.Enter(ctx, account)
		if ok != want {
			t.Fatalf("%s: admitted %v", why, ok)
		}
		return leave
	}

	leaveA1 := enter(one, "acct-a", true, "the account's first workbook")
	leaveA2 := enter(two, "acct-a", true, "the account's second, on the other instance")
	enter(one, "acct-a", false, "a third of the account, two being made on two instances")
	leaveB := enter(one, "acct-b", true, "another account's")
	enter(one, "acct-c", false, "a third on an instance that makes two at most")
	leaveA1()
	leaveA1() // a second call is harmless
	leaveC := enter(one, "acct-c", true, "a workbook after a place was left")
	enter(one, "acct-a", false, "a workbook on a full instance")
	leaveB()
	leaveA3 := enter(one, "acct-a", true, "the account's, with one of its two being made")
	leaveA2()
	leaveA3()
	leaveC()
	leaveA1 = enter(two, "acct-a", true, "the account's, once its workbooks are done")
	leaveA1()

	down := httpapi.NewWorkbookGate(httpapi.WorkbookLimits{Slots: failingSlots{}, PerInstance: 1})
	leave, ok := down.Enter(ctx, "acct-a")
	if !ok {
		t.Fatal("a failing slots store refused the workbook")
	}
	if _, ok := down.Enter(ctx, "acct-b"); ok {
		t.Fatal("a failing slots store lifted the bound per instance")
	}
	leave()
}

// GET results as .xlsx is refused 429 with Retry-After while the
// account's workbooks are all being made, CSV is not, and once one is
// done the workbook is made.
func TestWorkbookRefusedWhileOthersAreMade(t *testing.T) {
	t.Parallel()
	gate := httpapi.NewWorkbookGate(httpapi.WorkbookLimits{PerAccount: 1})
	f := setup(t, &options{configure: func(c *httpapi.Config) { c.Workbooks = gate }})
	id, _ := submit(t, f, f.key, "jane@good.com", "john@good.com")
	f.runPool(t)
	waitCompleted(t, f, id)
	xlsx := "/api/v1/batches/" + id + "/results?format=xlsx"
	leave, ok := gate.Enter(context.Background(), f.acct.ID)
	if !ok {
		t.Fatal("the gate refused the first workbook")
	}
	r := f.do(t, req{method: "GET", target: xlsx, key: f.key})
	if r.Code != 429 || r.Header.Get("Retry-After") == "" || r.JSON(t)["code"] != "rate_limited" || !strings.Contains(string(r.Body), "format=csv") {
		t.Fatalf("an .xlsx while the account's one place is taken: %d %q %s", r.Code, r.Header.Get("Retry-After"), r.Body)
	}
	if r := f.do(t, req{method: "GET", target: "/api/v1/batches/" + id + "/results?format=csv", key: f.key}); r.Code != 200 {
		t.Fatalf("CSV while the workbooks are busy: %d %s", r.Code, r.Body)
	}
	leave()
	r = f.do(t, req{method: "GET", target: xlsx, key: f.key})
	if r.Code != 200 || r.Header.Get("Content-Type") != httpapi.XLSXContentType {
		t.Fatalf("an .xlsx once the place is free: %d %s", r.Code, r.Header.Get("Content-Type"))
	}
	// The place it took is free again.
	leave, ok = gate.Enter(context.Background(), f.acct.ID)
	if !ok {
		t.Fatal("the workbook's place was not given back")
	}
	leave()
}
