package metrics

import (
	"encoding/json"
	"os"
	"regexp"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/yaml"
)

// TestMonitoringConfig: every alert in config/monitoring is complete, and
// every metric of ours the alerts and the Grafana dashboard query exists.
func TestMonitoringConfig(t *testing.T) {
	ours := map[string]bool{}
	fqName := regexp.MustCompile(`fqName: "([^"]+)"`)
	for _, c := range []prometheus.Collector{completed, failed, restarts, sliceFailures, recovery, placementWait, jobSetCollector{}} {
		ch := make(chan *prometheus.Desc, 10)
		c.Describe(ch)
		close(ch)
		for d := range ch {
			ours[fqName.FindStringSubmatch(d.String())[1]] = true
		}
	}
	alerts, err := os.ReadFile("../../config/monitoring/alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		APIVersion, Kind string
		Metadata         map[string]any
		Spec             struct {
			Groups []struct {
				Name  string
				Rules []struct {
					Alert       string
					Expr        string
					For         string
					Labels      map[string]string
					Annotations map[string]string
				}
			}
		}
	}
	if err := yaml.UnmarshalStrict(alerts, &rule, yaml.DisallowUnknownFields); err != nil {
		t.Fatalf("alerts.yaml: %v", err)
	}
	var exprs []string
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("alert %q lacks a name, expr, severity, summary or description", r.Alert)
			}
			exprs = append(exprs, r.Expr)
		}
	}
	if len(exprs) < 4 {
		t.Errorf("%d alerts, want at least 4", len(exprs))
	}
	board, err := os.ReadFile("../../config/monitoring/grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(board, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs = append(exprs, tg.Expr)
		}
	}
	name := regexp.MustCompile(`\b(multislice_[a-z_]+|jobset_[a-z_]+)\b`)
	suffix := regexp.MustCompile(`_(bucket|sum|count)$`)
	for _, e := range exprs {
		for _, m := range name.FindAllString(e, -1) {
			if !ours[m] && !ours[suffix.ReplaceAllString(m, "")] && m != "jobset_name" {
				t.Errorf("%q queries %s, which the manager does not export", e, m)
			}
		}
	}
}
