package emailcheck

import (
	"strings"
	"sync"
	"time"

	lru "github.com/hashicorp/golang-lru/v2"
	"github.com/miekg/dns"
	"golang.org/x/net/publicsuffix"
)

// Memory of unresponsive zones.
const (
	// zoneMemorySize bounds how many zones are remembered.
	zoneMemorySize = 4096
	// maxZoneSilence is the longest a zone that keeps timing out is
	// answered at once as unanswered, unless FailureTTL is longer.
	maxZoneSilence = time.Minute
)

// zoneMemory remembers the zones (registrable domains, per query type)
// whose names the nameservers do not answer while they answer others: a
// recursive resolver waiting on a zone's dead authoritative servers. A
// question under such a zone is answered at once as unanswered for a
// while (FailureTTL, doubling for a zone that times out again as soon as
// it is asked, up to a minute), so that a thousand names under one dead
// zone cost one name's queries. And while a question under a zone is
// retransmitted after a timeout, the other questions under that zone wait
// for its outcome instead of sending (or sending again): the first to
// time out leads, the others follow its verdict.
type zoneMemory struct {
	base, max time.Duration

	mu    sync.Mutex
	zones *lru.Cache[string, *zoneState]
}

// zoneState is what is known of one zone.
type zoneState struct {
	until   time.Time     // unanswered at once until then
	strikes int           // consecutive silences: each doubles the next
	lead    chan struct{} // closed when the question leading it ends; nil when none leads
}

// newZoneMemory returns a memory answering silent zones for base at
// first, or nil (remembering nothing) when base is not positive.
func newZoneMemory(base time.Duration) *zoneMemory {
	if base <= 0 {
		return nil
	}
	z := &zoneMemory{base: base, max: max(base, maxZoneSilence)}
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

// zoneKey returns the key of the zone a question belongs to: the name's
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

// gate tells a question under zone key whether to ask: dead when the zone
// is remembered as unanswered, or a channel to wait on while another
// question leads the zone; neither when it may ask.
func (z *zoneMemory) gate(key string) (wait <-chan struct{}, dead bool) {
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

// suspect records that a question under zone key timed out, and returns
// a channel that the question closes (through [zoneMemory.end]) when it
// ends, when it now leads the zone; nil when another leads.
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
	if st.lead != nil {
		return nil
	}
	st.lead = make(chan struct{})
	return st.lead
}

// answered records that a question under zone key was answered: the zone
// is forgotten, and the questions waiting on it ask.
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
// nameservers answered other questions, and the zone is then answered at
// once as unanswered for a while. lead, when not nil, is the channel the
// question got leading the zone, and is closed.
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
		now := time.Now()
		if st.strikes > 0 && now.After(st.until.Add(z.max)) {
			st.strikes = 0 // long quiet: a new offence, not a repeat
		}
		st.until = now.Add(min(z.base<<min(st.strikes, 16), z.max))
		st.strikes++
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

// size returns how many zones are remembered.
func (z *zoneMemory) size() int {
	if z == nil {
		return 0
	}
	z.mu.Lock()
	defer z.mu.Unlock()
	return z.zones.Len()
}
