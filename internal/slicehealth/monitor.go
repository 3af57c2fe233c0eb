package slicehealth

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/metrics"
)

// Reason is the reason of the Failed condition the Monitor writes on a
// child Job whose slice went bad.
const Reason = "SliceUnhealthy"

// Monitor checks, every Interval, the slice of every running child Job that
// placement pinned to a domain, and fails the Job when its slice is unhealthy.
type Monitor struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Grace is how long a host may be NotReady before its slice counts as failed.
	Grace    time.Duration
	Interval time.Duration
}

// Start runs the monitor until ctx ends (a manager Runnable).
func (m *Monitor) Start(ctx context.Context) error {
	tick := time.NewTicker(m.Interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := m.check(ctx); err != nil {
				ctrl.Log.WithName("slicehealth").Error(err, "check slices")
			}
		}
	}
}

// NeedLeaderElection: only the leader fails Jobs.
func (m *Monitor) NeedLeaderElection() bool { return true }

func (m *Monitor) check(ctx context.Context) error {
	var jobs batchv1.JobList
	// Read-only lists of cached objects, every half second: no deep copies.
	if err := m.Client.List(ctx, &jobs, client.HasLabels{api.JobSetNameKey}, client.UnsafeDisableDeepCopy); err != nil {
		return err
	}
	domains := map[string]map[string][]corev1.Node{} // key -> value -> nodes
	now := time.Now()
	for i := range jobs.Items {
		j := &jobs.Items[i]
		domain, key := j.Annotations[api.AssignedDomainAnnotation], j.Annotations[api.ExclusiveKey]
		if domain == "" || key == "" || j.DeletionTimestamp != nil || ptr.Deref(j.Spec.Suspend, false) || api.JobOutcome(j) != "" {
			continue
		}
		if domains[key] == nil {
			byValue, err := m.nodesBy(ctx, key)
			if err != nil {
				return err
			}
			domains[key] = byValue
		}
		nodes := domains[key][domain]
		bad, cause := Diagnose(nodes, expectedHosts(nodes, j), m.Grace, now)
		if !bad {
			continue
		}
		msg := fmt.Sprintf("slice %s on %s=%s is unhealthy: %s", j.Name, key, domain, cause)
		// The event first: it is stamped with the time the fault was seen,
		// before the restart it causes (a JobSet's timeline reads in order).
		if m.Recorder != nil {
			js := &api.JobSet{ObjectMeta: metav1.ObjectMeta{Name: j.Labels[api.JobSetNameKey], Namespace: j.Namespace,
				UID: types.UID(j.Labels[api.JobSetUIDKey])}}
			js.SetGroupVersionKind(api.GroupVersion.WithKind("JobSet"))
			m.Recorder.Eventf(js, j, corev1.EventTypeWarning, Reason, "FailSlice", "%s", msg)
		}
		if err := m.fail(ctx, j, msg, now); err != nil {
			return fmt.Errorf("fail job %s: %w", j.Name, err)
		}
		if err := m.releaseStrandedPods(ctx, j, nodes); err != nil {
			return fmt.Errorf("release pods of job %s: %w", j.Name, err)
		}
		metrics.ObserveSliceFailure(j.Namespace, cause)
	}
	return nil
}

func (m *Monitor) nodesBy(ctx context.Context, key string) (map[string][]corev1.Node, error) {
	var nodes corev1.NodeList
	if err := m.Client.List(ctx, &nodes, client.HasLabels{key}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := map[string][]corev1.Node{}
	for _, n := range nodes.Items {
		out[n.Labels[key]] = append(out[n.Labels[key]], n)
	}
	return out, nil
}

// expectedHosts: the TPU topology's hosts when the nodes say it, else the
// Job's parallelism (one pod per host).
func expectedHosts(nodes []corev1.Node, j *batchv1.Job) int {
	if len(nodes) > 0 {
		if hosts, ok := gke.SliceHosts(&nodes[0]); ok {
			return hosts
		}
	}
	return int(ptr.Deref(j.Spec.Parallelism, 1))
}

// fail marks the Job Failed, as the Job controller would after a pod
// failure, but with a reason and message that name the slice and the cause.
func (m *Monitor) fail(ctx context.Context, j *batchv1.Job, msg string, now time.Time) error {
	j = j.DeepCopy()
	t := metav1.NewTime(now)
	if j.Status.StartTime == nil {
		j.Status.StartTime = &t
	}
	j.Status.Active, j.Status.Ready, j.Status.Terminating = 0, ptr.To(int32(0)), nil
	j.Status.UncountedTerminatedPods = nil
	j.Status.Failed++
	j.Status.Conditions = append(j.Status.Conditions,
		batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: Reason, Message: msg, LastTransitionTime: t, LastProbeTime: t},
		batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: Reason, Message: msg, LastTransitionTime: t, LastProbeTime: t},
	)
	return m.Client.Status().Update(ctx, j)
}

// releaseStrandedPods force-deletes the Job's pods on hosts that are gone
// or NotReady: no kubelet will ever confirm their end, and the restart
// must not wait for the pod garbage collector (tens of seconds), as a
// node marked out-of-service would not.
func (m *Monitor) releaseStrandedPods(ctx context.Context, j *batchv1.Job, nodes []corev1.Node) error {
	healthy := map[string]bool{}
	for i := range nodes {
		if gke.NodeReady(&nodes[i]) {
			healthy[nodes[i].Name] = true
		}
	}
	var pods corev1.PodList
	if err := m.Client.List(ctx, &pods, client.InNamespace(j.Namespace), client.MatchingLabels{"job-name": j.Name}); err != nil {
		return err
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || healthy[p.Spec.NodeName] {
			continue
		}
		if err := m.Client.Delete(ctx, p, client.GracePeriodSeconds(0)); client.IgnoreNotFound(err) != nil {
			return err
		}
	}
	return nil
}
