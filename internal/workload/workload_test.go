package workload

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
)

func valid() Spec {
	return Spec{Name: "train", Namespace: "default", TPUType: "v4-16", Slices: 2, Command: "python train.py", Image: "python:3.12", GracePeriod: 30}
}

// As xpk: a user error fails the workload at once; 42 and 127-255 (plus
// the user's codes) restart it.
func TestXPKFailureSemantics(t *testing.T) {
	s := valid()
	s.RestartOnExitCodes = []int32{3, 3, 42, 200}
	js, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	rules := js.Spec.FailurePolicy.Rules
	if len(rules) != 1 || rules[0].Action != api.FailJobSet || rules[0].OnJobFailureReasons[0] != batchv1.JobReasonPodFailurePolicy {
		t.Errorf("JobSet rules %+v, want FailJobSet on PodFailurePolicy", rules)
	}
	pfp := js.Spec.ReplicatedJobs[0].Template.Spec.PodFailurePolicy.Rules[0]
	codes := pfp.OnExitCodes.Values
	if pfp.Action != batchv1.PodFailurePolicyActionFailJob || pfp.OnExitCodes.Operator != batchv1.PodFailurePolicyOnExitCodesOpNotIn ||
		len(codes) != 1+129+1 || codes[0] != 3 || codes[1] != 42 || codes[2] != 127 || codes[len(codes)-1] != 255 {
		t.Errorf("podFailurePolicy %+v", pfp)
	}
	for i := 1; i < len(codes); i++ {
		if codes[i] <= codes[i-1] {
			t.Fatalf("exit codes not ascending and unique: %v", codes)
		}
	}
}

func TestBuildXPKOptions(t *testing.T) {
	s := valid()
	s.QueueName, s.ShmSize, s.TTLSecondsAfterFinished = "multislice-queue", "16Gi", ptr.To[int32](43200)
	s.Env = map[string]string{"XLA_FLAGS": "--a=1,--b=2"}
	js, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	pod := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
	switch {
	case js.Labels[QueueLabel] != "multislice-queue":
		t.Errorf("labels %v", js.Labels)
	case *js.Spec.TTLSecondsAfterFinished != 43200:
		t.Errorf("ttl %d", *js.Spec.TTLSecondsAfterFinished)
	case len(pod.Volumes) != 1 || pod.Volumes[0].EmptyDir.SizeLimit.String() != "16Gi" || pod.Containers[0].VolumeMounts[0].MountPath != "/dev/shm":
		t.Errorf("/dev/shm: %+v %+v", pod.Volumes, pod.Containers[0].VolumeMounts)
	case pod.Containers[0].Env[0].Value != "--a=1,--b=2":
		t.Errorf("env %+v", pod.Containers[0].Env)
	}
}

func TestBuildRefuses(t *testing.T) {
	for _, tc := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.Name = "Train" }, "NAME"},
		{func(s *Spec) { s.TPUType = "v9-8" }, "--tpu-type"},
		{func(s *Spec) { s.Slices = 2000 }, "--num-slices: must be 1 to 1024"},
		{func(s *Spec) { s.Command = " " }, "--command: required"},
		{func(s *Spec) { s.Priority = "urgent" }, "--priority"},
		{func(s *Spec) { s.Env = map[string]string{"1BAD": "x"} }, "--env"},
		{func(s *Spec) { s.QueueName = "Q!" }, "--kueue-queue"},
		{func(s *Spec) { s.RestartOnExitCodes = []int32{0} }, "--restart-on-exit-codes: 0"},
		{func(s *Spec) { s.RestartOnExitCodes = []int32{256} }, "--restart-on-exit-codes: 256"},
		{func(s *Spec) { s.TTLSecondsAfterFinished = ptr.To[int32](-1) }, "--ttl-seconds-after-finished"},
		{func(s *Spec) { s.ShmSize = "lots" }, "--shm-size"},
	} {
		s := valid()
		tc.edit(&s)
		if _, err := Build(s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("Build: %v, want an error naming %q", err, tc.want)
		}
	}
}

// TestDynamicSlicing: --super-slicing and --sub-slicing render xpk's
// dynamic-slicing JobSet, and refuse shapes cubes do not form.
func TestDynamicSlicing(t *testing.T) {
	base := Spec{Name: "dyn", TPUType: "tpu7x-4x4x8", Slices: 2, Command: "python3 train.py", Image: "python:3.12", SuperSlicing: true}
	js, err := Build(base)
	if err != nil {
		t.Fatal(err)
	}
	pod := js.Spec.ReplicatedJobs[0].Template.Spec.Template
	if _, ok := js.Annotations[api.ExclusiveKey]; ok || pod.Spec.NodeSelector[gke.TopologyLabel] != "" ||
		pod.Spec.NodeSelector[gke.AcceleratorLabel] != "tpu7x" || pod.Annotations[gke.SliceTopologyAnnotation] != "4x4x8" ||
		*js.Spec.ReplicatedJobs[0].Template.Spec.Parallelism != 32 {
		t.Errorf("super-slicing JobSet: annotations %v, pod annotations %v, selector %v", js.Annotations, pod.Annotations, pod.Spec.NodeSelector)
	}
	sub := base
	sub.TPUType, sub.SuperSlicing, sub.SubSlicing = "tpu7x-2x2x4", false, true
	if js, err := Build(sub); err != nil || js.Spec.ReplicatedJobs[0].Template.Spec.Template.Annotations[gke.PodSetRequiredTopologyAnnotation] != gke.PartitionCubeLabel {
		t.Errorf("sub-slicing: %v", err)
	}
	for _, tc := range []struct {
		edit func(*Spec)
		want string
	}{
		{func(s *Spec) { s.TPUType = "v4-16" }, "dynamic slices are tpu7x slices"},
		{func(s *Spec) { s.TPUType = "tpu7x-2x2x4" }, "use --sub-slicing"},
		{func(s *Spec) { s.SuperSlicing, s.SubSlicing = false, true }, "use --super-slicing"},
		{func(s *Spec) { s.SubSlicing = true }, "choose one"},
	} {
		s := base
		tc.edit(&s)
		if _, err := Build(s); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", s, err, tc.want)
		}
	}
}
