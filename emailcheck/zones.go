package emailcheck

import (
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/miekg/dns"
	"golang.org/x/net/publicsuffix"
)

// zoneMemorySize bounds how many zones are remembered.
const zoneMemorySize = 4096

// zoneMemory remembers the zones (registrable domains, per query type)
// whose names the nameservers do not answer while they answer others: a
// recursive resolver waiting on a zone's dead authoritative servers. It
// never fails a question without asking. While a question under a zone
// is retransmitted after a timeout, the other questions under the zone
// wait for its outcome before sending (or sending again): the first to
// time out leads, the others follow its verdict. Once a question timed
// out on every attempt while the nameservers answered others (the zone
// is silent), the zone is marked for a fixed while (FailureTTL, however
// often it was before): a question under it is sent once, never again
// after a timeout, and waits for its place in the window as
// retransmissions do (behind the others' first attempts, within their
// share), so that a thousand names under one dead zone cost about one
// query each, never their retries, and crowd out no one, while a live
// name under it is answered to its first attempt. Any answer under the
// zone clears the mark.
type zoneMemory struct {
	mark time.Duration

	mu    sync.Mutex
	zones *lru.Cache[string, *zoneState]
}

// zoneState is what is known of one zone.
type zoneState struct {
	until time.Time     // marked silent until then
	lead  chan struct{} // closed when the question leading it ends; nil when none leads
}

// newZoneMemory returns a memory marking silent zones for mark, or nil
// (remembering nothing) when mark is not positive.
func newZoneMemory(mark time.Duration) *zoneMemory {
	if mark <= 0 {
		return nil
	}
	z := &zoneMemory{mark: mark}
	z.zones, _ = lru.NewWithEvict(zoneMemorySize, func(_ string, st *zoneState) { st.endLead() })
	return z
}

// endLead frees the questions waiting on the leader.
func (st *zoneState) endLead() {
	if st.lead != nil {
		close(st.lead)
		st.lead = nil
	}
}

// key returns the key of the zone a question belongs to: the name's
// registrable domain (or the name itself, when it is a public suffix)
// and the query type, as a zone's servers may drop one type only. It is ""
// when there is no memory.
func (z *zoneMemory) key(name string, qtype uint16) string {
	if z == nil {
		return ""
	}
	name = strings.TrimSuffix(strings.ToLower(name), ".")
	if reg, err := publicsuffix.EffectiveTLDPlusOne(name); err == nil {
		name = reg
	}
	return name + " " + dns.TypeToString[qtype]
}

// gate tells a question under zone key how to send: marked when the zone
// is marked silent (it is sent once, not again after a timeout), or a
// channel to wait on while another question leads the zone; neither when
// it may send freely.
func (z *zoneMemory) gate(key string) (wait <-chan struct{}, marked bool) {
	if key == "" {
		return nil, false
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	st, ok := z.zones.Peek(key)
	if !ok {
		return nil, false
	}
	if time.Now().Before(st.until) {
		return nil, true
	}
	return st.lead, false
}

// marked reports whether zone key is marked silent: a question under it
// then sends its first attempt behind the other questions' first
// attempts, within the share of the window retransmissions hold, so that
// names under a dead zone cannot crowd out the others.
func (z *zoneMemory) marked(key string) bool {
	if key == "" {
		return false
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	st, ok := z.zones.Peek(key)
	return ok && time.Now().Before(st.until)
}

// suspect records that a question under zone key timed out, and returns
// a channel that the question closes (through [zoneMemory.end]) when it
// ends, when it now leads the zone; nil when another leads or the zone is
// marked silent (the question is then not sent again).
func (z *zoneMemory) suspect(key string) chan struct{} {
	if key == "" {
		return nil
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	st, ok := z.zones.Get(key)
	if !ok {
		st = &zoneState{}
		z.zones.Add(key, st)
	}
	if st.lead != nil || time.Now().Before(st.until) {
		return nil
	}
	st.lead = make(chan struct{})
	return st.lead
}

// answered records that a question under zone key was answered: the zone
// is forgotten (its mark cleared), and the questions waiting on it ask.
func (z *zoneMemory) answered(key string) {
	if key == "" {
		return
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	z.zones.Remove(key) // ends the lead
}

// end records the end of a question under zone key that was not
// answered: silent says that every attempt timed out while the
// nameservers answered other questions, and the zone is then marked
// silent for the memory's fixed while from now, however often it was
// before. lead, when not nil, is the channel the question got leading the
// zone, and is closed.
func (z *zoneMemory) end(key string, lead chan struct{}, silent bool) {
	if key == "" {
		return
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	st, ok := z.zones.Get(key)
	if !ok {
		if !silent {
			return // evicted or answered meanwhile: the lead ended then
		}
		st = &zoneState{}
		z.zones.Add(key, st)
	}
	if silent {
		st.until = time.Now().Add(z.mark)
	}
	if lead != nil && st.lead == lead {
		st.endLead()
	}
}

// forget forgets every zone, as when the resolver itself was found unable
// to resolve: the silences it heard were its own.
func (z *zoneMemory) forget() {
	if z == nil {
		return
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	z.zones.Purge()
}
