package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// TestSliceHealth: slice health fails a pinned child Job when a Node of
// its domain goes NotReady past the grace (looked at again exactly when the
// grace runs out), is deleted, or was cordoned before the Job was pinned;
// a heartbeat changes nothing.
func TestSliceHealth(t *testing.T) {
	const grace = 2 * time.Second
	env := framework.StartEnvWith(t, func(o *manager.Options) { o.SliceGrace = grace })
	c, ctx := env.Client, context.Background()
	ns := env.Namespace(t)
	// TPU hosts of v4 2x2x2 slices (2 hosts each), unless cpu.
	node := func(name, pool string, cordoned bool) *corev1.Node {
		labels := map[string]string{"pool": pool, gke.AcceleratorLabel: "tpu-v4-podslice", gke.TopologyLabel: "2x2x2"}
		if strings.HasPrefix(pool, "cpu") {
			labels = map[string]string{"pool": pool}
		}
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Unschedulable: cordoned}}
		if err := c.Create(ctx, n); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = c.Delete(context.Background(), n) })
		setReady(t, c, n, corev1.ConditionTrue)
		return n
	}
	job := func(name, pool string, pods int32) *batchv1.Job {
		j := testobj.NewJob(ns, name).Label(api.JobSetNameKey, "js").Parallelism(pods).
			PodSpec(corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "x"}}}).
			Edit(func(j *batchv1.Job) { j.Annotations[api.ExclusiveKey] = "pool" }).PinnedTo("pool", pool).Obj()
		if err := c.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		return j
	}
	failedWith := func(j *batchv1.Job, cause string, within time.Duration) time.Duration {
		t.Helper()
		began := time.Now()
		framework.Eventually(t, within, func(ctx context.Context) (bool, string) {
			if err := c.Get(ctx, client.ObjectKeyFromObject(j), j); err != nil {
				return false, err.Error()
			}
			for _, cond := range j.Status.Conditions {
				if cond.Type == batchv1.JobFailureTarget && cond.Reason == "SliceUnhealthy" {
					return strings.Contains(cond.Message, cause), cond.Message
				}
			}
			return false, fmt.Sprintf("job %s not failed: %+v", j.Name, j.Status.Conditions)
		})
		return time.Since(began)
	}

	a0 := node("a-0", "np-a", false)
	node("a-1", "np-a", false)
	node("b-0", "np-b", false)
	node("b-1", "np-b", false)
	node("c-0", "np-c", true)
	node("c-1", "np-c", false)
	d0 := node("d-0", "np-d", false)
	node("d-1", "np-d", false)
	node("cpu-0", "cpu-pool", false)
	jobA, jobB, jobD := job("a", "np-a", 2), job("b", "np-b", 2), job("d", "np-d", 2)
	// Three CPU pods on a one-node pool: the pool is whole (pods share nodes).
	jobCPU := job("cpu", "cpu-pool", 3)

	// Cordoned before the Job was pinned there: failed when it is pinned.
	failedWith(job("c", "np-c", 2), "host c-0 is cordoned for repair", 10*time.Second)

	// NotReady: failed once the grace has run out, not before.
	setReady(t, c, a0, corev1.ConditionFalse)
	took := failedWith(jobA, "host a-0 is NotReady", 10*time.Second)
	t.Logf("a host NotReady -> its Job failed after %s (grace %s)", took.Round(10*time.Millisecond), grace)
	if took < grace/2 || took > grace+2*time.Second {
		t.Errorf("NotReady host: Job failed after %s, want just after the %s grace", took, grace)
	}

	// A host deleted: failed at once.
	if err := c.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "b-0"}}); err != nil {
		t.Fatal(err)
	}
	took = failedWith(jobB, "1 of its 2 hosts are gone", 5*time.Second)
	t.Logf("a host deleted -> its Job failed after %s", took.Round(10*time.Millisecond))

	// A heartbeat: nothing happens.
	setReady(t, c, d0, corev1.ConditionTrue)
	time.Sleep(grace + time.Second)
	if err := c.Get(ctx, client.ObjectKeyFromObject(jobD), jobD); err != nil {
		t.Fatal(err)
	}
	if len(jobD.Status.Conditions) != 0 {
		t.Errorf("a heartbeat failed job d: %+v", jobD.Status.Conditions)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(jobCPU), jobCPU); err != nil {
		t.Fatal(err)
	}
	if len(jobCPU.Status.Conditions) != 0 {
		t.Errorf("three CPU pods on a one-node pool: failed %+v", jobCPU.Status.Conditions)
	}
}

// setReady writes the node's Ready condition (a heartbeat when unchanged).
func setReady(t *testing.T, c client.Client, n *corev1.Node, status corev1.ConditionStatus) {
	t.Helper()
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(n), n); err != nil {
		t.Fatal(err)
	}
	now := metav1.Now()
	transition := now
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady && cond.Status == status {
			transition = cond.LastTransitionTime
		}
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: now, LastTransitionTime: transition}}
	if err := c.Status().Update(context.Background(), n); err != nil {
		t.Fatal(err)
	}
}
