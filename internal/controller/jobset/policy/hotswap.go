package policy

import (
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/placement"
	"github.com/multislice/multislice/internal/workload"
)

// Hot-swap (GKE's name for it): when a slice of a running JobSet fails
// and no healthy free pool fits, it takes the pools of JobSets of strictly
// lower priority (placement.HotSwap chooses). The taker marks each victim
// (api.HotSwappedByAnnotation) before it creates its Jobs; the victim's
// own decision reads the mark and restarts all of its Jobs, not counting
// towards maxRestarts, then waits for pools in its place in the queue.
// The mark lives on the victim, so a manager that restarts in between
// carries on from the cluster.

// Victim is a JobSet whose pools a plan takes.
type Victim struct {
	JobSet string // namespace/name
	// Attempt is the victim's attempt whose pools go (its status.restarts).
	Attempt int32
	// Pools are the domains the taker gets of it.
	Pools []string
}

// mayHotSwap: js restarts after running and may take others' pools: the
// manager and the JobSet allow it, and it is not itself a victim waiting
// for pools (a swap never cascades).
func mayHotSwap(in *Placement, js *api.JobSet) bool {
	return in.HotSwap && js.Status.Restarts > 0 && js.Annotations[api.HotSwapAnnotation] != "false" && !waitingAfterSwap(js)
}

// waitingAfterSwap: js lost its pools to a hot-swap and has none yet.
func waitingAfterSwap(js *api.JobSet) bool {
	return meta.IsStatusConditionTrue(js.Status.Conditions, string(api.JobSetHotSwapped))
}

// HolderOf is what hot-swap needs to know of a JobSet holding domains;
// attempt taken is true when a hot-swap took its current attempt, or it
// still waits after one (either way its domains are freeing).
func HolderOf(js *api.JobSet, priority int32) placement.Holder {
	marked := js.Annotations[api.HotSwappedByAnnotation] != "" &&
		js.Annotations[api.HotSwappedAttemptAnnotation] == strconv.Itoa(int(js.Status.Restarts))
	return placement.Holder{Priority: priority, Protected: js.Annotations[api.HotSwapAnnotation] == "false",
		Taken: marked || waitingAfterSwap(js), Attempt: js.Status.Restarts}
}

// took lists the victims a swap newly takes (those it frees already were
// marked by the swap that took them).
func took(in *Placement, s *placement.Swap) []Victim {
	out := make([]Victim, 0, len(s.Victims))
	for _, v := range s.Victims {
		out = append(out, Victim{JobSet: v, Attempt: in.Holders[v].Attempt, Pools: s.Taken[v]})
	}
	return out
}

// swapText is the taker's side of a swap, for its TopologyAssigned condition.
func swapText(in *Placement, victims []Victim) string {
	parts := make([]string, 0, len(victims))
	for _, v := range victims {
		parts = append(parts, fmt.Sprintf("%s (priority %d): %s", v.JobSet, in.Holders[v.JobSet].Priority, strings.Join(v.Pools, ", ")))
	}
	return fmt.Sprintf("no healthy free pool fitted, so hot-swap took the pools of lower-priority %s (this JobSet's priority %d)",
		strings.Join(parts, "; "), in.Priority)
}

// poolsBack settles a victim's HotSwapped condition once it has pools again.
func poolsBack(js *api.JobSet, e *statusEditor) {
	if waitingAfterSwap(js) {
		e.set(api.JobSetHotSwapped, metav1.ConditionFalse, api.PoolsBackReason,
			"it has pools again, after a hot-swap by "+js.Annotations[api.HotSwappedByAnnotation]+" took its earlier ones", "")
	}
}

// hotSwappedStage restarts the attempt of a JobSet whose pools a hot-swap
// took: every Job goes (the taker's pods wait for its pods to leave), the
// restart does not count towards maxRestarts, and the JobSet waits for
// pools like any other, in its place in the queue.
func hotSwappedStage(d *decision) bool {
	js := d.js
	by := js.Annotations[api.HotSwappedByAnnotation]
	if by == "" || js.Annotations[api.HotSwappedAttemptAnnotation] != strconv.Itoa(int(js.Status.Restarts)) || d.suspended {
		return false
	}
	if d.o.Gates.RestartBudgets && !spendInfrastructure(js, d.e, "a hot-swap by "+by+" took its pools") {
		return true
	}
	restartAll(d.e, d.o.Gates, false, api.PoolsTakenReason)
	msg := fmt.Sprintf("its pools were taken by %s, of higher priority, whose slice failed with no healthy spare left; it waits for pools in its place in the queue and runs again when they free up", by)
	if js.Labels[workload.QueueLabel] != "" {
		// Kueue's queue, not ours: its quota goes back and it requeues.
		d.p.EvictFromKueue = "hot-swap: " + msg
		msg += " (evicted through Kueue: its quota is released and it requeues)"
	}
	d.e.put(api.JobSetHotSwapped, metav1.ConditionTrue, api.PoolsTakenReason, msg, corev1.EventTypeWarning)
	return true
}
