package slicecheck

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/naming"
	"github.com/multislice/multislice/internal/slicing"
	"github.com/multislice/multislice/internal/tpu"
)

// Reconciler is the admission check: it judges Workloads, and marks the
// AdmissionChecks of its controller name Active (Kueue leaves a
// ClusterQueue with an inactive check inactive).
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	Clock    clock.Clock
}

// SetupWithManager registers both controllers: a Slice's change looks
// again at its JobSet's Workloads. Kueue's CRDs must be served.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if err := ctrl.NewControllerManagedBy(mgr).Named("slice-admission-check").
		For(newObject(WorkloadKind)).
		Watches(&slicev1beta1.Slice{}, handler.EnqueueRequestsFromMapFunc(r.workloadsOfSlice)).
		Complete(r); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).Named("slice-admission-check-active").
		For(newObject(AdmissionCheckKind)).
		Complete(reconcile.Func(r.activate))
}

// activate marks an AdmissionCheck of this controller Active.
func (r *Reconciler) activate(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ac := newObject(AdmissionCheckKind)
	if err := r.Client.Get(ctx, req.NamespacedName, ac); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if name, _, _ := unstructured.NestedString(ac.Object, "spec", "controllerName"); name != slicev1beta1.AdmissionCheckControllerName || conditionTrue(ac, "Active") {
		return ctrl.Result{}, nil
	}
	conds, _, _ := unstructured.NestedSlice(ac.Object, "status", "conditions")
	var kept []any
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] != "Active" {
			kept = append(kept, c)
		}
	}
	kept = append(kept, map[string]any{"type": "Active", "status": "True", "reason": "Active",
		"message":            "the multislice manager forms the Slices of this check's Workloads",
		"lastTransitionTime": r.Clock.Now().UTC().Format(time.RFC3339)})
	if err := unstructured.SetNestedSlice(ac.Object, kept, "status", "conditions"); err != nil {
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Status().Update(ctx, ac))
}

// workloadsOfSlice enqueues the Workloads of the JobSet a Slice is for.
func (r *Reconciler) workloadsOfSlice(ctx context.Context, o client.Object) []reconcile.Request {
	ns, name := o.GetLabels()[slicev1beta1.JobSetNamespaceLabel], o.GetLabels()[slicev1beta1.JobSetNameLabel]
	if ns == "" || name == "" {
		return nil
	}
	list := newList(WorkloadKind)
	if err := r.Client.List(ctx, list, client.InNamespace(ns)); err != nil {
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if ownerJobSet(&list.Items[i]) == name {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: ns, Name: list.Items[i].GetName()}})
		}
	}
	return out
}

// Reconcile judges the check on one Workload and carries it out.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	w := newObject(WorkloadKind)
	if err := r.Client.Get(ctx, req.NamespacedName, w); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	checks, err := r.checks(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	check, state, ok := checkState(w, checks)
	if !ok {
		return ctrl.Result{}, nil
	}
	var js api.JobSet
	name := ownerJobSet(w)
	if name == "" {
		return ctrl.Result{}, r.setState(ctx, w, check, Decision{State: Ready, Message: "not a JobSet's Workload: no Slices to form"}, state)
	}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: w.GetNamespace(), Name: name}, &js); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	o, err := r.observe(ctx, w, &js, state)
	if err != nil {
		return ctrl.Result{}, err
	}
	d := Decide(o)
	for _, s := range d.Delete {
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, &slicev1beta1.Slice{ObjectMeta: metav1.ObjectMeta{Name: s}})); err != nil {
			return ctrl.Result{}, fmt.Errorf("delete slice %s: %w", s, err)
		}
	}
	for _, f := range d.Form {
		s := slicing.NewSlice(slicing.OwnerOf(&js), f.Want, f.Cubes, f.Quarters)
		s.Annotations[slicev1beta1.WorkloadAnnotation] = w.GetName()
		if err := r.Client.Create(ctx, s); client.IgnoreAlreadyExists(err) != nil {
			return ctrl.Result{}, fmt.Errorf("create slice %s: %w", s.Name, err)
		}
	}
	return ctrl.Result{}, r.setState(ctx, w, check, d, state)
}

// setState writes the decision's state of the check, with an event on
// the JobSet's Workload when it does not pass.
func (r *Reconciler) setState(ctx context.Context, w *unstructured.Unstructured, check string, d Decision, was string) error {
	if d.State == "" || !setCheckState(w, check, d.State, d.Message, r.Clock.Now()) {
		return nil
	}
	if err := r.Client.Status().Update(ctx, w); err != nil {
		return client.IgnoreNotFound(err)
	}
	if r.Recorder != nil && d.State != was {
		kind := corev1.EventTypeNormal
		if d.State == Retry {
			kind = corev1.EventTypeWarning
		}
		r.Recorder.Eventf(w, nil, kind, "SliceCheck"+d.State, "AdmissionCheck", "%s: %s", check, d.Message)
	}
	return nil
}

// checks are the names of the AdmissionChecks of this controller.
func (r *Reconciler) checks(ctx context.Context) (map[string]bool, error) {
	list := newList(AdmissionCheckKind)
	if err := r.Client.List(ctx, list); err != nil {
		return nil, fmt.Errorf("list admission checks: %w", err)
	}
	out := map[string]bool{}
	for i := range list.Items {
		if name, _, _ := unstructured.NestedString(list.Items[i].Object, "spec", "controllerName"); name == slicev1beta1.AdmissionCheckControllerName {
			out[list.Items[i].GetName()] = true
		}
	}
	return out, nil
}

// observe reads what Decide needs: the JobSet's dynamic-slice Jobs with
// the hosts Kueue gave each (a replicated job is a pod set; Job i of it
// has ranks i*parallelism and up), its Slices, and the sub-blocks' hosts.
func (r *Reconciler) observe(ctx context.Context, w *unstructured.Unstructured, js *api.JobSet, state string) (Observed, error) {
	o := Observed{State: state, QuotaReserved: conditionTrue(w, "QuotaReserved")}
	for _, rj := range js.Spec.ReplicatedJobs {
		tmpl := &rj.Template.Spec.Template
		if !slicing.Asks(tmpl) {
			continue
		}
		topology, _ := tpu.ParseTopology(tmpl.Annotations[gke.SliceTopologyAnnotation])
		hosts, err := assignedHosts(w, rj.Name)
		if err != nil {
			return o, err
		}
		per := 1
		if p := rj.Template.Spec.Parallelism; p != nil {
			per = int(*p)
		}
		for i := range int(rj.Replicas) {
			want := Want{Job: naming.JobName(js.Name, rj.Name, i), Topology: topology}
			if hosts != nil {
				if len(hosts) != int(rj.Replicas)*per {
					return o, fmt.Errorf("pod set %s: Kueue chose %d hosts for %d pods", rj.Name, len(hosts), int(rj.Replicas)*per)
				}
				want.Hosts = hosts[i*per : (i+1)*per]
			}
			o.Wants = append(o.Wants, want)
		}
	}
	var mine slicev1beta1.SliceList
	if err := r.Client.List(ctx, &mine, client.MatchingLabels{slicev1beta1.JobSetUIDLabel: string(js.UID)}); err != nil {
		return o, fmt.Errorf("list the JobSet's slices: %w", err)
	}
	o.Slices = map[string]Slice{}
	for _, s := range mine.Items {
		if s.DeletionTimestamp != nil {
			continue
		}
		fact := Slice{Name: s.Name, Partitions: s.Spec.PartitionIDs, ForKueue: s.Annotations[slicev1beta1.WorkloadAnnotation] != ""}
		fact.Ready, fact.Failed, fact.Message = slicing.StateOf(&s)
		o.Slices[s.Labels[slicev1beta1.JobNameLabel]] = fact
	}
	if o.QuotaReserved && o.State == Pending && o.toForm() {
		nodes, err := r.hosts(ctx)
		if err != nil {
			return o, err
		}
		o.Nodes = nodes
	}
	return o, nil
}

// hosts are the sub-blocks' nodes by host name.
func (r *Reconciler) hosts(ctx context.Context) (map[string]slicing.Host, error) {
	var nodes corev1.NodeList
	if err := r.Client.List(ctx, &nodes, client.HasLabels{gke.PartitionCubeLabel}); err != nil {
		return nil, fmt.Errorf("list the sub-blocks' nodes: %w", err)
	}
	out := make(map[string]slicing.Host, len(nodes.Items))
	for _, n := range nodes.Items {
		pos, _ := slicing.ParsePos(n.Labels[slicev1beta1.HostPositionLabel])
		host := n.Labels[gke.HostnameLabel]
		if host == "" {
			host = n.Name
		}
		out[host] = slicing.Host{Cube: n.Labels[gke.PartitionCubeLabel], Block: n.Labels[gke.TopologyBlockLabel], Pos: pos}
	}
	return out, nil
}
