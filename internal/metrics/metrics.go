// Package metrics defines the Prometheus metrics of the Multislice manager,
// registered with controller-runtime's registry (served on /metrics):
// upstream JobSet's counters under their upstream names, plus ours.
package metrics

import (
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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

	sliceFailures = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "multislice", Name: "slice_failures_total",
		Help: "Child Jobs failed by the slice-health monitor, by cause.",
	}, []string{"namespace", "cause"})
	recovery = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "multislice", Name: "restart_recovery_seconds",
		Help:    "Time from a JobSet restart (RestartingJobSet=True) to every Job ready again.",
		Buckets: prometheus.ExponentialBuckets(1, 1.6, 14),
	}, []string{"namespace"})
	placementWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "multislice", Name: "placement_wait_seconds",
		Help:    "Time a JobSet waited for free topology domains (TopologyAssigned=False to True).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	}, []string{"namespace"})
)

func init() {
	metrics.Registry.MustRegister(completed, failed, restarts, sliceFailures, recovery, placementWait)
}

// ObserveSliceFailure counts one slice failed by the health monitor.
func ObserveSliceFailure(namespace, cause string) {
	// Keep the label's cardinality small: the kind of fault, not the host.
	kind := "other"
	for _, k := range []string{"NotReady", "gone", "deleted", "maintenance", "termination", "cordoned"} {
		if strings.Contains(cause, k) {
			kind = k
			break
		}
	}
	sliceFailures.WithLabelValues(namespace, kind).Inc()
}

// ObserveJobSetStatus records what a status write changed: a terminal
// state reached, a restart begun (by its reason), a restart recovered, a
// placement wait ended.
func ObserveJobSetStatus(js *api.JobSet, old *api.JobSetStatus, now time.Time) {
	if js.Status.TerminalState != old.TerminalState {
		switch js.Status.TerminalState {
		case api.TerminalStateCompleted:
			completed.WithLabelValues(js.Name, js.Namespace).Inc()
		case api.TerminalStateFailed:
			failed.WithLabelValues(js.Name, js.Namespace).Inc()
		}
	}
	before, after := condition(old, "RestartingJobSet"), condition(&js.Status, "RestartingJobSet")
	if js.Status.Restarts > old.Restarts && after != nil {
		restarts.WithLabelValues(js.Namespace, after.Reason).Inc()
	}
	if before != nil && before.Status == "True" && after != nil && after.Status == "False" && after.Reason == api.JobsReadyReason {
		recovery.WithLabelValues(js.Namespace).Observe(now.Sub(before.LastTransitionTime.Time).Seconds())
	}
	if b, a := condition(old, string(api.JobSetTopologyAssigned)), condition(&js.Status, string(api.JobSetTopologyAssigned)); b != nil && a != nil && b.Status == "False" && a.Status == "True" {
		placementWait.WithLabelValues(js.Namespace).Observe(now.Sub(b.LastTransitionTime.Time).Seconds())
	}
}

func condition(st *api.JobSetStatus, t string) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}
