package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/kueue"
	"github.com/multislice/multislice/test/framework"
)

// TestKueueRestarts (kueue #14811): a queued seed JobSet under Kueue's
// waitForPodsReady with a short recovery timeout restarts ten times in a
// row (a pod killed on a different slice each time). After every restart
// its quota is accounted: the Workload admitted, its 8 pods Running at the
// new attempt and the ClusterQueue reserving exactly it; an eviction on
// the way (the restart outlasting the recovery timeout) must end with the
// quota released and the JobSet admitted and running again, never with a
// suspended JobSet whose Workload still holds quota.
func TestKueueRestarts(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t, "--kueue", "--kueue-pods-ready-timeout=20s", "--kueue-pods-ready-recovery-timeout=2s")
	c.MustRun("kueue", "init")
	ctx := context.Background()
	dyn := dynamic.NewForConfigOrDie(c.Config)
	js := queuedSeed(t, "multislice-job", "")
	js.Spec.FailurePolicy.MaxRestarts = 20
	// Old pods take 5 s to stop: every restart outlasts the recovery
	// timeout, the collision of #14811 (Kueue evicts mid-restart).
	pod := &js.Spec.ReplicatedJobs[0].Template.Spec.Template
	pod.Annotations = map[string]string{"multislice.dev/simulate-graceful-stop": "true"}
	pod.Spec.TerminationGracePeriodSeconds = ptr.To(int64(5))
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, c, 0, anyName)
	evictions := 0
	for i := 1; i <= 10; i++ {
		began := time.Now()
		c.MustRun("chaos", "fail-pod", "--nodepool", poolOfSlice(t, ctx, c, i%4))
		evicted := false
		framework.Eventually(t, 120*time.Second, func(ctx context.Context) (bool, string) {
			got := getJobSet(t, c, "multislice-job")
			w := workloadOf(t, dyn, "multislice-job")
			suspended := ptr.Deref(got.Spec.Suspend, false)
			if workloadCondition(w, "Evicted")["status"] == "True" {
				evicted = true
			}
			reserving := clusterQueueReserving(t, dyn)
			if suspended && workloadCondition(w, "QuotaReserved")["status"] == "True" && time.Since(began) > 60*time.Second {
				t.Fatalf("restart %d: the JobSet is suspended while its Workload still holds quota (kueue #14811): %v", i, w.Object["status"])
			}
			// PodsReady too: until Kueue has seen the pods ready, it may still
			// evict for this restart, and the next fault would land in that
			// eviction, which removes the failed pod with the rest (CI, once:
			// "restart 10: restarts 9" for 2 minutes).
			podsReady := workloadCondition(w, "PodsReady")["status"] == "True"
			ok := int(got.Status.Restarts) >= i && !suspended && admitted(w) && podsReady && len(runningAt(t, c, "multislice-job", int(got.Status.Restarts))) == 8 && reserving == 1
			return ok, fmt.Sprintf("restart %d: restarts %d, suspended %v, admitted %v, PodsReady %v, %d pods Running, ClusterQueue reserving %d",
				i, got.Status.Restarts, suspended, admitted(w), podsReady, runningPods(t, c, "multislice-job"), reserving)
		})
		if evicted {
			evictions++
		}
		t.Logf("restart %d: admitted and 8/8 Running after %.1fs (evicted on the way: %v)", i, time.Since(began).Seconds(), evicted)
	}
	t.Logf("10 restarts under waitForPodsReady (recovery 2s): %d evicted on the way, quota accounted after each", evictions)
}

// runningAt are the JobSet's pods Running at one attempt.
func runningAt(t *testing.T, c *framework.Cluster, jobset string, attempt int) []string {
	var out []string
	for _, p := range jobsetPods(t, c, jobset) {
		if p.Status.Phase == "Running" && p.DeletionTimestamp == nil && p.Labels[api.RestartsKey] == fmt.Sprint(attempt) {
			out = append(out, p.Name)
		}
	}
	return out
}

// clusterQueueReserving is how many Workloads the ClusterQueue reserves quota for.
func clusterQueueReserving(t *testing.T, dyn dynamic.Interface) int64 {
	cq, err := dyn.Resource(clusterQueuesGVR).Get(context.Background(), kueue.ClusterQueueName, metav1.GetOptions{})
	if err != nil {
		return -1
	}
	n, _, _ := unstructured.NestedInt64(cq.Object, "status", "reservingWorkloads")
	return n
}
