package jobset

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/placement"
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
// its key's domains from the domain cache (placement.Cache), its own pins
// and its rank in the queue.
type Placement struct {
	Key      string
	Snapshot placement.Snapshot
	// Pins are the JobSet's Jobs' domains in the cluster, by Job name.
	Pins     map[string]string
	Priority int32
	// GroupLabel and SizeLabel are the node-selector keys that ask for
	// one multislice group.
	GroupLabel, SizeLabel string
}

func exclusiveKey(js *api.JobSet) string {
	if v := js.Annotations[api.ExclusiveKey]; v != "" {
		return v
	}
	for _, rj := range js.Spec.ReplicatedJobs {
		if v := rj.Template.Annotations[api.ExclusiveKey]; v != "" {
			return v
		}
	}
	return ""
}

// needsPlacement: the JobSet's Jobs are placed by us, now (it runs, it
// names an exclusive key, and not upstream's pre-labelled-nodes strategy).
func needsPlacement(js *api.JobSet) (key string, ok bool) {
	key = exclusiveKey(js)
	if key == "" || ptr.Deref(js.Spec.Suspend, false) {
		return "", false
	}
	if _, nodeSelectorStrategy := js.Annotations[api.NodeSelectorStrategyKey]; nodeSelectorStrategy {
		return "", false
	}
	if _, done := finished(&js.Status); done != nil {
		return "", false
	}
	return key, true
}

// place pins the Jobs the plan creates or resumes to domains of the
// exclusive key, all of them or none (placement.Decide): it writes the
// TopologyAssigned condition, the Jobs' node selectors and, for a JobSet
// that must wait, the requeue; the Plan says what placement's memory must
// remember (HoldDomains, WaitForDomains).
func place(o Observed, p *Plan, e *statusEditor) {
	in := o.Placement
	jobs := append(append([]*batchv1.Job(nil), p.Create...), p.Resume...)
	if in == nil || len(jobs) == 0 {
		return
	}
	// Assign every Job of the attempt at once, including those still waiting
	// for their previous incarnation to go: a restart is a gang too.
	all := append(append([]*batchv1.Job(nil), jobs...), p.Pending...)
	js := o.JobSet
	name := js.Namespace + "/" + js.Name
	// What this JobSet holds is read from its Jobs in the cluster (their
	// pins survive a restart of the manager); memory adds only the Jobs of
	// this request not created yet, so a Job scaled away frees its domain.
	mine := maps.Clone(in.Pins)
	if mine == nil {
		mine = map[string]string{}
	}
	for _, j := range all {
		if d, ok := in.Snapshot.Held[name][j.Name]; ok && mine[j.Name] == "" {
			mine[j.Name] = d
		}
	}
	me := placement.Waiter{JobSet: name, Key: in.Key, Priority: in.Priority, Created: js.CreationTimestamp.Time,
		Request: request(in, name, all, mine)}
	result := placement.Decide(me, mine, in.Snapshot)
	if result.Domains == nil {
		p.WaitForDomains = &me
		p.Create, p.Resume = nil, nil
		p.RequeueAfter = waitingRequeue
		e.put(TopologyAssigned, metav1.ConditionFalse, api.InsufficientCapacityReason, result.Why, corev1.EventTypeWarning)
		return
	}
	held := mine
	for _, j := range all {
		held[j.Name] = result.Domains[j.Name]
	}
	for _, j := range jobs { // built fresh or copied by Decide: ours to change
		d := result.Domains[j.Name]
		j.Spec.Template.Spec.NodeSelector = merge(j.Spec.Template.Spec.NodeSelector, map[string]string{in.Key: d})
		j.Annotations = merge(j.Annotations, map[string]string{api.AssignedDomainAnnotation: d})
	}
	p.HoldDomains = held
	e.set(TopologyAssigned, metav1.ConditionTrue, api.DomainsAssignedReason,
		fmt.Sprintf("each child Job has its own %s: %s", in.Key, summary(held)), corev1.EventTypeNormal)
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

func request(in *Placement, jobSet string, jobs []*batchv1.Job, mine map[string]string) placement.Request {
	req := placement.Request{JobSet: jobSet, Key: in.Key}
	for _, j := range jobs {
		spec := j.Spec.Template.Spec
		sel := map[string]string{}
		for k, v := range spec.NodeSelector {
			if k != in.Key { // a stale pin from a previous attempt must not constrain the choice
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

// priority is the pod priority of the JobSet's first replicated job.
func priority(ctx context.Context, c client.Reader, js *api.JobSet) (int32, error) {
	if len(js.Spec.ReplicatedJobs) == 0 {
		return 0, nil
	}
	spec := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
	if spec.Priority != nil {
		return *spec.Priority, nil
	}
	if spec.PriorityClassName == "" {
		return 0, nil
	}
	var pc schedulingv1.PriorityClass
	if err := c.Get(ctx, types.NamespacedName{Name: spec.PriorityClassName}, &pc); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	return pc.Value, nil
}
