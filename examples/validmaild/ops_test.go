package main

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"gopkg.in/yaml.v3"

	"github.com/validmail/validmail/emailcheck"
	"github.com/validmail/validmail/emailcheck/dnstest"
	"github.com/validmail/validmail/httpapi/service"
	"github.com/validmail/validmail/store/memstore"
)

// metricNames are the metric families a service with every part serves
// from its start, before any request, validation or delivery.
func metricNames(t *testing.T) map[string]bool {
	t.Helper()
	srv := dnstest.Start(t, dnstest.Zone{}, nil)
	reg := prometheus.NewRegistry()
	svc, err := service.New(memstore.NewBackend(), &service.Config{
		Checks:     &emailcheck.Config{Nameservers: []string{srv.Addr()}},
		Registerer: reg,
		Workers:    1,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer svc.Close()
	feed, err := emailcheck.NewDisposableFeed("disposable.txt", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := registerFeedMetrics(reg, feed); err != nil {
		t.Fatal(err)
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	return names
}

var metricRE = regexp.MustCompile(`\bvalidmail_[a-z_]+`)

// checkExpr fails for a metric the service does not serve.
func checkExpr(t *testing.T, where, expr string, names map[string]bool) {
	t.Helper()
	for _, m := range metricRE.FindAllString(expr, -1) {
		base := m
		for _, suf := range []string{"_bucket", "_count", "_sum"} {
			if b, ok := strings.CutSuffix(m, suf); ok && names[b] {
				base = b
			}
		}
		if !names[base] {
			t.Errorf("%s: %s is not a metric validmail serves", where, m)
		}
	}
}

// The alert rules parse and name only metrics the service serves.
func TestAlertRules(t *testing.T) {
	names := metricNames(t)
	raw, err := os.ReadFile("ops/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&rules); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			n++
			if r.Alert == "" || strings.TrimSpace(r.Expr) == "" || r.Annotations["summary"] == "" || r.Labels["severity"] == "" {
				t.Errorf("rule %+v lacks a name, an expression, a summary or a severity", r)
			}
			if strings.Count(r.Expr, "(") != strings.Count(r.Expr, ")") {
				t.Errorf("%s: unbalanced parentheses", r.Alert)
			}
			checkExpr(t, r.Alert, r.Expr, names)
		}
	}
	if n < 8 {
		t.Fatalf("%d rules", n)
	}
}

// The Grafana dashboard parses and names only metrics the service serves.
func TestGrafanaDashboard(t *testing.T) {
	names := metricNames(t)
	raw, err := os.ReadFile("ops/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Title  string `json:"title"`
		UID    string `json:"uid"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatal(err)
	}
	if d.Title == "" || d.UID == "" || len(d.Panels) < 10 {
		t.Fatalf("dashboard %q (%s) with %d panels", d.Title, d.UID, len(d.Panels))
	}
	seen := map[string]bool{}
	for _, p := range d.Panels {
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no query", p.Title)
		}
		for _, q := range p.Targets {
			checkExpr(t, p.Title, q.Expr, names)
			for _, m := range metricRE.FindAllString(q.Expr, -1) {
				seen[strings.TrimSuffix(m, "_bucket")] = true
			}
		}
	}
	// Every family the service serves is on the dashboard.
	for n := range names {
		if strings.HasPrefix(n, "validmail_") && !seen[n] {
			t.Errorf("%s is on no panel", n)
		}
	}
}

// The Helm chart's PrometheusRule carries a copy of the alert rules
// (a chart reads files inside it only): the copy is the rules.
func TestChartAlertRulesCopy(t *testing.T) {
	ops, err := os.ReadFile("ops/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	chart, err := os.ReadFile("../deploy/helm/validmail/files/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	if string(ops) != string(chart) {
		t.Fatal("examples/deploy/helm/validmail/files/alerts.yml differs from ops/alerts.yml: copy it")
	}
}
