package policy

import (
	"reflect"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// TestResumeRebuildsSchedulingDirectives: Kueue admits on flavor A, evicts
// (the JobSet's template is restored, the Jobs suspended with A's
// directives), then admits on flavor B. The resumed Jobs carry B's
// directives only, as a new Job would (upstream #1294); the Job API's own
// labels stay.
func TestResumeRebuildsSchedulingDirectives(t *testing.T) {
	tolerationA := corev1.Toleration{Key: "flavor-a", Operator: corev1.TolerationOpExists}
	tolerationB := corev1.Toleration{Key: "flavor-b", Operator: corev1.TolerationOpExists}
	js := jobSet(1, func(js *api.JobSet) {
		pod := &js.Spec.ReplicatedJobs[0].Template.Spec.Template
		pod.Spec.NodeSelector = map[string]string{"flavor": "b"}
		pod.Spec.Tolerations = []corev1.Toleration{tolerationB}
		pod.Labels = map[string]string{"kueue.x-k8s.io/podset": "w"}
		js.Status.Conditions = []metav1.Condition{{Type: string(api.JobSetSuspended), Status: metav1.ConditionTrue}}
	})
	job := childJobs(js)[0]
	job.Spec.Suspend = ptr.To(true)
	job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{batchv1.ControllerUidLabel: "job-uid"}}
	old := &job.Spec.Template
	old.Labels[batchv1.ControllerUidLabel], old.Labels[batchv1.JobNameLabel] = "job-uid", job.Name
	old.Labels["flavor-a-only"] = "x"
	old.Annotations["flavor-a-note"] = "x"
	old.Spec.NodeSelector = map[string]string{"flavor": "a", "zone": "a1"}
	old.Spec.Tolerations = []corev1.Toleration{tolerationA}
	old.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "kueue.x-k8s.io/admission"}}

	p := Decide(Observed{JobSet: js, Jobs: []*batchv1.Job{job}, Now: now, ServiceExists: true})
	if len(p.Resume) != 1 {
		t.Fatalf("resume %v, want the one Job", names(p.Resume))
	}
	got := p.Resume[0].Spec.Template
	if want := map[string]string{"flavor": "b"}; !reflect.DeepEqual(got.Spec.NodeSelector, want) {
		t.Errorf("nodeSelector %v, want %v (flavor A's entries gone)", got.Spec.NodeSelector, want)
	}
	if want := []corev1.Toleration{tolerationB}; !reflect.DeepEqual(got.Spec.Tolerations, want) {
		t.Errorf("tolerations %v, want %v", got.Spec.Tolerations, want)
	}
	if len(got.Spec.SchedulingGates) != 0 {
		t.Errorf("scheduling gates %v, want none (the template has none)", got.Spec.SchedulingGates)
	}
	for k, want := range map[string]string{batchv1.ControllerUidLabel: "job-uid", batchv1.JobNameLabel: job.Name,
		"kueue.x-k8s.io/podset": "w", api.JobSetNameKey: "js", "flavor-a-only": ""} {
		if got.Labels[k] != want {
			t.Errorf("label %s=%q, want %q", k, got.Labels[k], want)
		}
	}
	if _, kept := got.Annotations["flavor-a-note"]; kept {
		t.Errorf("annotations %v keep the evicted flavor's", got.Annotations)
	}
	if job.Spec.Template.Spec.NodeSelector["flavor"] != "a" {
		t.Error("Decide changed the cached Job")
	}
}

// TestServicePorts: the headless Service declares the containers' and
// sidecars' ports once per number and protocol (upstream #1300).
func TestServicePorts(t *testing.T) {
	js := jobSet(1, func(js *api.JobSet) {
		spec := &js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
		spec.Containers[0].Ports = []corev1.ContainerPort{
			{Name: "coordinator", ContainerPort: 8476},
			{ContainerPort: 8471, Protocol: corev1.ProtocolUDP},
			{ContainerPort: 8471},
			{ContainerPort: 0},
		}
		spec.InitContainers = []corev1.Container{
			{Name: "agent", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways), Ports: []corev1.ContainerPort{{Name: "coordinator", ContainerPort: 8081}}},
			{Name: "setup", Ports: []corev1.ContainerPort{{ContainerPort: 9999}}}, // not a sidecar: gone before the workers start
		}
	})
	js.Spec.ReplicatedJobs = append(js.Spec.ReplicatedJobs, *js.Spec.ReplicatedJobs[0].DeepCopy())
	var got []string
	for _, p := range headlessService(js).Spec.Ports {
		got = append(got, p.Name+":"+string(p.Protocol)+":"+p.TargetPort.String())
	}
	want := []string{"tcp-8081:TCP:8081", "tcp-8471:TCP:8471", "udp-8471:UDP:8471", "coordinator:TCP:8476"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("ports %v, want %v", got, want)
	}
	if ports := headlessService(jobSet(1)).Spec.Ports; len(ports) != 0 {
		t.Errorf("no container port declared, yet the Service lists %v", ports)
	}
}

// TestEmptyJobSet: upstream accepts a JobSet with no replicated jobs and
// creates nothing but its headless Service; so do we, and the status says why.
func TestEmptyJobSet(t *testing.T) {
	js := jobSet(1, func(js *api.JobSet) { js.Spec.ReplicatedJobs = nil })
	p := Decide(Observed{JobSet: js, Now: now})
	if len(p.Create)+len(p.Delete)+len(p.Pending) != 0 || p.Service == nil || p.Status.TerminalState != "" {
		t.Errorf("an empty JobSet: create %v, delete %v, service %v, terminal %q; want its Service alone", names(p.Create), names(p.Delete), p.Service != nil, p.Status.TerminalState)
	}
	if got := statusReason(p.Status.Conditions, ChildJobsCreated); got != "False NoReplicatedJobs" {
		t.Errorf("ChildJobsCreated %q, want False NoReplicatedJobs", got)
	}
}
