package jobset

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/placement"
)

const (
	// TopologyAssigned is the JobSet condition that reports placement.
	TopologyAssigned = api.JobSetTopologyAssigned
	// waitingRequeue is how often a waiting JobSet looks for capacity.
	waitingRequeue = time.Second
)

// Placer assigns topology domains to exclusive-topology JobSets (see
// package placement) before their Jobs are created or resumed, and
// remembers the assignments so that restarts keep their domains and no two
// JobSets share one.
type Placer struct {
	Client     client.Reader
	GroupLabel string
	SizeLabel  string

	mu      sync.Mutex
	held    map[types.NamespacedName]map[string]string // JobSet -> Job name -> domain
	waiting map[types.NamespacedName]placement.Waiter
	wake    chan event.GenericEvent
}

// Release forgets a JobSet that finished or is gone, freeing its domains.
func (p *Placer) Release(js types.NamespacedName) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.waiting, js)
	if _, held := p.held[js]; held {
		delete(p.held, js)
		p.wakeWaiting()
	}
}

// Wakeups delivers the waiting JobSets whenever a JobSet releases its
// domains, so that the next in line starts at once instead of at its
// next one-second look.
func (p *Placer) Wakeups() <-chan event.GenericEvent {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.wake == nil {
		p.wake = make(chan event.GenericEvent, 1024)
	}
	return p.wake
}

// wakeWaiting sends every waiting JobSet to Wakeups; the caller holds mu.
// A full channel drops the wake-up: the one-second look still comes.
func (p *Placer) wakeWaiting() {
	if p.wake == nil {
		return
	}
	for name := range p.waiting {
		select {
		case p.wake <- event.GenericEvent{Object: &api.JobSet{ObjectMeta: metav1.ObjectMeta{Name: name.Name, Namespace: name.Namespace}}}:
		default:
		}
	}
}

// WaitingRequests maps a freed pod to the waiting JobSets: a pod that
// stops or goes may have been the last one on a domain.
func (p *Placer) WaitingRequests(context.Context, client.Object) []reconcile.Request {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make([]reconcile.Request, 0, len(p.waiting))
	for name := range p.waiting {
		out = append(out, reconcile.Request{NamespacedName: name})
	}
	return out
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

// Place runs before the reconciler acts on a plan: it pins the Jobs the plan
// creates or resumes to assigned domains, or holds them all back.
func (p *Placer) Place(ctx context.Context, js *api.JobSet, plan *Plan) error {
	key := exclusiveKey(js)
	if key == "" {
		return nil
	}
	if ptr.Deref(js.Spec.Suspend, false) {
		// A suspended JobSet (e.g. queued by Kueue) holds no capacity; it
		// is placed when it resumes.
		p.Release(client.ObjectKeyFromObject(js))
		return nil
	}
	if _, nodeSelectorStrategy := js.Annotations[api.NodeSelectorStrategyKey]; nodeSelectorStrategy {
		return nil // upstream's pre-labelled-nodes strategy: nothing to assign
	}
	jobs := append(append([]*batchv1.Job(nil), plan.Create...), plan.Resume...)
	if len(jobs) == 0 {
		return nil
	}
	// Assign every Job of the attempt at once, including those still waiting
	// for their previous incarnation to go: a restart is a gang too.
	all := append(append([]*batchv1.Job(nil), jobs...), plan.Pending...)
	priority, err := p.priority(ctx, js)
	if err != nil {
		return err
	}
	domains, pins, err := p.domains(ctx, key, js)
	if err != nil {
		return err
	}
	name := client.ObjectKeyFromObject(js)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.held == nil {
		p.held, p.waiting = map[types.NamespacedName]map[string]string{}, map[types.NamespacedName]placement.Waiter{}
	}
	// What this JobSet holds is read from its Jobs in the cluster (their
	// pins survive a restart of the manager); memory adds only the Jobs of
	// this request not created yet, so a Job scaled away frees its domain.
	mine := pins
	for _, j := range all {
		if d, ok := p.held[name][j.Name]; ok && mine[j.Name] == "" {
			mine[j.Name] = d
		}
	}
	me := placement.Waiter{JobSet: name.String(), Key: key, Priority: priority, Created: js.CreationTimestamp.Time,
		Request: p.request(js, key, all, mine)}
	result := placement.Decide(me, mine, p.snapshot(domains))
	e := newStatusEditor(&plan.Status, time.Now())
	if result.Domains == nil {
		p.waiting[name] = me
		plan.Create, plan.Resume = nil, nil
		plan.RequeueAfter = waitingRequeue
		e.put(TopologyAssigned, metav1.ConditionFalse, api.InsufficientCapacityReason, result.Why, corev1.EventTypeWarning)
	} else {
		delete(p.waiting, name)
		p.held[name] = mine
		for _, j := range all {
			p.held[name][j.Name] = result.Domains[j.Name]
		}
		for _, j := range jobs {
			d := result.Domains[j.Name]
			j.Spec.Template.Spec.NodeSelector = merge(j.Spec.Template.Spec.NodeSelector, map[string]string{key: d})
			j.Annotations = merge(j.Annotations, map[string]string{api.AssignedDomainAnnotation: d})
		}
		e.set(TopologyAssigned, metav1.ConditionTrue, api.DomainsAssignedReason,
			fmt.Sprintf("each child Job has its own %s: %s", key, summary(p.held[name])), corev1.EventTypeNormal)
	}
	plan.Events = append(plan.Events, e.events...)
	plan.StatusChanged = plan.StatusChanged || e.changed
	return nil
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

func (p *Placer) request(js *api.JobSet, key string, jobs []*batchv1.Job, mine map[string]string) placement.Request {
	name := client.ObjectKeyFromObject(js)
	req := placement.Request{JobSet: name.String(), Key: key}
	for _, j := range jobs {
		spec := j.Spec.Template.Spec
		sel := map[string]string{}
		for k, v := range spec.NodeSelector {
			if k != key { // a stale pin from a previous attempt must not constrain the choice
				sel[k] = v
			}
			if k == p.GroupLabel || k == p.SizeLabel {
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

// snapshot is what the Placer knows of the others, for placement.Decide;
// the caller holds mu.
func (p *Placer) snapshot(domains []placement.Domain) placement.Snapshot {
	s := placement.Snapshot{Domains: domains, Held: map[string]map[string]string{}}
	for js, jobs := range p.held {
		s.Held[js.String()] = jobs
	}
	for _, w := range p.waiting {
		s.Waiting = append(s.Waiting, w)
	}
	return s
}

// domains groups the nodes carrying the topology key into domains, each
// held by the JobSet whose Job is pinned there; pins are js's own Jobs'
// domains by Job name.
func (p *Placer) domains(ctx context.Context, key string, js *api.JobSet) (out []placement.Domain, pins map[string]string, err error) {
	// Read-only views of the cache: copying 1,000 nodes per placement is waste.
	var nodes corev1.NodeList
	if err := p.Client.List(ctx, &nodes, client.HasLabels{key}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	var jobs batchv1.JobList
	if err := p.Client.List(ctx, &jobs, client.HasLabels{api.JobSetNameKey}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, fmt.Errorf("list jobs: %w", err)
	}
	pinned, pins := map[string]string{}, map[string]string{}
	for i := range jobs.Items {
		j := &jobs.Items[i]
		d := j.Spec.Template.Spec.NodeSelector[key]
		if d == "" || api.JobOutcome(j) != "" || ptr.Deref(j.Spec.Suspend, false) {
			// A suspended Job (its JobSet queued or preempted by Kueue)
			// holds no domain: its pods are gone or going, and those
			// still stopping are occupants below. Resumed, it is placed again.
			continue
		}
		if j.Labels[api.JobSetUIDKey] == string(js.UID) {
			// Its own Jobs, even those going away: a Job being recreated
			// comes back to its domain; others keep theirs (placement.MarkHolders).
			pins[j.Name] = d
			continue
		}
		// Another JobSet's Job, even one being deleted: a restart brings it
		// back to the same domain, and a manager that restarted meanwhile
		// knows that only from the cluster.
		pinned[d] = j.Namespace + "/" + j.Labels[api.JobSetNameKey]
	}
	occupied, err := p.occupants(ctx)
	if err != nil {
		return nil, nil, err
	}
	byValue := map[string]*placement.Domain{}
	var order []string
	for i := range nodes.Items {
		n := &nodes.Items[i]
		v := n.Labels[key]
		d := byValue[v]
		if d == nil {
			d = &placement.Domain{Value: v, Group: n.Labels[p.GroupLabel], Holder: pinned[v]}
			d.ExpectedHosts, _ = gke.SliceHosts(n)
			byValue[v] = d
			order = append(order, v)
		}
		d.Nodes = append(d.Nodes, placement.Node{Name: n.Name, Labels: n.Labels, Taints: n.Spec.Taints, Healthy: gke.FitForWork(n)})
		if d.Holder == "" {
			d.Holder = occupied[n.Name]
		}
	}
	sort.Strings(order)
	out = make([]placement.Domain, len(order))
	for i, v := range order {
		out[i] = *byValue[v]
	}
	return out, pins, nil
}

// occupants maps each node to the workload whose TPU pods run on it: the
// JobSet (namespace/name) for a JobSet's pods, else the pod itself. Pods
// of JobSets are mostly known from their Jobs' pins already; this also
// sees plain Jobs, JobSets placed by others, and old pods still stopping.
func (p *Placer) occupants(ctx context.Context) (map[string]string, error) {
	var pods corev1.PodList
	if err := p.Client.List(ctx, &pods, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("list pods: %w", err)
	}
	out := map[string]string{}
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.Spec.NodeName == "" || !gke.RequestsTPU(pod.Spec) || out[pod.Spec.NodeName] != "" {
			continue
		}
		if js := pod.Labels[api.JobSetNameKey]; js != "" {
			out[pod.Spec.NodeName] = pod.Namespace + "/" + js
		} else {
			out[pod.Spec.NodeName] = "pod " + pod.Namespace + "/" + pod.Name
		}
	}
	return out, nil
}

// priority is the pod priority of the JobSet's first replicated job.
func (p *Placer) priority(ctx context.Context, js *api.JobSet) (int32, error) {
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
	if err := p.Client.Get(ctx, types.NamespacedName{Name: spec.PriorityClassName}, &pc); err != nil {
		return 0, client.IgnoreNotFound(err)
	}
	return pc.Value, nil
}
