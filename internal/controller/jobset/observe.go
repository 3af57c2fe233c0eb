package jobset

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/controller/jobset/policy"
	"github.com/multislice/multislice/internal/placement"
)

// observe reads everything a decision needs, from the manager's caches
// and the controller's own memory (the last status write, a refusal).
func (r *Reconciler) observe(ctx context.Context, js *api.JobSet) (policy.Observed, error) {
	// The Jobs are the cache's own objects, not copies (copying every
	// child Job was most of a reconcile's CPU): nothing may change them.
	// Decide only reads them; whatever the plan updates is built fresh or
	// copied first (resumed, Suspend).
	var list batchv1.JobList
	if err := r.Client.List(ctx, &list, client.InNamespace(js.Namespace), client.MatchingFields{OwnerUIDIndex: string(js.UID)},
		client.UnsafeDisableDeepCopy); err != nil {
		return policy.Observed{}, fmt.Errorf("list child jobs: %w", err)
	}
	jobs := make([]*batchv1.Job, len(list.Items))
	for i := range list.Items {
		jobs[i] = &list.Items[i]
		r.created.forget(createdJob{client.ObjectKeyFromObject(jobs[i]), js.UID})
	}
	key := client.ObjectKeyFromObject(js)
	o := policy.Observed{JobSet: js, Jobs: jobs, Now: r.Clock.Now(), Gates: r.Gates, AgentTimeout: r.AgentTimeout,
		CountsInterval: r.CountsInterval, Places: r.Domains != nil, JobsRefused: r.refusedJobs(js)}
	if last, ok := r.lastWrite.Load(key); ok {
		o.LastStatusWrite = last.(time.Time)
	}
	if !ptr.Deref(js.Spec.Suspend, false) {
		refusal, err := findPodRefusal(ctx, r.Events, jobs, o.Now)
		if err != nil {
			return o, err
		}
		o.PodsRefused = refusal
	}
	if r.inPlace != nil && policy.InPlace(js) {
		// Pods going, not started, or of a recreated attempt have no agent to wait for.
		o.Pods = r.inPlace.pods(key, strconv.Itoa(int(js.Status.Restarts)))
	}
	if r.Gates.WorkloadAwareScheduling && js.Spec.Scheduling != nil {
		var err error
		if o.Scheduling, err = r.observeScheduling(ctx, js); err != nil {
			return o, err
		}
	}
	var err error
	if o.Slices, err = r.observeSlices(ctx, js); err != nil {
		return o, err
	}
	if name, ok := policy.ServiceName(js); ok {
		var svc corev1.Service
		err := r.Client.Get(ctx, types.NamespacedName{Namespace: js.Namespace, Name: name}, &svc)
		if err != nil && !apierrors.IsNotFound(err) {
			return o, err
		}
		o.ServiceExists = err == nil
	}
	return o, nil
}

// observePlacement reads what placing js by its keys needs: each key's
// domains from the domain cache, its pins, and its priority.
func (r *Reconciler) observePlacement(ctx context.Context, js *api.JobSet, keys []string) (*policy.Placement, error) {
	if r.domainsSynced != nil && !r.domainsSynced() {
		return nil, errDomainsNotSynced
	}
	prio, err := priority(ctx, r.Client, js)
	if err != nil {
		return nil, err
	}
	in := &policy.Placement{Keys: make(map[string]policy.KeyPlacement, len(keys)), Priority: prio, GroupLabel: r.GroupLabel, SizeLabel: r.SizeLabel,
		HotSwap: r.HotSwap}
	for _, key := range keys {
		snap, pins := r.Domains.Snapshot(key, js.Namespace+"/"+js.Name, js.UID)
		in.Keys[key] = policy.KeyPlacement{Snapshot: snap, Pins: pins}
	}
	return in, nil
}

// observeHolders reads, from the cache, what hot-swap needs of each
// JobSet holding a domain of in's snapshots. A holder gone meanwhile is
// left out: its domains are freeing, and the next look sees them free.
func (r *Reconciler) observeHolders(ctx context.Context, in *policy.Placement) (map[string]placement.Holder, error) {
	out := map[string]placement.Holder{}
	for _, kp := range in.Keys {
		names := make([]string, 0, len(kp.Snapshot.Held)+len(kp.Snapshot.Domains))
		for js := range kp.Snapshot.Held {
			names = append(names, js)
		}
		for _, d := range kp.Snapshot.Domains {
			names = append(names, d.Holder)
		}
		for _, name := range names {
			ns, n, ok := strings.Cut(name, "/")
			if _, seen := out[name]; seen || !ok || strings.Contains(name, " ") {
				continue // a pod's workload, or a JobSet's own Job: never a victim
			}
			var js api.JobSet
			if err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: n}, &js); err != nil {
				if apierrors.IsNotFound(err) {
					continue
				}
				return nil, err
			}
			prio, err := priority(ctx, r.Client, &js)
			if err != nil {
				return nil, err
			}
			out[name] = policy.HolderOf(&js, prio)
		}
	}
	return out, nil
}

// markVictims tells each JobSet whose pools a hot-swap takes (policy
// hotswap.go): the mark on it, not memory, makes it restart and wait.
func (r *Reconciler) markVictims(ctx context.Context, js *api.JobSet, victims []policy.Victim) error {
	by := js.Namespace + "/" + js.Name
	for _, v := range victims {
		ns, name, _ := strings.Cut(v.JobSet, "/")
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			api.HotSwappedByAnnotation: by, api.HotSwappedAttemptAnnotation: strconv.Itoa(int(v.Attempt))}}})
		if err != nil {
			return err
		}
		victim := &api.JobSet{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		if err := r.Client.Patch(ctx, victim, client.RawPatch(types.MergePatchType, patch)); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("hot-swap: mark %s: %w", v.JobSet, err)
		}
	}
	return nil
}

// priority is the JobSet's rank in the queue (placement.Priority), its
// PriorityClass read from the cache.
func priority(ctx context.Context, c client.Reader, js *api.JobSet) (int32, error) {
	var getErr error
	p := placement.Priority(js, func(name string) (int32, bool) {
		var pc schedulingv1.PriorityClass
		if err := c.Get(ctx, types.NamespacedName{Name: name}, &pc); err != nil {
			getErr = client.IgnoreNotFound(err)
			return 0, false
		}
		return pc.Value, true
	})
	return p, getErr
}

// refusedEntry is a refusal of one JobSet's Jobs, by the JobSet's UID: a
// JobSet created again under the same name starts afresh.
type refusedEntry struct {
	uid     types.UID
	refusal policy.JobRefusal
}

// refusedJobs is the refusal of js's Jobs the next decision observes.
func (r *Reconciler) refusedJobs(js *api.JobSet) *policy.JobRefusal {
	v, ok := r.refused.Load(client.ObjectKeyFromObject(js))
	if !ok || v.(refusedEntry).uid != js.UID {
		return nil
	}
	refusal := v.(refusedEntry).refusal
	return &refusal
}

// noteCreation remembers how creating the plan's Jobs went: a refusal
// that retrying the same Jobs cannot cure is counted for the next
// decision; Jobs created forget it.
func (r *Reconciler) noteCreation(js *api.JobSet, created int, err error) {
	key := client.ObjectKeyFromObject(js)
	why := refusal(err)
	switch {
	case err == nil && created > 0:
		r.refused.Delete(key)
	case why != "":
		times := 1
		if last := r.refusedJobs(js); last != nil {
			times = last.Times + 1
		}
		r.refused.Store(key, refusedEntry{uid: js.UID, refusal: policy.JobRefusal{Message: why, At: r.Clock.Now(), Times: times}})
	}
}

// refusal returns the API server's refusal among the errors of creating
// child Jobs, when it is one that retrying the same Job cannot cure
// (invalid, forbidden, bad request); "" for anything transient.
func refusal(err error) string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return ""
	}
	if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err) {
		return status.Status().Message
	}
	return ""
}
