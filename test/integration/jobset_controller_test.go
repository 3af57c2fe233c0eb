// Package integration runs the Multislice manager against a real
// kube-apiserver and etcd (envtest with the project's own binaries) and
// checks what a user observes. Tests play the Job controller and the
// garbage collector, which envtest does not run.
package integration

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// TestChildJobsLabelsAndService: child jobs, labels, service.
func TestChildJobsLabelsAndService(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("driver", 1, 1).ReplicatedJob("workers", 3, 2).
		Edit(func(js *api.JobSet) {
			// The node-selector strategy: exclusive placement on pre-labelled nodes.
			js.Annotations = map[string]string{api.ExclusiveKey: gke.NodePoolLabel, api.NodeSelectorStrategyKey: "true"}
			js.Spec.Coordinator = &api.Coordinator{ReplicatedJob: "driver"}
			// Ports for the headless Service (upstream #1300): named, unnamed, repeated.
			js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "grpc-coord", ContainerPort: 8476}}
			js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8471}, {ContainerPort: 8476}}
		}).Obj())
	jobs := waitJobs(t, env, ns, "js", 4)
	js := env.Get(t, ns, "js")
	byName := map[string]batchv1.Job{}
	for _, j := range jobs {
		byName[j.Name] = j
	}
	j, ok := byName["js-workers-2"]
	if !ok {
		t.Fatalf("no js-workers-2 among %v", keysOf(byName))
	}
	want := map[string]string{
		api.JobSetNameKey: "js", api.JobSetUIDKey: string(js.UID), api.ReplicatedJobNameKey: "workers",
		api.RestartsKey: "0", api.ReplicatedJobReplicas: "3", api.GlobalReplicasKey: "4", api.JobIndexKey: "2",
		api.JobGlobalIndexKey: "3", api.GroupNameKey: "default", api.GroupReplicasKey: "4", api.JobGroupIndexKey: "3",
		api.JobKey: sha1Hex(ns + "/js-workers-2"), api.CoordinatorKey: "js-driver-0-0.js",
	}
	for k, v := range want {
		for where, m := range map[string]map[string]string{
			"job labels": j.Labels, "job annotations": j.Annotations,
			"pod labels": j.Spec.Template.Labels, "pod annotations": j.Spec.Template.Annotations,
		} {
			if m[k] != v {
				t.Errorf("%s[%s] = %q, want %q", where, k, m[k], v)
			}
		}
	}
	if j.Annotations[api.ExclusiveKey] != gke.NodePoolLabel {
		t.Errorf("exclusive-topology annotation not copied: %v", j.Annotations)
	}
	if got := j.Spec.Template.Spec.NodeSelector[api.NamespacedJobKey]; got != ns+"_js-workers-2" {
		t.Errorf("node-selector strategy: nodeSelector %s=%q, want %q", api.NamespacedJobKey, got, ns+"_js-workers-2")
	}
	if tol := j.Spec.Template.Spec.Tolerations; len(tol) != 1 || tol[0].Key != api.NoScheduleTaintKey {
		t.Errorf("node-selector strategy: tolerations %+v", tol)
	}
	if j.Spec.Template.Spec.Subdomain != "js" || ptr.Deref(j.Spec.Suspend, true) {
		t.Errorf("subdomain %q suspend %v", j.Spec.Template.Spec.Subdomain, j.Spec.Suspend)
	}
	if ref := metav1.GetControllerOf(&j); ref == nil || ref.UID != js.UID {
		t.Errorf("controller owner = %+v", ref)
	}
	var svc corev1.Service
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "js"}, &svc); err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "None" || !svc.Spec.PublishNotReadyAddresses || svc.Spec.Selector[api.JobSetNameKey] != "js" {
		t.Errorf("service spec %+v", svc.Spec)
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		ports = append(ports, fmt.Sprintf("%s=%d/%s", p.Name, p.Port, p.Protocol))
	}
	if want := []string{"tcp-8471=8471/TCP", "grpc-coord=8476/TCP"}; !reflect.DeepEqual(ports, want) {
		t.Errorf("service ports %v, want %v", ports, want)
	}
}

// TestSuccessPolicyAll: success policy All completes when every job completes.
func TestSuccessPolicyAll(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("w", 2, 1).Obj())
	jobs := waitJobs(t, env, ns, "js", 2)
	env.SetJobStatus(t, &jobs[0], batchv1.JobComplete, "", "")
	time.Sleep(500 * time.Millisecond)
	if js := env.Get(t, ns, "js"); js.Status.TerminalState != "" {
		t.Fatalf("completed after one of two jobs: %+v", js.Status)
	}
	env.SetJobStatus(t, &jobs[1], batchv1.JobComplete, "", "")
	js := waitCondition(t, env, ns, "js", api.JobSetCompleted, metav1.ConditionTrue, "AllJobsCompleted")
	if js.Status.TerminalState != "Completed" || js.Status.ReplicatedJobsStatus[0].Succeeded != 2 {
		t.Errorf("status %+v", js.Status)
	}
}

// TestSuccessPolicyAnyWithTargets: success policy Any with targets.
func TestSuccessPolicyAnyWithTargets(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("driver", 1, 1).ReplicatedJob("workers", 2, 1).
		Edit(func(js *api.JobSet) {
			js.Spec.SuccessPolicy = &api.SuccessPolicy{Operator: api.OperatorAny, TargetReplicatedJobs: []string{"driver"}}
		}).Obj())
	jobs := waitJobs(t, env, ns, "js", 3)
	for _, j := range jobs {
		if j.Labels[api.ReplicatedJobNameKey] == "workers" {
			env.SetJobStatus(t, &j, batchv1.JobComplete, "", "")
		}
	}
	time.Sleep(500 * time.Millisecond)
	if env.Get(t, ns, "js").Status.TerminalState != "" {
		t.Fatal("workers are not targeted, yet the JobSet finished")
	}
	for _, j := range jobs {
		if j.Labels[api.ReplicatedJobNameKey] == "driver" {
			env.SetJobStatus(t, &j, batchv1.JobComplete, "", "")
		}
	}
	waitCondition(t, env, ns, "js", api.JobSetCompleted, metav1.ConditionTrue, "AllJobsCompleted")
}

// TestNoFailurePolicyFirstFailureFails: no failure policy: first failure fails the jobset.
func TestNoFailurePolicyFirstFailureFails(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("w", 2, 1).Obj())
	jobs := waitJobs(t, env, ns, "js", 2)
	env.SetJobStatus(t, &jobs[1], batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "boom")
	js := waitCondition(t, env, ns, "js", api.JobSetFailed, metav1.ConditionTrue, "FailedJobs")
	c := meta.FindStatusCondition(js.Status.Conditions, "Failed")
	if c.Message != "jobset failed due to one or more job failures (first failed job: "+jobs[1].Name+")" || js.Status.TerminalState != "Failed" {
		t.Errorf("condition %+v, terminal %q", c, js.Status.TerminalState)
	}
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		n := len(env.CurrentJobs(t, ns, "js"))
		return n == 1, fmt.Sprintf("%d jobs left; the active one should be deleted", n)
	})
}

// TestRestartJobSetUntilMaxRestarts: RestartJobSet restarts all jobs until maxRestarts.
func TestRestartJobSetUntilMaxRestarts(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("w", 3, 2).FailurePolicy(1).Obj())
	jobs := waitJobs(t, env, ns, "js", 3)
	env.SetJobStatus(t, &jobs[0], batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "pod failed")
	js := waitCondition(t, env, ns, "js", api.JobSetRestartingJobSet, metav1.ConditionTrue, "DefaultFailurePolicy")
	if js.Status.Restarts != 1 || js.Status.RestartsCountTowardsMax != 1 {
		t.Errorf("restarts %d/%d, want 1/1", js.Status.Restarts, js.Status.RestartsCountTowardsMax)
	}
	jobs = restart(t, env, ns, "js", 1, 3)
	for _, j := range jobs {
		env.SetJobStatus(t, &j, "", "", "")
	}
	waitCondition(t, env, ns, "js", api.JobSetRestartingJobSet, metav1.ConditionFalse, "JobsReady")
	env.SetJobStatus(t, &jobs[2], batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "again")
	js = waitCondition(t, env, ns, "js", api.JobSetFailed, metav1.ConditionTrue, "ReachedMaxRestarts")
	if !strings.Contains(meta.FindStatusCondition(js.Status.Conditions, "Failed").Message, "(first failed job: "+jobs[2].Name+")") {
		t.Errorf("failed condition %+v", js.Status.Conditions)
	}
	waitCondition(t, env, ns, "js", api.JobSetRestartingJobSet, metav1.ConditionFalse, "JobSetFailed")
}

// TestFailurePolicyRules: rules: FailJobSet on a reason, ignore-max restarts, patterns and targets.
func TestFailurePolicyRules(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("a", 1, 1).ReplicatedJob("b", 1, 1).FailurePolicy(0,
		api.FailurePolicyRule{Name: "oomOnA", Action: api.FailJobSet, OnJobFailureMessagePatterns: []string{"OOM.*"}, TargetReplicatedJobs: []string{"a"}},
		api.FailurePolicyRule{Name: "evicted", Action: api.RestartJobSetAndIgnoreMaxRestarts, OnJobFailureReasons: []string{batchv1.JobReasonBackoffLimitExceeded}},
		api.FailurePolicyRule{Name: "fatal", Action: api.FailJobSet, OnJobFailureReasons: []string{batchv1.JobReasonPodFailurePolicy}},
	).Obj())
	jobs := waitJobs(t, env, ns, "js", 2)
	// b fails with an OOM message: rule oomOnA targets a only, so "evicted" applies.
	env.SetJobStatus(t, &jobs[1], batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "OOMKilled")
	js := waitCondition(t, env, ns, "js", api.JobSetRestartingJobSet, metav1.ConditionTrue, "FailurePolicy_evicted")
	if js.Status.Restarts != 1 || js.Status.RestartsCountTowardsMax != 0 {
		t.Errorf("restarts %d/%d, want 1/0 (ignoring maxRestarts 0)", js.Status.Restarts, js.Status.RestartsCountTowardsMax)
	}
	jobs = restart(t, env, ns, "js", 1, 2)
	var a batchv1.Job
	for _, j := range jobs {
		if j.Labels[api.ReplicatedJobNameKey] == "a" {
			a = j
		}
	}
	env.SetJobStatus(t, &a, batchv1.JobFailed, batchv1.JobReasonPodFailurePolicy, "exit 3")
	js = waitCondition(t, env, ns, "js", api.JobSetFailed, metav1.ConditionTrue, "FailJobSetFailurePolicyAction")
	if msg := meta.FindStatusCondition(js.Status.Conditions, "Failed").Message; msg != "applying FailJobSet failure policy action (first failed job: js-a-0)" {
		t.Errorf("message %q", msg)
	}
}

// TestBlockingRecreate: BlockingRecreate waits for every old job to go.
func TestBlockingRecreate(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("w", 2, 1).FailurePolicy(3).
		Edit(func(js *api.JobSet) { js.Spec.FailurePolicy.RestartStrategy = api.BlockingRecreate }).Obj())
	jobs := waitJobs(t, env, ns, "js", 2)
	// Keep one old Job around with a finalizer the test controls.
	stuck := jobs[1].DeepCopy()
	stuck.Finalizers = append(stuck.Finalizers, "test/hold")
	if err := env.Client.Update(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	env.SetJobStatus(t, &jobs[0], batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded, "x")
	waitCondition(t, env, ns, "js", api.JobSetRestartingJobSet, metav1.ConditionTrue, "DefaultFailurePolicy")
	time.Sleep(time.Second)
	env.CollectGarbage(t, ns) // js-w-0 goes; js-w-1 is held
	time.Sleep(time.Second)
	for _, j := range env.Jobs(t, ns, "js") {
		if j.Labels[api.RestartsKey] == "1" {
			t.Fatalf("job %s of attempt 1 created while an old job remains", j.Name)
		}
	}
	var held batchv1.Job
	_ = env.Client.Get(ctx, client.ObjectKeyFromObject(stuck), &held)
	held.Finalizers = nil
	if err := env.Client.Update(ctx, &held); err != nil {
		t.Fatal(err)
	}
	restart(t, env, ns, "js", 1, 2)
}

// TestSuspendAndResume: suspend creates suspended jobs; resume propagates
// the pod template. Kueue's cycle with two flavors: admitted on flavor a,
// evicted (suspended, template restored), admitted on flavor b: the Jobs
// carry b's nodeSelector and tolerations only (upstream #1294).
func TestSuspendAndResume(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("w", 2, 1).Suspend(true).Obj())
	jobs := waitJobs(t, env, ns, "js", 2)
	for _, j := range jobs {
		if !ptr.Deref(j.Spec.Suspend, false) {
			t.Errorf("job %s is not suspended", j.Name)
		}
	}
	waitCondition(t, env, ns, "js", api.JobSetSuspended, metav1.ConditionTrue, "SuspendedJobs")
	admit := func(flavor string) {
		t.Helper()
		err := env.Edit(ns, "js", func(js *api.JobSet) {
			js.Spec.Suspend = ptr.To(false)
			pod := &js.Spec.ReplicatedJobs[0].Template.Spec.Template
			pod.Spec.NodeSelector = map[string]string{"flavor": flavor}
			pod.Spec.Tolerations = []corev1.Toleration{{Key: "flavor-" + flavor, Operator: corev1.TolerationOpExists}}
			pod.Labels = map[string]string{"kueue.x-k8s.io/admitted": flavor}
		})
		if err != nil {
			t.Fatalf("resume with a new nodeSelector must be allowed: %v", err)
		}
		waitCondition(t, env, ns, "js", api.JobSetSuspended, metav1.ConditionFalse, "ResumeJobs")
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			for _, j := range env.CurrentJobs(t, ns, "js") {
				pod := j.Spec.Template
				if ptr.Deref(j.Spec.Suspend, true) || !reflect.DeepEqual(pod.Spec.NodeSelector, map[string]string{"flavor": flavor}) ||
					len(pod.Spec.Tolerations) != 1 || pod.Spec.Tolerations[0].Key != "flavor-"+flavor || pod.Labels["kueue.x-k8s.io/admitted"] != flavor {
					return false, fmt.Sprintf("job %s suspend=%v nodeSelector=%v tolerations=%v labels=%v",
						j.Name, j.Spec.Suspend, pod.Spec.NodeSelector, pod.Spec.Tolerations, pod.Labels)
				}
			}
			return true, ""
		})
	}
	evict := func() {
		t.Helper()
		err := env.Edit(ns, "js", func(js *api.JobSet) {
			js.Spec.Suspend = ptr.To(true)
			pod := &js.Spec.ReplicatedJobs[0].Template.Spec.Template
			pod.Spec.NodeSelector, pod.Spec.Tolerations, pod.Labels = nil, nil, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		waitCondition(t, env, ns, "js", api.JobSetSuspended, metav1.ConditionTrue, "SuspendedJobs")
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			for _, j := range env.CurrentJobs(t, ns, "js") {
				if !ptr.Deref(j.Spec.Suspend, false) {
					return false, "job " + j.Name + " is not suspended yet"
				}
			}
			return true, ""
		})
		// What the Job controller does for a suspended Job: its pods are gone
		// and its clock stops, so its template may change again.
		for _, j := range env.CurrentJobs(t, ns, "js") {
			if j.Status.StartTime != nil {
				j.Status.StartTime = nil
				if err := env.Client.Status().Update(ctx, &j); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	admit("a")
	evict()
	admit("b")
}

// TestDependsOn: dependsOn waits for the dependency to complete.
func TestDependsOn(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("init", 1, 1).ReplicatedJob("train", 2, 1).
		LastReplicatedJob(func(rj *api.ReplicatedJob) {
			rj.DependsOn = []api.DependsOn{{Name: "init", Status: api.DependencyComplete}}
		}).Obj())
	jobs := waitJobs(t, env, ns, "js", 1)
	env.SetJobStatus(t, &jobs[0], "", "", "")
	time.Sleep(time.Second)
	if n := len(env.CurrentJobs(t, ns, "js")); n != 1 {
		t.Fatalf("%d jobs while init is only ready, want 1", n)
	}
	env.SetJobStatus(t, &jobs[0], batchv1.JobComplete, "", "")
	waitJobs(t, env, ns, "js", 3)
}

// TestStartupPolicyInOrder: startupPolicy InOrder.
func TestStartupPolicyInOrder(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("leader", 1, 1).ReplicatedJob("workers", 2, 1).
		Edit(func(js *api.JobSet) { js.Spec.StartupPolicy = &api.StartupPolicy{StartupPolicyOrder: api.InOrder} }).Obj())
	jobs := waitJobs(t, env, ns, "js", 1)
	waitCondition(t, env, ns, "js", api.JobSetStartupPolicyInProgress, metav1.ConditionTrue, "InOrderStartupPolicyInProgress")
	env.SetJobStatus(t, &jobs[0], "", "", "")
	for _, j := range waitJobs(t, env, ns, "js", 3) {
		if j.Labels[api.ReplicatedJobNameKey] == "workers" {
			env.SetJobStatus(t, &j, "", "", "")
		}
	}
	waitCondition(t, env, ns, "js", api.JobSetStartupPolicyCompleted, metav1.ConditionTrue, "InOrderStartupPolicyCompleted")
	waitCondition(t, env, ns, "js", api.JobSetStartupPolicyInProgress, metav1.ConditionFalse, "InOrderStartupPolicyInProgress")
}

// TestTTLSecondsAfterFinished: ttlSecondsAfterFinished deletes the jobset.
func TestTTLSecondsAfterFinished(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("w", 1, 1).
		Edit(func(js *api.JobSet) { js.Spec.TTLSecondsAfterFinished = ptr.To(int32(2)) }).Obj())
	jobs := waitJobs(t, env, ns, "js", 1)
	env.SetJobStatus(t, &jobs[0], batchv1.JobComplete, "", "")
	js := waitCondition(t, env, ns, "js", api.JobSetCompleted, metav1.ConditionTrue, "AllJobsCompleted")
	finishedAt := meta.FindStatusCondition(js.Status.Conditions, "Completed").LastTransitionTime
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		var got api.JobSet
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "js"}, &got)
		return err != nil || got.DeletionTimestamp != nil, "jobset not deleted yet"
	})
	if since := time.Since(finishedAt.Time); since < 1*time.Second {
		t.Errorf("deleted %s after finishing, before the 2 s TTL", since)
	}
}

// TestManagedByAnotherController: managedBy another controller is left alone.
func TestManagedByAnotherController(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("w", 2, 1).
		Edit(func(js *api.JobSet) { js.Spec.ManagedBy = ptr.To("kueue.x-k8s.io/multikueue") }).Obj())
	time.Sleep(2 * time.Second)
	if n := len(env.Jobs(t, ns, "js")); n != 0 {
		t.Errorf("%d jobs created for a JobSet managed elsewhere", n)
	}
	if js := env.Get(t, ns, "js"); len(js.Status.Conditions) != 0 || js.Status.ReplicatedJobsStatus != nil {
		t.Errorf("status written: %+v", js.Status)
	}
}

// TestVolumeClaimPolicies: volumeClaimPolicies create the claim and mount it.
func TestVolumeClaimPolicies(t *testing.T) {
	env := sharedEnv(t)
	ctx := context.Background()
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "js").ReplicatedJob("w", 1, 1).
		LastReplicatedJob(func(rj *api.ReplicatedJob) {
			rj.Template.Spec.Template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "ckpt", MountPath: "/ckpt"}}
		}).
		Edit(func(js *api.JobSet) {
			js.Spec.VolumeClaimPolicies = []api.VolumeClaimPolicy{{Templates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "ckpt"},
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: mustQuantity("1Gi")}},
				},
			}}}}
		}).Obj())
	jobs := waitJobs(t, env, ns, "js", 1)
	vols := jobs[0].Spec.Template.Spec.Volumes
	if len(vols) != 1 || vols[0].PersistentVolumeClaim == nil || vols[0].PersistentVolumeClaim.ClaimName != "ckpt-js" {
		t.Errorf("volumes %+v", vols)
	}
	var pvc corev1.PersistentVolumeClaim
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "ckpt-js"}, &pvc)
		return err == nil, fmt.Sprint(err)
	})
	if metav1.GetControllerOf(&pvc) == nil {
		t.Error("a Delete-policy claim must be owned by the JobSet")
	}
}

func sha1Hex(s string) string {
	sum := sha1.Sum([]byte(s))
	return hex.EncodeToString(sum[:])
}

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

func keysOf(m map[string]batchv1.Job) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestEmptyJobSet: a JobSet with no replicated jobs is accepted, as
// upstream's webhook suite expects, gets its Service and no Job, and its
// status says it has nothing to run.
func TestEmptyJobSet(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	create(t, env, testobj.NewJobSet(ns, "empty").Obj())
	waitCondition(t, env, ns, "empty", "ChildJobsCreated", metav1.ConditionFalse, "NoReplicatedJobs")
	if jobs := env.CurrentJobs(t, ns, "empty"); len(jobs) != 0 {
		t.Errorf("%d Jobs for an empty JobSet", len(jobs))
	}
}
