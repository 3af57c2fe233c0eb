package jobset

import (
	"context"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/slicing"
)

// reservation is the cubes of a Slice a decision formed (a sub-slice's
// quarters of its cube), until the cache shows the Slice (its informer's
// add event; or, its creation failed, reservationTTL after).
type reservation struct {
	cubes    []string
	quarters uint8
	at       time.Time
}

const reservationTTL = time.Minute

// slicing: the manager forms dynamic slices (the DynamicSlicing gate),
// reading the cubes from the domain cache, so only where it has one.
func (r *Reconciler) slicing() bool { return r.Gates.DynamicSlicing && r.Domains != nil }

// dynamic says whether any replicated job of js asks for dynamic slices.
func dynamic(js *api.JobSet) bool {
	for i := range js.Spec.ReplicatedJobs {
		if slicing.Asks(&js.Spec.ReplicatedJobs[i].Template.Spec.Template) {
			return true
		}
	}
	return false
}

// observeSlices reads js's Slices from the cache (nil when the manager
// forms no slices or js asks for none).
func (r *Reconciler) observeSlices(ctx context.Context, js *api.JobSet) (*policy.SliceObservation, error) {
	if !r.slicing() || !dynamic(js) {
		return nil, nil
	}
	var list slicev1beta1.SliceList
	if err := r.Client.List(ctx, &list, client.MatchingLabels{slicev1beta1.JobSetUIDLabel: string(js.UID)}); err != nil {
		return nil, fmt.Errorf("list the JobSet's slices: %w", err)
	}
	so := &policy.SliceObservation{Mine: make(map[string]policy.SliceFact, len(list.Items))}
	for i := range list.Items {
		s := &list.Items[i]
		fact := policy.SliceFact{Name: s.Name, Partitions: s.Spec.PartitionIDs, Quarters: slicing.QuartersOf(s),
			ForKueue: s.Annotations[slicev1beta1.WorkloadAnnotation] != ""}
		fact.Ready, fact.Failed, fact.Message = slicing.StateOf(s)
		so.Mine[s.Labels[slicev1beta1.JobNameLabel]] = fact
	}
	return so, nil
}

// observeCubes reads the cluster's sub-blocks for a decision that forms
// Slices, under the placing lock: each cube's block and position (node
// labels), its health and holder (the domain cache, by partition id), and
// whether a Slice, one in the cache or one reserved by an earlier
// decision, already takes it.
func (r *Reconciler) observeCubes(ctx context.Context, js *api.JobSet) ([]slicing.Cube, error) {
	if r.domainsSynced != nil && !r.domainsSynced() {
		return nil, errDomainsNotSynced
	}
	var all slicev1beta1.SliceList
	if err := r.Client.List(ctx, &all); err != nil {
		return nil, fmt.Errorf("list slices: %w", err)
	}
	used, quarters := map[string]bool{}, map[string]uint8{}
	take := func(cubes []string, q uint8) {
		for _, id := range cubes {
			if q == 0 || len(cubes) > 1 {
				used[id] = true
			} else {
				quarters[id] |= q
			}
		}
	}
	for _, s := range all.Items {
		take(s.Spec.PartitionIDs, slicing.QuartersOf(&s))
	}
	now := r.Clock.Now()
	r.reservedMu.Lock()
	for name, res := range r.reserved {
		if now.Sub(res.at) > reservationTTL {
			delete(r.reserved, name)
			continue
		}
		take(res.cubes, res.quarters)
	}
	r.reservedMu.Unlock()
	me := js.Namespace + "/" + js.Name
	snap, _ := r.Domains.Snapshot(gke.PartitionCubeLabel, me, js.UID)
	cubes := make([]slicing.Cube, 0, len(snap.Domains))
	for _, d := range snap.Domains {
		labels := d.Nodes[0].Labels
		pos, err := slicing.ParsePos(labels.Value(slicev1beta1.PartitionPositionLabel))
		if err != nil {
			continue // no known place in its block: it cannot be stitched
		}
		// A cube cut into sub-slices has their pods on it: its other
		// quarters are still free.
		free := d.Healthy() && !used[d.Value] && (d.Holder == "" || d.Holder == me || quarters[d.Value] != 0)
		cubes = append(cubes, slicing.Cube{ID: d.Value, Block: labels.Value(gke.TopologyBlockLabel), Pos: pos, Free: free, Quarters: quarters[d.Value]})
	}
	return cubes, nil
}

// reserve remembers the cubes of the Slices a plan forms (under the
// placing lock, before they are created), so that the next decision does
// not give them away while the cache has not shown them yet.
func (r *Reconciler) reserve(p *policy.Plan) {
	r.reservedMu.Lock()
	defer r.reservedMu.Unlock()
	if r.reserved == nil {
		r.reserved = map[string]reservation{}
	}
	for _, s := range p.CreateSlices {
		r.reserved[s.Name] = reservation{cubes: s.Spec.PartitionIDs, quarters: slicing.QuartersOf(s), at: r.Clock.Now()}
	}
}

// actSlices lets the plan's Slices go and forms the new ones.
func (r *Reconciler) actSlices(ctx context.Context, js *api.JobSet, p *policy.Plan) error {
	for _, name := range p.DeleteSlices {
		if err := client.IgnoreNotFound(r.Client.Delete(ctx, &slicev1beta1.Slice{ObjectMeta: metav1.ObjectMeta{Name: name}})); err != nil {
			return fmt.Errorf("delete slice %s: %w", name, err)
		}
	}
	for _, s := range p.CreateSlices {
		if err := r.Client.Create(ctx, s); client.IgnoreAlreadyExists(err) != nil {
			r.seen(s.Name)
			r.event(js, "Warning", "SliceCreationFailed", fmt.Sprintf("slice %s: %v", s.Name, err))
			return fmt.Errorf("create slice %s: %w", s.Name, err)
		}
	}
	return nil
}

// seen drops the reservation of a Slice the cache now has (or that
// was not created): from then on the Slice itself, or nothing, holds its cubes.
func (r *Reconciler) seen(name string) {
	r.reservedMu.Lock()
	defer r.reservedMu.Unlock()
	delete(r.reserved, name)
}

// feedSlices drops a reservation as soon as the cache shows its Slice: a
// Slice created and deleted between two decisions must not keep its
// cubes reserved.
func (r *Reconciler) feedSlices(mgr ctrl.Manager) error {
	inf, err := mgr.GetCache().GetInformer(context.Background(), &slicev1beta1.Slice{})
	if err != nil {
		return fmt.Errorf("slices: informer: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{AddFunc: func(o any) {
		if s, ok := o.(*slicev1beta1.Slice); ok {
			r.seen(s.Name)
		}
	}})
	return err
}

// releaseSlicesOf deletes the Slices of a JobSet that is gone.
func (r *Reconciler) releaseSlicesOf(ctx context.Context, key types.NamespacedName) error {
	if !r.slicing() {
		return nil
	}
	return r.Client.DeleteAllOf(ctx, &slicev1beta1.Slice{}, client.MatchingLabels{
		slicev1beta1.JobSetNamespaceLabel: key.Namespace, slicev1beta1.JobSetNameLabel: key.Name})
}

// sliceOwner enqueues the JobSet a Slice was formed for.
func sliceOwner() handler.EventHandler {
	return handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		ns, name := o.GetLabels()[slicev1beta1.JobSetNamespaceLabel], o.GetLabels()[slicev1beta1.JobSetNameLabel]
		if ns == "" || name == "" {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
	})
}
