// Package view is what a person sees of the cluster, as pure functions of
// API objects: a JobSet's slices x workers, the fleet's groups x pools x
// hosts, and a JobSet's restarts as a timeline. `multislice status` prints
// these views; the dashboard draws them.
package view

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/workload"
)

// JobSet is a JobSet at a glance: slices x workers; `status -o json`
// prints it and the dashboard draws it.
type JobSet struct {
	Name        string `json:"name"`
	Namespace   string `json:"namespace"`
	State       string `json:"state"`
	Restarts    int32  `json:"restarts"`
	MaxRestarts int32  `json:"maxRestarts"`
	// InPlaceAttempt is the current in-place restart attempt (KEP-467), if any.
	InPlaceAttempt *int32  `json:"inPlaceAttempt,omitempty"`
	Slices         []Slice `json:"slices"`
	// Others are the child Jobs whose pods request no TPU (Pathways'
	// head, a driver): not slices, shown apart.
	Others     []Slice            `json:"others,omitempty"`
	Conditions []metav1.Condition `json:"conditions"`
	Events     []string           `json:"events"`
	// Queue is where it stands while it waits for capacity (PlaceInQueue).
	Queue *QueuePlace `json:"queue,omitempty"`
	// Kueue is its Workload's admission, for a JobSet in a Kueue queue.
	Kueue *KueueAdmission `json:"kueue,omitempty"`
	// HotSwap says which side of a hot-swap it is on, if any (HotSwapOf).
	HotSwap string `json:"hotSwap,omitempty"`
	// InfrastructureRestarts and Budgets are the restart budgets'
	// (RestartBudgets gate): restarts the infrastructure caused, and each
	// budgeted replicated job's counted restarts against its maximum.
	InfrastructureRestarts int32    `json:"infrastructureRestarts,omitempty"`
	Budgets                []Budget `json:"budgets,omitempty"`
}

// Budget is one replicated job's restart budget and what it has used.
type Budget struct {
	ReplicatedJob string `json:"replicatedJob"`
	Used          int32  `json:"used"`
	Max           int32  `json:"max"`
}

// budgets lists the replicated jobs' restart budgets, in spec order.
func budgets(js *api.JobSet) []Budget {
	var out []Budget
	for _, rj := range js.Spec.ReplicatedJobs {
		if rj.FailurePolicy == nil {
			continue
		}
		b := Budget{ReplicatedJob: rj.Name, Max: rj.FailurePolicy.MaxRestarts}
		for _, s := range js.Status.ReplicatedJobsStatus {
			if s.Name == rj.Name {
				b.Used = s.RestartsCountTowardsMax
			}
		}
		out = append(out, b)
	}
	return out
}

// HotSwapOf is a JobSet's side of a hot-swap: the victim's while it
// waits for pools, the taker's while its placement came from one.
func HotSwapOf(js *api.JobSet) string {
	if c := meta.FindStatusCondition(js.Status.Conditions, string(api.JobSetHotSwapped)); c != nil && c.Status == metav1.ConditionTrue {
		return "its pools were taken by " + js.Annotations[api.HotSwappedByAnnotation] + "; it waits for pools in its place in the queue"
	}
	if c := meta.FindStatusCondition(js.Status.Conditions, string(api.JobSetTopologyAssigned)); c != nil && c.Reason == api.HotSwapReason {
		if _, took, ok := strings.Cut(c.Message, "hot-swap took the pools of "); ok {
			return "it took the pools of " + took
		}
		return c.Message
	}
	return ""
}

// ResourceName is the JobSet as `kubectl get -o name` names it.
func (j JobSet) ResourceName() string { return "jobset.jobset.x-k8s.io/" + j.Name }

// Slice is one child Job: its domain and its workers.
type Slice struct {
	Job           string `json:"job"`
	ReplicatedJob string `json:"replicatedJob"`
	Domain        string `json:"domain"`
	// Slice is the Job's index across the JobSet (label job-global-index):
	// its workers' MEGASCALE_SLICE_ID, and what `logs --slice` takes.
	Slice int `json:"slice"`
	// Index is the Job's index within its replicated job.
	Index   int      `json:"index"`
	Attempt int      `json:"attempt"`
	Workers []Worker `json:"workers"`
}

// Worker is one pod of a slice.
type Worker struct {
	Index   int    `json:"index"`
	Pod     string `json:"pod"`
	Node    string `json:"node"`
	Phase   string `json:"phase"`
	Attempt int    `json:"attempt"`
	// InPlaceAttempt is the attempt the pod's in-place restart agent reported.
	InPlaceAttempt string `json:"inPlaceAttempt,omitempty"`
}

// Summarize builds the view of one JobSet from its Jobs, pods and events.
func Summarize(js *api.JobSet, jobs []batchv1.Job, pods []corev1.Pod, events []corev1.Event) JobSet {
	v := JobSet{Name: js.Name, Namespace: js.Namespace, State: workload.State(js), Restarts: js.Status.Restarts, Conditions: js.Status.Conditions,
		InPlaceAttempt: js.Status.CurrentInPlaceRestartAttempt, HotSwap: HotSwapOf(js),
		InfrastructureRestarts: js.Status.InfrastructureRestarts, Budgets: budgets(js)}
	if js.Spec.FailurePolicy != nil {
		v.MaxRestarts = js.Spec.FailurePolicy.MaxRestarts
	}
	byJob := map[string][]Worker{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		idx, _ := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
		attempt, _ := strconv.Atoi(p.Labels[api.RestartsKey])
		byJob[p.Labels[api.LegacyJobNameLabel]] = append(byJob[p.Labels[api.LegacyJobNameLabel]], Worker{
			Index: idx, Pod: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase), Attempt: attempt,
			InPlaceAttempt: p.Annotations[api.InPlaceRestartAttemptKey],
		})
	}
	// In a TPU JobSet, a Job whose pods request no TPU is not a slice; in
	// one with no TPU at all, every Job is shown as one.
	anyTPU := false
	for i := range jobs {
		anyTPU = anyTPU || gke.RequestsTPU(jobs[i].Spec.Template.Spec)
	}
	for _, j := range jobs {
		if j.DeletionTimestamp != nil {
			continue
		}
		idx, _ := strconv.Atoi(j.Labels[api.JobIndexKey])
		global, err := strconv.Atoi(j.Labels[api.JobGlobalIndexKey])
		if err != nil {
			global = idx // a Job written before global indices: one replicated job
		}
		attempt, _ := strconv.Atoi(j.Labels[api.RestartsKey])
		w := byJob[j.Name]
		sort.Slice(w, func(a, b int) bool { return w[a].Index < w[b].Index })
		s := Slice{Job: j.Name, ReplicatedJob: j.Labels[api.ReplicatedJobNameKey],
			Domain: api.PinnedDomain(&j), Slice: global, Index: idx, Attempt: attempt, Workers: w}
		if !anyTPU || gke.RequestsTPU(j.Spec.Template.Spec) {
			v.Slices = append(v.Slices, s)
		} else {
			v.Others = append(v.Others, s)
		}
	}
	for _, list := range [][]Slice{v.Slices, v.Others} {
		sort.Slice(list, func(a, b int) bool { return list[a].Slice < list[b].Slice })
	}
	sort.Slice(events, func(a, b int) bool { return eventTime(events[a]).Before(eventTime(events[b])) })
	for _, e := range events[max(0, len(events)-8):] {
		v.Events = append(v.Events, fmt.Sprintf("%s %s %s: %s", eventTime(e).Format("15:04:05"), e.Type, e.Reason, e.Message))
	}
	return v
}

func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.EventTime.Time, e.LastTimestamp.Time, e.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}
