package policy

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/placement"
	"github.com/multislice/multislice/internal/slicing"
)

const (
	// TopologyAssigned is the JobSet condition that reports placement.
	TopologyAssigned = api.JobSetTopologyAssigned
	// waitingRequeue is how often a waiting JobSet looks for capacity
	// unasked. The domain cache wakes it whenever capacity may have freed
	// up, so this is a backstop; at one second, ten queued JobSets spent
	// most of the manager's CPU while 300 others were being placed.
	waitingRequeue = 10 * time.Second
)

// Placement is what a decision of an exclusive-topology JobSet sees:
// per exclusive-topology key its Jobs use, that key's domains and its own
// pins; and its rank in the queue.
type Placement struct {
	// Keys are, by exclusive-topology key, what placing the JobSet's Jobs
	// of that key needs (Pathways: its head by hostname, its workers by
	// node pool).
	Keys     map[string]KeyPlacement
	Priority int32
	// GroupLabel and SizeLabel are the node-selector keys that ask for
	// one multislice group.
	GroupLabel, SizeLabel string
	// HotSwap: the manager lets a recovering JobSet take the pools of
	// lower-priority ones when none is free (hotswap.go).
	HotSwap bool
	// Holders are the facts hot-swap needs of every JobSet holding a
	// domain of the snapshots, by namespace/name; supplied when the
	// decision without them asked (Plan.NeedsHolders).
	Holders map[string]placement.Holder
}

// KeyPlacement is one key's domains from the domain cache
// (placement.Cache) and the JobSet's pins among them.
type KeyPlacement struct {
	Snapshot placement.Snapshot
	// Pins are the JobSet's Jobs' domains of this key in the cluster, by Job name.
	Pins map[string]string
}

// placedKey is the exclusive-topology key a child Job is placed by (from
// its annotations, which api.PlacementAnnotations decided per replicated
// job), "" when the scheduler places it (no key, or upstream's
// pre-labelled-nodes strategy).
func placedKey(ann map[string]string) string {
	if _, nodeSelectorStrategy := ann[api.NodeSelectorStrategyKey]; nodeSelectorStrategy {
		return ""
	}
	return ann[api.ExclusiveKey]
}

// placementKeys are the keys js's replicated jobs are placed by, sorted.
func placementKeys(js *api.JobSet) []string {
	var keys []string
	for i := range js.Spec.ReplicatedJobs {
		if k := placedKey(api.PlacementAnnotations(js, &js.Spec.ReplicatedJobs[i])); k != "" && !slices.Contains(keys, k) {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

// place pins the Jobs the plan creates or resumes to domains of their
// exclusive keys, all of them or none (placement.Decide, one key at a
// time): it writes the TopologyAssigned condition, the Jobs' node
// selectors and, for a JobSet that must wait, the requeue; the Plan says
// what placement's memory must remember (HoldDomains, WaitForDomains).
// Jobs of no key are held back with the others while the JobSet waits,
// so a JobSet that waits holds nothing.
func place(o Observed, p *Plan, e *statusEditor) {
	in := o.Placement
	jobs := append(append([]*batchv1.Job(nil), p.Create...), p.Resume...)
	if len(jobs) == 0 {
		return
	}
	if in == nil {
		if keys := placementKeys(o.JobSet); o.Places && len(keys) > 0 {
			p.NeedsSnapshot = keys
		}
		return
	}
	// Assign every Job of the attempt at once, including those still waiting
	// for their previous incarnation to go: a restart is a gang too.
	byKey := jobsByKey(append(append([]*batchv1.Job(nil), jobs...), p.Pending...))
	js := o.JobSet
	name := js.Namespace + "/" + js.Name
	hold := map[string]map[string]string{}
	var assigned []string
	var swaps []Victim
	for _, key := range slices.Sorted(maps.Keys(byKey)) {
		kp, ok := in.Keys[key]
		if !ok {
			continue // not observed: the reconciler observes every key of placementKeys
		}
		me, result, held, swap := placeKey(in, kp, key, name, js, byKey[key])
		if result.Domains == nil && mayHotSwap(in, js) && in.Holders == nil {
			p.NeedsHolders = true
			return
		}
		if result.Domains == nil {
			p.WaitForDomains = &me
			p.Create, p.Resume = nil, nil
			p.RequeueAfter = waitingRequeue
			e.put(TopologyAssigned, metav1.ConditionFalse, api.InsufficientCapacityReason, whyFor(len(in.Keys), byKey[key], key, result.Why), corev1.EventTypeWarning)
			return
		}
		hold[key] = held
		assigned = append(assigned, keyAssignment(key, held))
		if swap != nil {
			swaps = append(swaps, took(in, swap)...)
		}
	}
	for _, j := range jobs { // built fresh or copied by Decide: ours to change
		key := placedKey(j.Annotations)
		d, ok := hold[key][j.Name]
		if !ok {
			continue
		}
		api.Pin(j, key, d)
	}
	if len(hold) == 0 {
		return
	}
	p.HoldDomains, p.HotSwap = hold, swaps
	assignedCondition(in, js, assigned, swaps, e)
}

// assignedCondition says where the Jobs went and, after a hot-swap, whose
// pools they took; a victim placed again settles its HotSwapped.
func assignedCondition(in *Placement, js *api.JobSet, assigned []string, swaps []Victim, e *statusEditor) {
	msg := domainsAssignedMessage(assigned)
	if len(swaps) > 0 {
		e.set(TopologyAssigned, metav1.ConditionTrue, api.HotSwapReason, msg+"; "+swapText(in, swaps), corev1.EventTypeWarning)
	} else {
		e.set(TopologyAssigned, metav1.ConditionTrue, api.DomainsAssignedReason, msg, "") // no event: the condition says it
	}
	poolsBack(js, e)
}

// keyAssignment is one key's part of the placement message: its Jobs'
// domains (held: Job name -> domain).
func keyAssignment(key string, held map[string]string) string {
	return fmt.Sprintf("%s: %s", key, summary(held))
}

func domainsAssignedMessage(assigned []string) string {
	return "each child Job has its own " + strings.Join(assigned, "; ")
}

// jobsByKey groups the Jobs placement places by their exclusive key.
func jobsByKey(jobs []*batchv1.Job) map[string][]*batchv1.Job {
	byKey := map[string][]*batchv1.Job{}
	for _, j := range jobs {
		if k := placedKey(j.Annotations); k != "" {
			byKey[k] = append(byKey[k], j)
		}
	}
	return byKey
}

// placeKey decides the domains of one key for jobs: held is every Job of
// the JobSet's domain of this key, those it keeps and those it gets; swap
// is set when it gets them by hot-swap.
func placeKey(in *Placement, kp KeyPlacement, key, name string, js *api.JobSet, jobs []*batchv1.Job) (placement.Waiter, placement.Result, map[string]string, *placement.Swap) {
	// What this JobSet holds is read from its Jobs in the cluster (their
	// pins survive a restart of the manager); memory adds only the Jobs of
	// this request not created yet, so a Job scaled away frees its domain.
	mine := maps.Clone(kp.Pins)
	if mine == nil {
		mine = map[string]string{}
	}
	for _, j := range jobs {
		if d, ok := kp.Snapshot.Held[name][j.Name]; ok && mine[j.Name] == "" {
			mine[j.Name] = d
		}
	}
	me := placement.Waiter{JobSet: name, Key: key, Priority: in.Priority, Created: js.CreationTimestamp.Time,
		Request: request(in, key, name, jobs, mine)}
	result := placement.Decide(me, mine, kp.Snapshot)
	var swap *placement.Swap
	if result.Domains == nil && mayHotSwap(in, js) && in.Holders != nil {
		if s, ok := placement.HotSwap(me, mine, kp.Snapshot, in.Holders); ok {
			result.Domains, swap = s.Domains, &s
		}
	}
	if result.Domains == nil {
		return me, result, nil, nil
	}
	held := mine
	for _, j := range jobs {
		held[j.Name] = result.Domains[j.Name]
	}
	return me, result, held, swap
}

// whyFor names the replicated jobs that wait when a JobSet places its
// Jobs by several keys (Pathways: "replicated job pathways-head (by
// kubernetes.io/hostname): ...").
func whyFor(keys int, waiting []*batchv1.Job, key, why string) string {
	if keys < 2 {
		return why
	}
	var rjobs []string
	for _, j := range waiting {
		if r := j.Labels[api.ReplicatedJobNameKey]; !slices.Contains(rjobs, r) {
			rjobs = append(rjobs, r)
		}
	}
	return fmt.Sprintf("replicated job %s (by %s): %s; nothing more of the JobSet is created until every replicated job has its domains",
		strings.Join(rjobs, ", "), key, why)
}

func summary(m map[string]string) string {
	names := make([]string, 0, len(m))
	for j := range m {
		names = append(names, j)
	}
	sort.Strings(names)
	out := ""
	for i, j := range names {
		if i == 4 {
			return out + fmt.Sprintf(", ... (%d in all)", len(names))
		}
		if i > 0 {
			out += ", "
		}
		out += j + "=" + m[j]
	}
	return out
}

func request(in *Placement, key, jobSet string, jobs []*batchv1.Job, mine map[string]string) placement.Request {
	req := placement.Request{JobSet: jobSet, Key: key}
	for _, j := range jobs {
		spec := j.Spec.Template.Spec
		sel := map[string]string{}
		for k, v := range spec.NodeSelector {
			if k != key { // a stale pin from a previous attempt must not constrain the choice
				sel[k] = v
			}
			if k == in.GroupLabel || k == in.SizeLabel {
				req.SameGroup = true
			}
		}
		req.Jobs = append(req.Jobs, placement.JobRequest{
			Name: j.Name, Pods: int(ptr.Deref(j.Spec.Parallelism, 1)), NodeSelector: sel,
			Tolerations: spec.Tolerations, RequestsTPU: gke.RequestsTPU(spec), Previous: mine[j.Name],
		})
	}
	return req
}

// placementStage places a running JobSet's Jobs (place). The first
// decision of a reconcile has no snapshot of the domains: one that would
// place asks for it (Plan.NeedsSnapshot) and the reconciler decides again
// with it, so the many decisions that place nothing take no snapshot.
func placementStage(d *decision) bool {
	if !d.suspended {
		place(d.o, &d.p, d.e)
	}
	return false
}

// placedStage says where a running JobSet's Jobs are when its status does
// not say so yet: the write that said it rode on a later counts write
// (batchCounts holds it while the Jobs start), or was lost with a manager
// that stopped between creating the Jobs and writing the status. The
// Jobs' pins are the record (api.Pin, slicing.Pin).
func placedStage(d *decision) bool {
	p := &d.p
	if d.suspended || len(p.Create)+len(p.Resume)+len(p.Pending) > 0 || len(d.c.active) == 0 ||
		meta.IsStatusConditionTrue(p.Status.Conditions, string(TopologyAssigned)) {
		return false
	}
	byKey := map[string]map[string]string{}
	var sliced []string
	for _, j := range d.c.active {
		if s := slicing.PinnedSlice(j); s != "" {
			sliced = append(sliced, sliceAssignment(j.Name, s, slicing.PinnedPartitions(j)))
			continue
		}
		key := placedKey(j.Annotations)
		if key == "" {
			continue // the scheduler places it
		}
		domain := api.PinnedDomain(j)
		if domain == "" {
			return false // not placed: the placement stage says why
		}
		if byKey[key] == nil {
			byKey[key] = map[string]string{}
		}
		byKey[key][j.Name] = domain
	}
	switch {
	case len(sliced) > 0:
		sort.Strings(sliced)
		d.e.set(TopologyAssigned, metav1.ConditionTrue, api.DomainsAssignedReason, slicesAssignedMessage(sliced), "")
	case len(byKey) > 0:
		var assigned []string
		for _, key := range slices.Sorted(maps.Keys(byKey)) {
			assigned = append(assigned, keyAssignment(key, byKey[key]))
		}
		d.e.set(TopologyAssigned, metav1.ConditionTrue, api.DomainsAssignedReason, domainsAssignedMessage(assigned), "")
	}
	return false
}
