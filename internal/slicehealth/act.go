package slicehealth

import (
	"context"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
)

// expectedHosts: the TPU topology's hosts when the nodes say it; else, for
// a Job whose pods request TPUs, its parallelism (one pod per TPU host);
// else 0, unknown: CPU pods may share a node, so a one-node pool running a
// Job of three pods is whole.
func expectedHosts(nodes []corev1.Node, j *batchv1.Job) int {
	if len(nodes) > 0 {
		if hosts, ok := gke.SliceHosts(&nodes[0]); ok {
			return hosts
		}
	}
	if gke.RequestsTPU(j.Spec.Template.Spec) {
		return int(ptr.Deref(j.Spec.Parallelism, 1))
	}
	return 0
}

// fail sets the Job's FailureTarget, as the Job controller does on a pod
// failure, with a reason and message that name the slice and the cause.
// The Job controller then terminates the Job's pods and adds Failed with
// the same reason: writing Failed here would end the Job while its pods
// on the slice's healthy hosts kept running, squatting the pool.
func (r *Reconciler) fail(ctx context.Context, j *batchv1.Job, msg string, now time.Time) error {
	j = j.DeepCopy()
	t := metav1.NewTime(now)
	j.Status.Conditions = append(j.Status.Conditions,
		batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: Reason, Message: msg, LastTransitionTime: t, LastProbeTime: t})
	return r.Client.Status().Update(ctx, j)
}

// releaseStrandedPods force-deletes the Job's pods on hosts that are gone
// or NotReady: no kubelet will ever confirm their end, and the restart
// must not wait for the pod garbage collector (tens of seconds), as a
// node marked out-of-service would not.
func (r *Reconciler) releaseStrandedPods(ctx context.Context, j *batchv1.Job, nodes []corev1.Node) error {
	healthy := map[string]bool{}
	for i := range nodes {
		if gke.NodeReady(&nodes[i]) {
			healthy[nodes[i].Name] = true
		}
	}
	var pods corev1.PodList
	if err := r.Client.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{api.LegacyJobNameLabel: j.Name}); err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || healthy[p.Spec.NodeName] || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue // not stranded: never placed, on a live host, or already over
		}
		if err := r.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
