package e2e

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/naming"
	jobsetwebhook "github.com/multislice/multislice/internal/webhook/jobset"
	"github.com/multislice/multislice/test/framework"
)

// TestTakeOverFromUpstream: a cluster where upstream's controller runs the
// seed JobSet (its CRD, Jobs, pods, Service and status, in upstream's
// shapes: upstream's manager module is not on this machine's proxy, so the
// objects are written as upstream's controller writes them). Upstream is
// gone; ours is installed from install.yaml. The running JobSet keeps
// running: no Job or pod recreated, status kept; another exclusive JobSet
// does not land on its pools; the next failure is handled by ours.
func TestTakeOverFromUpstream(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	kubectl := requireKubectl(t)
	c, _ := framework.StartCluster(t, "--no-manager")
	ctx := context.Background()
	if err := install.CRD(ctx, c.Config); err != nil {
		t.Fatal(err)
	}
	js := upstreamRunning(t, c, "upstream-run")
	before := podUIDs(t, c, "upstream-run")

	if out, err := kubectl(c, "apply", "--server-side", "-f", installYAML(t)); err != nil {
		t.Fatalf("kubectl apply --server-side -f install.yaml over upstream's objects: %v\n%s", err, out)
	}
	startHostManager(t, c, shippedServiceAccount(t, c), "ours")

	// Another exclusive JobSet must not take the adopted JobSet's pools.
	other := seedCopy(t, "newcomer", "")
	other.Spec.ReplicatedJobs[0].Replicas = 1
	if err := c.Objects.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Second) // ours reconciles everything it now owns
	if after := podUIDs(t, c, "upstream-run"); fmt.Sprint(after) != fmt.Sprint(before) {
		t.Errorf("pods changed under the new manager:\nbefore %v\nafter  %v", before, after)
	}
	var got api.JobSet
	if err := c.Objects.Get(ctx, client.ObjectKeyFromObject(js), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Restarts != 0 || len(got.Status.ReplicatedJobsStatus) != 1 || got.Status.ReplicatedJobsStatus[0].Ready != 4 {
		t.Errorf("status after the takeover: %+v", got.Status)
	}
	upstreamPools := map[string]bool{}
	for s := 0; s < 4; s++ {
		upstreamPools[poolOfPods(t, c, "upstream-run", s)] = true
	}
	runningOnDistinctPools(t, c, "upstream-run", 0)
	newcomerPool := poolOfPods(t, c, "newcomer", 0)
	if upstreamPools[newcomerPool] {
		t.Errorf("the newcomer runs on %s, a pool the adopted JobSet occupies", newcomerPool)
	}

	// The next failure is ours to handle.
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=upstream-run"})
	if err != nil || len(pods.Items) == 0 {
		t.Fatalf("pods: %v", err)
	}
	if err := c.Client.CoreV1().Pods("default").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	runningOnDistinctPools(t, c, "upstream-run", 1)
	t.Logf("adopted: %d pods kept for 10 s; the newcomer went to %s; a pod failure restarted it (attempt 1, 8 Running)", len(before), newcomerPool)
}

// upstreamRunning writes the seed JobSet, its Jobs and headless Service as
// upstream's controller writes them (its defaulting, labels, annotations,
// owner references; status with its counts), and waits for its 8 pods.
func upstreamRunning(t *testing.T, c *framework.Cluster, name string) *api.JobSet {
	t.Helper()
	ctx := context.Background()
	js := seedCopy(t, name, "")
	js.Spec.FailurePolicy.MaxRestarts = 10
	jobsetwebhook.Default(js) // upstream's defaulting: the same wire format and values
	if err := c.Objects.Create(ctx, js); err != nil {
		t.Fatal(err)
	}
	owner := []metav1.OwnerReference{*metav1.NewControllerRef(js, api.GroupVersion.WithKind("JobSet"))}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: naming.Subdomain(js), Namespace: js.Namespace, OwnerReferences: owner},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{api.JobSetNameKey: js.Name},
			PublishNotReadyAddresses: true},
	}
	if err := c.Objects.Create(ctx, svc); err != nil {
		t.Fatal(err)
	}
	rj := js.Spec.ReplicatedJobs[0]
	for i := 0; i < int(rj.Replicas); i++ {
		jobName := naming.JobName(js.Name, rj.Name, i)
		labels := map[string]string{
			api.JobSetNameKey: js.Name, api.JobSetUIDKey: string(js.UID), api.ReplicatedJobNameKey: rj.Name,
			api.RestartsKey: "0", api.ReplicatedJobReplicas: strconv.Itoa(int(rj.Replicas)), api.GlobalReplicasKey: strconv.Itoa(int(rj.Replicas)),
			api.JobIndexKey: strconv.Itoa(i), api.JobGlobalIndexKey: strconv.Itoa(i), api.JobKey: naming.JobKey(js.Namespace, jobName),
			api.GroupNameKey: rj.GroupName, api.GroupReplicasKey: strconv.Itoa(int(rj.Replicas)), api.JobGroupIndexKey: strconv.Itoa(i),
		}
		annotations := map[string]string{api.ExclusiveKey: js.Annotations[api.ExclusiveKey]}
		for k, v := range labels {
			annotations[k] = v
		}
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Name: jobName, Namespace: js.Namespace, Labels: labels, Annotations: annotations, OwnerReferences: owner},
			Spec:       *rj.Template.Spec.DeepCopy(),
		}
		pod := &job.Spec.Template
		pod.Labels, pod.Annotations = merged(pod.Labels, labels), merged(pod.Annotations, annotations)
		pod.Spec.Subdomain = naming.Subdomain(js)
		// Upstream's pod webhook keeps a Job's pods in one topology domain
		// and other Jobs' pods out of it, by affinity.
		pod.Spec.Affinity = &corev1.Affinity{
			PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey:   js.Annotations[api.ExclusiveKey],
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{api.JobKey: labels[api.JobKey]}},
			}}},
			PodAntiAffinity: &corev1.PodAntiAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				TopologyKey: js.Annotations[api.ExclusiveKey],
				LabelSelector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: api.JobKey, Operator: metav1.LabelSelectorOpExists},
					{Key: api.JobKey, Operator: metav1.LabelSelectorOpNotIn, Values: []string{labels[api.JobKey]}},
				}},
			}}},
		}
		if err := c.Objects.Create(ctx, job); err != nil {
			t.Fatal(err)
		}
	}
	runningOnDistinctPools(t, c, name, 0)
	patch := fmt.Sprintf(`{"status":{"restarts":0,"replicatedJobsStatus":[{"name":%q,"ready":4,"active":4,"succeeded":0,"failed":0,"suspended":0}]}}`, rj.Name)
	if err := c.Objects.Status().Patch(ctx, js, client.RawPatch(types.MergePatchType, []byte(patch))); err != nil {
		t.Fatal(err)
	}
	return js
}

func merged(a, b map[string]string) map[string]string {
	out := map[string]string{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func podUIDs(t *testing.T, c *framework.Cluster, jobset string) []types.UID {
	pods, err := c.Client.CoreV1().Pods("default").List(context.Background(), metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + jobset})
	if err != nil {
		t.Fatal(err)
	}
	var uids []types.UID
	for _, p := range pods.Items {
		uids = append(uids, p.UID)
	}
	return uids
}

// poolOfPods is the node pool the pods of Job slice-i of jobset run on.
func poolOfPods(t *testing.T, c *framework.Cluster, jobset string, i int) string {
	t.Helper()
	var pool string
	framework.Eventually(t, 60*time.Second, func(ctx context.Context) (bool, string) {
		pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + naming.JobName(jobset, "slice", i)})
		if err != nil {
			return false, err.Error()
		}
		for _, p := range pods.Items {
			if p.Spec.NodeName != "" && p.Status.Phase == corev1.PodRunning {
				node, err := c.Client.CoreV1().Nodes().Get(ctx, p.Spec.NodeName, metav1.GetOptions{})
				if err != nil {
					return false, err.Error()
				}
				pool = node.Labels[gke.NodePoolLabel]
				return true, ""
			}
		}
		return false, fmt.Sprintf("no pod of %s Running", naming.JobName(jobset, "slice", i))
	})
	return pool
}
