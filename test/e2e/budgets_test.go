package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/test/framework"
)

// TestRestartBudgets (RestartBudgets gate): the seed's four slices plus a
// data loader that fails ten seconds into every attempt, with a budget of
// one restart of its own. A maintenance on a slice first restarts the
// JobSet for the infrastructure, which counts apart; then the loader's
// first failure spends its budget and its second fails the JobSet, with a
// message naming it, while the JobSet's own maxRestarts (10) is far off.
func TestRestartBudgets(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t, "--feature-gates=RestartBudgets=true", "--repair-delay=5s")
	ctx := context.Background()
	js := seedCopy(t, "multislice-job", "")
	js.Spec.FailurePolicy.MaxRestarts = 10
	loader := api.ReplicatedJob{Name: "loader", Replicas: 1, FailurePolicy: &api.ReplicatedJobFailurePolicy{MaxRestarts: 1}}
	loader.Template.Spec.BackoffLimit = ptr.To(int32(0))
	loader.Template.Spec.Template.Annotations = map[string]string{"multislice.dev/simulate-run": "10s", "multislice.dev/simulate-exit-code": "1"}
	loader.Template.Spec.Template.Spec = corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
		Containers: []corev1.Container{{Name: "loader", Image: "busybox"}}}
	// The loader is no slice: only the slices are placed one per pool.
	delete(js.Annotations, api.ExclusiveKey)
	js.Spec.ReplicatedJobs[0].Template.Annotations = map[string]string{api.ExclusiveKey: gke.NodePoolLabel}
	js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, loader)
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	waitPodsRunning(t, c, "multislice-job", 9, 60*time.Second) // 4 slices x 2 and the loader
	c.MustRun("chaos", "maintenance", "--nodepool", poolOfSlice(t, ctx, c, 1))
	framework.Eventually(t, 90*time.Second, func(ctx context.Context) (bool, string) {
		got := getJobSet(t, c, "multislice-job")
		cond := condition(got, string(api.JobSetFailed))
		return cond != nil && cond.Status == metav1.ConditionTrue,
			fmt.Sprintf("restarts %d (counted %d, infrastructure %d), conditions %+v", got.Status.Restarts,
				got.Status.RestartsCountTowardsMax, got.Status.InfrastructureRestarts, got.Status.Conditions)
	})
	got := getJobSet(t, c, "multislice-job")
	cond := condition(got, string(api.JobSetFailed))
	if cond.Reason != api.ReachedReplicatedJobMaxRestartsReason || !strings.Contains(cond.Message, "replicated job loader") {
		t.Errorf("Failed %s: %q, want %s naming the replicated job loader", cond.Reason, cond.Message, api.ReachedReplicatedJobMaxRestartsReason)
	}
	s := got.Status
	var loaderCount int32
	for _, r := range s.ReplicatedJobsStatus {
		if r.Name == "loader" {
			loaderCount = r.RestartsCountTowardsMax
		}
	}
	if s.Restarts != 2 || s.InfrastructureRestarts != 1 || s.RestartsCountTowardsMax != 1 || loaderCount != 1 {
		t.Errorf("restarts %d, infrastructure %d, counted %d, the loader's %d; want 2, 1, 1, 1 (the maintenance counted apart)",
			s.Restarts, s.InfrastructureRestarts, s.RestartsCountTowardsMax, loaderCount)
	}
	if out := c.MustRun("status", "multislice-job"); !strings.Contains(out, "infrastructure 1") {
		t.Errorf("multislice status does not show the infrastructure's restarts:\n%s", out)
	}
}
