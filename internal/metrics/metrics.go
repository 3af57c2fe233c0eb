// Package metrics defines the Prometheus metrics of the Multislice manager,
// registered with controller-runtime's registry (served on /metrics):
// upstream JobSet's counters under their upstream names, plus ours.
package metrics

import (
	"context"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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
		Help: "Child Jobs failed by slice health, by cause.",
	}, []string{"namespace", "cause"})
	recovery = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "multislice", Name: "restart_recovery_seconds",
		Help:    "Time from a JobSet restart (RestartingJobSet=True) to every Job ready again.",
		Buckets: prometheus.ExponentialBuckets(1, 1.6, 14),
	}, []string{"namespace"})
	statusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "multislice", Name: "jobset_status_writes_total",
		Help: "JobSet status writes, by what each changed (StatusChange).",
	}, []string{"changed"})
	placementWait = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "multislice", Name: "placement_wait_seconds",
		Help:    "Time a JobSet waited for free topology domains (TopologyAssigned=False to True).",
		Buckets: prometheus.ExponentialBuckets(1, 2, 14),
	}, []string{"namespace"})
)

func init() {
	metrics.Registry.MustRegister(completed, failed, restarts, sliceFailures, recovery, placementWait, statusWrites, jobSetCollector{})
}

// ObserveSliceFailure counts one slice failed by slice health.
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

// ObserveJobSetStatus records what a status write changed: the write
// itself (StatusChange), a terminal state reached, a restart begun (by
// its reason), a restart recovered, a placement wait ended.
func ObserveJobSetStatus(js *api.JobSet, old *api.JobSetStatus, now time.Time) {
	statusWrites.WithLabelValues(StatusChange(old, &js.Status)).Inc()
	if js.Status.TerminalState != old.TerminalState {
		switch js.Status.TerminalState {
		case api.TerminalStateCompleted:
			completed.WithLabelValues(js.Name, js.Namespace).Inc()
		case api.TerminalStateFailed:
			failed.WithLabelValues(js.Name, js.Namespace).Inc()
		}
	}
	before, after := condition(old, string(api.JobSetRestartingJobSet)), condition(&js.Status, string(api.JobSetRestartingJobSet))
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

// StatusChange names what changed from old to now, "+" between parts:
// the type of each condition added, removed or changed (status, reason
// or message), "counts" (the replicated jobs' counts), "restarts" (any
// of the restart counters, in-place attempts or execution attempts),
// "startTime", "terminal", and "none" when nothing did. Condition types
// are the API's few, so the names stay few.
func StatusChange(old, now *api.JobSetStatus) string {
	var parts []string
	seen := map[string]bool{}
	for _, c := range now.Conditions {
		seen[c.Type] = true
		if o := condition(old, c.Type); o == nil || o.Status != c.Status || o.Reason != c.Reason || o.Message != c.Message {
			parts = append(parts, c.Type)
		}
	}
	for _, c := range old.Conditions {
		if !seen[c.Type] {
			parts = append(parts, c.Type)
		}
	}
	slices.Sort(parts)
	if !equality.Semantic.DeepEqual(old.ReplicatedJobsStatus, now.ReplicatedJobsStatus) {
		parts = append(parts, "counts")
	}
	if old.Restarts != now.Restarts || old.RestartsCountTowardsMax != now.RestartsCountTowardsMax ||
		old.InfrastructureRestarts != now.InfrastructureRestarts || !ptr.Equal(old.PreviousInPlaceRestartAttempt, now.PreviousInPlaceRestartAttempt) ||
		!ptr.Equal(old.CurrentInPlaceRestartAttempt, now.CurrentInPlaceRestartAttempt) || !ptr.Equal(old.ExecutionAttempts, now.ExecutionAttempts) {
		parts = append(parts, "restarts")
	}
	if !equality.Semantic.DeepEqual(old.StartTime, now.StartTime) {
		parts = append(parts, "startTime")
	}
	if old.TerminalState != now.TerminalState {
		parts = append(parts, "terminal")
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, "+")
}

func condition(st *api.JobSetStatus, t string) *metav1.Condition {
	for i := range st.Conditions {
		if st.Conditions[i].Type == t {
			return &st.Conditions[i]
		}
	}
	return nil
}

// jobSetCollector reports every JobSet's state as gauges, computed at
// scrape time from the manager's cache: nothing to keep in step, and a
// standby replica reports the same values as the leader.
type jobSetCollector struct{}

type jobSetSource struct {
	list  func(context.Context) ([]api.JobSet, error)
	state func(*api.JobSet) string
}

var source atomic.Pointer[jobSetSource]

// ReportJobSets makes /metrics report the JobSets list returns (the
// manager's cache), each summed up in one word by state (workload.State).
// A later call replaces the source (tests run several managers).
func ReportJobSets(list func(context.Context) ([]api.JobSet, error), state func(*api.JobSet) string) {
	source.Store(&jobSetSource{list: list, state: state})
}

var (
	stateDesc = prometheus.NewDesc("multislice_jobset_state",
		"1 for the state each JobSet is in: Running, Waiting (for capacity), Restarting, Suspended, Completed or Failed.",
		[]string{"namespace", "jobset_name", "state"}, nil)
	restartsDesc = prometheus.NewDesc("multislice_jobset_restarts",
		"The JobSet's restarts so far (status.restarts).", []string{"namespace", "jobset_name"}, nil)
	maxRestartsDesc = prometheus.NewDesc("multislice_jobset_max_restarts",
		"The JobSet's failurePolicy.maxRestarts (0 when it has no failure policy).", []string{"namespace", "jobset_name"}, nil)
	waitingDesc = prometheus.NewDesc("multislice_jobset_waiting_since_seconds",
		"When a JobSet waiting for capacity (TopologyAssigned=False) began to wait, as a Unix time; absent when it is not waiting.",
		[]string{"namespace", "jobset_name"}, nil)
)

// Describe implements prometheus.Collector.
func (jobSetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{stateDesc, restartsDesc, maxRestartsDesc, waitingDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (jobSetCollector) Collect(ch chan<- prometheus.Metric) {
	src := source.Load()
	if src == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	jobsets, err := src.list(ctx)
	if err != nil {
		ch <- prometheus.NewInvalidMetric(stateDesc, err)
		return
	}
	for i := range jobsets {
		js := &jobsets[i]
		ns, name := js.Namespace, js.Name
		ch <- prometheus.MustNewConstMetric(stateDesc, prometheus.GaugeValue, 1, ns, name, src.state(js))
		ch <- prometheus.MustNewConstMetric(restartsDesc, prometheus.GaugeValue, float64(js.Status.Restarts), ns, name)
		maxRestarts := 0.0
		if js.Spec.FailurePolicy != nil {
			maxRestarts = float64(js.Spec.FailurePolicy.MaxRestarts)
		}
		ch <- prometheus.MustNewConstMetric(maxRestartsDesc, prometheus.GaugeValue, maxRestarts, ns, name)
		if w := condition(&js.Status, string(api.JobSetTopologyAssigned)); w != nil && w.Status == metav1.ConditionFalse {
			ch <- prometheus.MustNewConstMetric(waitingDesc, prometheus.GaugeValue, float64(w.LastTransitionTime.Unix()), ns, name)
		}
	}
}
