package uploads

import (
	"errors"
	"io"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock is a clock the test moves.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func newClock() *fakeClock { return &fakeClock{t: time.Unix(1_000_000, 0)} }

// One account holds at most its share, one network its own; others still
// get the rest of the instance's slots; a release frees a slot once.
func TestSlotsShares(t *testing.T) {
	s := NewSlots(&Config{Total: 5, PerAccount: 2, PerNetwork: 3, Now: newClock().Now})
	steps := []struct {
		account, network string
		want             Refusal
	}{
		{"a", "n1", Granted},
		{"a", "n1", Granted},
		{"a", "n2", AccountBusy},
		{"b", "n1", Granted},
		{"c", "n1", NetworkBusy},
		{"c", "n2", Granted},
		{"d", "", Granted},
		{"e", "n3", InstanceBusy}, // every upload is young: none is judged
	}
	var first *Slot
	for i, st := range steps {
		sl, why := s.Take(st.account, st.network)
		if why != st.want || (sl == nil) != (why != Granted) {
			t.Fatalf("step %d (%s from %s): %v, want %v", i, st.account, st.network, why, st.want)
		}
		if i == 0 {
			first = sl
		}
	}
	first.Release()
	first.Release() // a second release gives nothing back
	if _, why := s.Take("e", "n3"); why != Granted {
		t.Fatalf("after a release: %v", why)
	}
	if _, why := s.Take("f", "n4"); why != InstanceBusy {
		t.Fatalf("after one release, two takes: %v", why)
	}
	if s.Held() != 5 {
		t.Fatalf("held %d", s.Held())
	}
}

// On a full instance a newcomer takes the slot of the slowest upload
// below the healthy rate, past its grace; fast uploads and young ones
// keep theirs.
func TestSlotsEvictSlowest(t *testing.T) {
	clock := newClock()
	s := NewSlots(&Config{Total: 3, PerAccount: 1, PerNetwork: -1, HealthyRate: 1000, Grace: 10 * time.Second, Now: clock.Now})
	fast, _ := s.Take("fast", "")
	slow, _ := s.Take("slow", "")
	slower, _ := s.Take("slower", "")
	evicted := map[string]bool{}
	slow.OnEvict(func() { evicted["slow"] = true })
	slower.OnEvict(func() { evicted["slower"] = true })
	fast.OnEvict(func() { evicted["fast"] = true })
	clock.Add(5 * time.Second)
	if _, why := s.Take("x", ""); why != InstanceBusy {
		t.Fatalf("every upload within its grace: %v", why)
	}
	fast.Add(100_000) // 10,000 B/s over 10 s
	slow.Add(5_000)   // 500 B/s
	slower.Add(1_000) // 100 B/s
	clock.Add(5 * time.Second)
	nc, why := s.Take("newcomer", "")
	if why != Granted || !evicted["slower"] || evicted["slow"] || evicted["fast"] || !slower.Evicted() {
		t.Fatalf("first eviction: %v, evicted %v", why, evicted)
	}
	slower.Release() // the evicted upload's own release frees nothing more
	if s.Held() != 3 {
		t.Fatalf("held %d", s.Held())
	}
	// The newcomer is within its grace; slow is still below the rate.
	if _, why := s.Take("second", ""); why != Granted || !evicted["slow"] {
		t.Fatalf("second eviction: %v, evicted %v", why, evicted)
	}
	// Left: fast (healthy) and two young ones: nothing to evict.
	if _, why := s.Take("third", ""); why != InstanceBusy || evicted["fast"] {
		t.Fatalf("third: %v, evicted %v", why, evicted)
	}
	nc.Release()
	if _, why := s.Take("third", ""); why != Granted {
		t.Fatalf("after a release: %v", why)
	}
}

// A Reader counts bytes on its slot and, once the slot is evicted, ends
// with ErrEvicted; a released slot is never evicted.
func TestReaderEvicted(t *testing.T) {
	clock := newClock()
	s := NewSlots(&Config{Total: 1, HealthyRate: 1 << 30, Grace: time.Second, Now: clock.Now})
	sl, _ := s.Take("a", "n")
	rd := NewReader(httptest.NewRecorder(), strings.NewReader(strings.Repeat("x", 100)), Pace{}, sl)
	if n, err := rd.Read(make([]byte, 10)); n != 10 || err != nil {
		t.Fatal(n, err)
	}
	clock.Add(2 * time.Second)
	if _, why := s.Take("b", "m"); why != Granted {
		t.Fatalf("newcomer: %v", why)
	}
	if _, err := io.ReadAll(rd); !errors.Is(err, ErrEvicted) || !errors.Is(rd.Err(), ErrEvicted) {
		t.Fatalf("read after eviction: %v", err)
	}
	sl.Release()
}
