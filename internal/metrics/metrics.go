// Package metrics defines the Prometheus metrics of the Multislice manager,
// registered with controller-runtime's registry (served on /metrics):
// upstream JobSet's counters under their upstream names, plus ours.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

var (
	completed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "jobset", Name: "completed_total", Help: "JobSets that completed.",
	}, []string{"jobset_name", "namespace"})
	failed = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "jobset", Name: "failed_total", Help: "JobSets that failed.",
	}, []string{"jobset_name", "namespace"})
	restarts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "multislice", Name: "jobset_restarts_total",
		Help: "Whole-JobSet restarts, by the condition reason that caused them.",
	}, []string{"namespace", "reason"})
)

func init() {
	metrics.Registry.MustRegister(completed, failed, restarts)
}

// ObserveJobSetStatus counts a JobSet's transitions after a status write:
// into a terminal state (from before), and restarts.
func ObserveJobSetStatus(js *api.JobSet, before string) {
	if js.Status.TerminalState == before {
		return
	}
	switch js.Status.TerminalState {
	case api.TerminalStateCompleted:
		completed.WithLabelValues(js.Name, js.Namespace).Inc()
	case api.TerminalStateFailed:
		failed.WithLabelValues(js.Name, js.Namespace).Inc()
	}
}

// ObserveRestart counts one whole-JobSet restart.
func ObserveRestart(namespace, reason string) {
	restarts.WithLabelValues(namespace, reason).Inc()
}
