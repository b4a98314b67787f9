// Package plans defines what an account's plan gives it: its API rate
// (all its keys together), how many of its jobs run at once, its free
// allowance in the console's bulk tool and its SMTP probe budget.
//
// An operator writes the plans once (a [Catalog], read from a JSON file
// by [Parse]); the store keeps only each account's plan name
// (store.Account.Plan, changed with store.PlanSetter), so every instance
// of a deployment applies the same plan to an account as soon as it reads
// the account again. A name the catalog does not know gets the default
// plan.
package plans

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"

	"github.com/validmail/validmail/store"
)

// ErrInvalid reports a catalog or plan that cannot be used.
var ErrInvalid = errors.New("plans: invalid plans")

// ErrUnknown reports a plan name the catalog does not define.
var ErrUnknown = errors.New("plans: unknown plan")

// MaxPlans bounds a catalog.
const MaxPlans = 100

// Plan is what an account on it may do. A zero field means the
// deployment's own default for it.
type Plan struct {
	// Name names the plan, as accounts carry it (store.CheckPlan).
	Name string `json:"name"`
	// RatePerSecond and Burst bound the API requests of the account, all
	// its keys together: a token bucket shared by every instance.
	// Negative RatePerSecond: no account limit. A zero Burst with a rate
	// is one second's worth.
	RatePerSecond float64 `json:"rate_per_second,omitempty"`
	Burst         int     `json:"burst,omitempty"`
	// ConcurrentJobs bounds the account's batch jobs validated at once
	// across the deployment.
	ConcurrentJobs int `json:"concurrent_jobs,omitempty"`
	// ConsoleAllowance is how many addresses the console's bulk tool
	// validates free per window.
	ConsoleAllowance int `json:"console_allowance,omitempty"`
	// ProbeBudget and ProbeRatePerSecond are the account's SMTP probe
	// bucket: probes at once, then a rate.
	ProbeBudget        int     `json:"probe_budget,omitempty"`
	ProbeRatePerSecond float64 `json:"probe_rate_per_second,omitempty"`
}

// check returns an error matching [ErrInvalid] for a plan no catalog
// holds.
func (p Plan) check() error {
	if err := store.CheckPlan(p.Name); err != nil {
		return fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	for _, f := range []float64{p.RatePerSecond, p.ProbeRatePerSecond} {
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("%w: plan %s: a rate must be a finite number", ErrInvalid, p.Name)
		}
	}
	if p.Burst < 0 || p.ConcurrentJobs < 0 || p.ConsoleAllowance < 0 || p.ProbeBudget < 0 || p.ProbeRatePerSecond < 0 {
		return fmt.Errorf("%w: plan %s: bursts, budgets, allowances and job counts must not be negative", ErrInvalid, p.Name)
	}
	return nil
}

// Catalog is a deployment's plans. It is immutable and safe for
// concurrent use.
type Catalog struct {
	byName map[string]Plan
	names  []string
	def    string
}

// New returns the catalog of plans whose default is the plan named def
// (store.DefaultPlan when empty); a default not among plans is added
// with every field zero. Duplicate names, bad names or bad figures fail
// with [ErrInvalid].
func New(def string, ps []Plan) (*Catalog, error) {
	if def == "" {
		def = store.DefaultPlan
	}
	if len(ps) > MaxPlans {
		return nil, fmt.Errorf("%w: %d plans, at most %d", ErrInvalid, len(ps), MaxPlans)
	}
	c := &Catalog{byName: make(map[string]Plan, len(ps)+1), def: def}
	for _, p := range ps {
		if err := p.check(); err != nil {
			return nil, err
		}
		if _, dup := c.byName[p.Name]; dup {
			return nil, fmt.Errorf("%w: plan %s defined twice", ErrInvalid, p.Name)
		}
		c.byName[p.Name] = p
		c.names = append(c.names, p.Name)
	}
	if _, ok := c.byName[def]; !ok {
		if err := store.CheckPlan(def); err != nil {
			return nil, fmt.Errorf("%w: default: %v", ErrInvalid, err)
		}
		c.byName[def] = Plan{Name: def}
		c.names = append(c.names, def)
	}
	slices.Sort(c.names)
	return c, nil
}

// file is the JSON form [Parse] reads.
type file struct {
	Default string `json:"default"`
	Plans   []Plan `json:"plans"`
}

// maxFileBytes bounds what [Parse] reads.
const maxFileBytes = 1 << 20

// Parse reads a catalog written as JSON:
//
//	{"default": "free", "plans": [
//	  {"name": "free", "rate_per_second": 20, "burst": 40},
//	  {"name": "pro", "rate_per_second": 500, "burst": 1000, "concurrent_jobs": 64,
//	   "console_allowance": 3000, "probe_budget": 2000, "probe_rate_per_second": 20}]}
//
// Unknown fields are refused, so a misspelt limit is not silently off.
func Parse(r io.Reader) (*Catalog, error) {
	dec := json.NewDecoder(io.LimitReader(r, maxFileBytes))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	return New(f.Default, f.Plans)
}

// Default returns the default plan: that of accounts whose plan the
// catalog does not know.
func (c *Catalog) Default() Plan { return c.byName[c.def] }

// Names returns the plans' names, sorted.
func (c *Catalog) Names() []string { return slices.Clone(c.names) }

// Get returns the plan named name, or an error matching [ErrUnknown].
func (c *Catalog) Get(name string) (Plan, error) {
	p, ok := c.byName[name]
	if !ok {
		return Plan{}, fmt.Errorf("%w: %q (known: %s)", ErrUnknown, name, strings.Join(c.names, ", "))
	}
	return p, nil
}

// For returns the plan an account named name is on: that plan, or the
// default when the catalog does not know it. A nil catalog gives the
// zero plan: every default.
func (c *Catalog) For(name string) Plan {
	if c == nil {
		return Plan{}
	}
	if p, ok := c.byName[name]; ok {
		return p
	}
	return c.byName[c.def]
}
