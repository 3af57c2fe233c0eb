package framework

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// Jobs lists the JobSet's Jobs of one restart attempt (any attempt when attempt < 0), by name.
func (e *Env) Jobs(t testing.TB, ns, jobset string) []batchv1.Job {
	var list batchv1.JobList
	if err := e.Client.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{api.JobSetNameKey: jobset}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// CurrentJobs are the Jobs not being deleted.
func (e *Env) CurrentJobs(t testing.TB, ns, jobset string) []batchv1.Job {
	var out []batchv1.Job
	for _, j := range e.Jobs(t, ns, jobset) {
		if j.DeletionTimestamp == nil {
			out = append(out, j)
		}
	}
	return out
}

// Get reads the JobSet.
func (e *Env) Get(t testing.TB, ns, name string) *api.JobSet {
	var js api.JobSet
	if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &js); err != nil {
		t.Fatal(err)
	}
	return &js
}

// Edit changes the JobSet as a user would: read, edit, update, read and
// edit again if the update conflicts (the manager writes its status at any
// moment, and each write is a new version). Any other error is returned.
func (e *Env) Edit(ns, name string, edit func(*api.JobSet)) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		var js api.JobSet
		if err := e.Client.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &js); err != nil {
			return err
		}
		edit(&js)
		return e.Client.Update(context.Background(), &js)
	})
}

// SetJobStatus plays the Job controller: it marks a Job Complete, Failed
// (with reason and message) or ready.
func (e *Env) SetJobStatus(t testing.TB, job *batchv1.Job, outcome batchv1.JobConditionType, reason, message string) {
	t.Helper()
	now := metav1.Now()
	var j batchv1.Job
	if err := e.Client.Get(context.Background(), client.ObjectKeyFromObject(job), &j); err != nil {
		t.Fatalf("get job %s: %v", job.Name, err)
	}
	if j.Status.StartTime == nil {
		j.Status.StartTime = ptr.To(metav1.NewTime(now.Add(-time.Minute)))
	}
	pods := ptr.Deref(j.Spec.Completions, 1)
	switch outcome {
	case batchv1.JobComplete:
		j.Status.Active, j.Status.Ready = 0, ptr.To(int32(0))
		j.Status.Succeeded = pods
		j.Status.CompletionTime = &now
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: batchv1.JobReasonCompletionsReached},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: batchv1.JobReasonCompletionsReached},
		}
	case batchv1.JobFailed:
		j.Status.Active, j.Status.Ready = 0, ptr.To(int32(0))
		j.Status.Failed = 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: reason, Message: message},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: now, Reason: reason, Message: message},
		}
	default: // ready
		j.Status.Active = pods
		j.Status.Ready = ptr.To(pods)
	}
	if err := e.Client.Status().Update(context.Background(), &j); err != nil {
		t.Fatalf("set status of job %s: %v", j.Name, err)
	}
}

// CollectGarbage plays the garbage collector envtest lacks: Jobs deleted in
// the foreground lose their finalizer and disappear.
func (e *Env) CollectGarbage(t testing.TB, ns string) {
	var list batchv1.JobList
	if err := e.Client.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		j := &list.Items[i]
		if j.DeletionTimestamp != nil && slices.Contains(j.Finalizers, metav1.FinalizerDeleteDependents) {
			j.Finalizers = slices.DeleteFunc(j.Finalizers, func(f string) bool { return f == metav1.FinalizerDeleteDependents })
			if err := e.Client.Update(context.Background(), j); client.IgnoreNotFound(err) != nil {
				t.Fatal(err)
			}
		}
	}
}

// InPlace makes js restart in place (KEP-467): restartStrategy
// InPlaceRestart, pods that restart every container when one fails, the
// in-place restart agent (named agentName, the manager's image) as a
// sidecar, and Jobs that replace a pod only once it is gone. The local
// cluster plays the agents of simulated pods.
func InPlace(js *api.JobSet, agentName string) {
	if js.Spec.FailurePolicy == nil {
		js.Spec.FailurePolicy = &api.FailurePolicy{}
	}
	js.Spec.FailurePolicy.RestartStrategy = api.InPlaceRestart
	restartAll := []corev1.ContainerRestartRule{{Action: corev1.ContainerRestartRuleActionRestartAllContainers,
		ExitCodes: &corev1.ContainerRestartRuleOnExitCodes{Operator: corev1.ContainerRestartRuleOnExitCodesOpNotIn, Values: []int32{0}}}}
	for i := range js.Spec.ReplicatedJobs {
		spec := &js.Spec.ReplicatedJobs[i].Template.Spec
		spec.BackoffLimit, spec.PodReplacementPolicy = ptr.To(int32(math.MaxInt32)), ptr.To(batchv1.Failed)
		pod := &spec.Template.Spec
		for c := range pod.Containers {
			pod.Containers[c].RestartPolicy = ptr.To(corev1.ContainerRestartPolicyNever)
			pod.Containers[c].RestartPolicyRules = restartAll
		}
		pod.InitContainers = append(pod.InitContainers, corev1.Container{Name: agentName, Image: "multislice", Args: []string{"agent"},
			RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), RestartPolicyRules: restartAll})
	}
}
