package plans_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/validmail/validmail/plans"
)

func TestParse(t *testing.T) {
	c, err := plans.Parse(strings.NewReader(`{"default":"free","plans":[
		{"name":"free","rate_per_second":20,"burst":40},
		{"name":"pro","rate_per_second":500,"burst":1000,"concurrent_jobs":64,"console_allowance":3000,"probe_budget":2000,"probe_rate_per_second":20}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.For("pro"); p.RatePerSecond != 500 || p.ConcurrentJobs != 64 || p.ProbeRatePerSecond != 20 {
		t.Fatalf("pro = %+v", p)
	}
	if p := c.For("gone-plan"); p.Name != "free" || p.RatePerSecond != 20 {
		t.Fatalf("an unknown name gets %+v, want the default", p)
	}
	if _, err := c.Get("gone-plan"); !errors.Is(err, plans.ErrUnknown) {
		t.Fatalf("Get of an unknown plan: %v", err)
	}
	if got := fmt.Sprint(c.Names()); got != "[free pro]" {
		t.Fatalf("Names = %s", got)
	}
	var nilCatalog *plans.Catalog
	if p := nilCatalog.For("pro"); p != (plans.Plan{}) {
		t.Fatalf("a nil catalog gives %+v", p)
	}
}

func TestParseRefuses(t *testing.T) {
	for name, in := range map[string]string{
		"not JSON":        `{`,
		"unknown field":   `{"plans":[{"name":"pro","rate":5}]}`,
		"duplicate":       `{"plans":[{"name":"pro"},{"name":"pro"}]}`,
		"bad name":        `{"plans":[{"name":"pro plan"}]}`,
		"negative burst":  `{"plans":[{"name":"pro","burst":-1}]}`,
		"negative budget": `{"plans":[{"name":"pro","probe_budget":-1}]}`,
		"bad default":     `{"default":"a b","plans":[]}`,
	} {
		if _, err := plans.Parse(strings.NewReader(in)); !errors.Is(err, plans.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
}

func TestDefaultAdded(t *testing.T) {
	c, err := plans.New("", []plans.Plan{{Name: "pro", RatePerSecond: 10}})
	if err != nil {
		t.Fatal(err)
	}
	if d := c.Default(); d.Name != "free" || d.RatePerSecond != 0 {
		t.Fatalf("Default = %+v", d)
	}
}
