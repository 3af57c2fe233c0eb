package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// TestGangPerSlice: with spec.scheduling's group per Job (KEP-969),
// placement still gives each slice its pool, and kube-scheduler binds a
// slice's pods together or not at all. The seed so configured runs its 8
// pods, each in its slice's PodGroup; a slice whose pool has a host it
// cannot use binds no pod (without the gang one would bind and wait) and
// runs whole once the host is back.
func TestGangPerSlice(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	c, _ := framework.StartCluster(t, "--feature-gates=JobSetWorkloadAwareSchedulingAPI=true")
	ctx := context.Background()
	perSlice := &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{{TargetReplicatedJobs: []string{"slice"}, Job: &api.JobScheduling{}}}}

	seed := seedCopy(t, "gang", "")
	seed.Spec.Scheduling = perSlice
	if err := c.Objects.Create(ctx, seed); err != nil {
		t.Fatal(err)
	}
	pods := runningOnDistinctPools(t, c, "gang", 0)
	groups := map[string]int{}
	for _, p := range pods {
		if g := p.Spec.SchedulingGroup; g == nil || g.PodGroupName == nil {
			t.Fatalf("pod %s is in no PodGroup", p.Name)
		} else {
			groups[*g.PodGroupName]++
		}
	}
	for name, n := range groups {
		var pg schedulingv1beta1.PodGroup
		if err := c.Objects.Get(ctx, types.NamespacedName{Namespace: "default", Name: name}, &pg); err != nil || n != 2 || pg.Spec.SchedulingPolicy.Gang.MinCount != 2 {
			t.Errorf("PodGroup %s: %d pods, %v", name, n, err)
		}
	}
	if len(groups) != 4 {
		t.Errorf("%d PodGroups for 4 slices: %v", len(groups), groups)
	}
	if err := c.Objects.Delete(ctx, seed, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		t.Fatal(err)
	}

	// One slice of two hosts, on a pool with one host cordoned.
	pool := "multislice-group-1-np-4"
	cordon := func(on bool) {
		framework.Eventually(t, 10*time.Second, func(ctx context.Context) (bool, string) {
			n, err := c.Client.CoreV1().Nodes().Get(ctx, fleet.NodeName(pool, 1), metav1.GetOptions{})
			if err == nil {
				n.Spec.Unschedulable = on
				_, err = c.Client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
			}
			return err == nil, fmt.Sprint(err)
		})
	}
	cordon(true)
	js := testobj.NewJobSet("default", "held").ReplicatedJob("slice", 1, 2).TPU("tpu-v4-podslice", "2x2x2", "4").Obj()
	js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.NodeSelector[gke.NodePoolLabel] = pool
	js.Spec.Scheduling = perSlice
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	bound := func(ctx context.Context) (int, int, error) {
		l, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=held"})
		if err != nil {
			return 0, 0, err
		}
		n := 0
		for _, p := range l.Items {
			if p.Spec.NodeName != "" {
				n++
			}
		}
		return len(l.Items), n, nil
	}
	framework.Eventually(t, 30*time.Second, func(ctx context.Context) (bool, string) {
		pods, _, err := bound(ctx)
		return err == nil && pods == 2, fmt.Sprintf("%d pods created (%v)", pods, err)
	})
	time.Sleep(5 * time.Second) // time enough for the scheduler to bind one, were there no gang
	if _, n, err := bound(ctx); err != nil || n != 0 {
		t.Fatalf("%d pods of the gang bound with a host cordoned (%v), want none", n, err)
	}
	cordon(false)
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		l, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=held"})
		if err != nil {
			return false, err.Error()
		}
		running := 0
		for _, p := range l.Items {
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		return running == 2, fmt.Sprintf("%d of 2 pods Running once the host is back", running)
	})
}
