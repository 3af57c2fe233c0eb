package workload

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
)

func TestBuildPathways(t *testing.T) {
	base := PathwaysSpec{Name: "pw", TPUType: "v4-16", Slices: 2, Command: "python train.py", Image: "python:3.12"}
	js, err := BuildPathways(base)
	if err != nil {
		t.Fatal(err)
	}
	head, worker := js.Spec.ReplicatedJobs[0], js.Spec.ReplicatedJobs[1]
	hp, wp := head.Template.Spec.Template.Spec, worker.Template.Spec.Template.Spec
	checks := map[string]bool{
		"coordinator is the head":            js.Spec.Coordinator.ReplicatedJob == PathwaysHead,
		"InOrder startup":                    js.Spec.StartupPolicy.StartupPolicyOrder == api.InOrder,
		"success when the head succeeds":     js.Spec.SuccessPolicy.TargetReplicatedJobs[0] == PathwaysHead,
		"no JobSet-level exclusive key":      js.Annotations[api.ExclusiveKey] == "",
		"head exclusive by host":             head.Template.Annotations[api.ExclusiveKey] == gke.HostnameLabel,
		"head on cpu-np":                     hp.NodeSelector[gke.NodePoolLabel] == PathwaysCPUPool,
		"two sidecars, then the program":     len(hp.InitContainers) == 2 && len(hp.Containers) == 1 && *hp.InitContainers[0].RestartPolicy == corev1.ContainerRestartPolicyAlways,
		"stand-ins without Pathways' images": hp.InitContainers[0].Image == StandInImage && hp.InitContainers[0].Command[1] == "pathways-standin",
		"workers exclusive by pool":          worker.Template.Annotations[api.ExclusiveKey] == gke.NodePoolLabel,
		"one worker Job per slice":           worker.Replicas == 2 && *worker.Template.Spec.Parallelism == 2,
		"backoffLimit 4 x hosts":             *worker.Template.Spec.BackoffLimit == 8,
		"workers retried in place":           wp.RestartPolicy == corev1.RestartPolicyOnFailure,
		"all chips of a host":                wp.Containers[0].Resources.Limits.Name(gke.TPUResource, "").Value() == 4,
		"instance type for the RM":           strings.Contains(strings.Join(hp.InitContainers[1].Args, " "), "--instance_type=tpuv4:2x2x2"),
	}
	for what, ok := range checks {
		if !ok {
			t.Errorf("not so: %s", what)
		}
	}

	headless := base
	headless.Headless, headless.Command = true, ""
	headless.ProxyImage, headless.ServerImage = "proxy:1", "server:1"
	elastic := base
	elastic.ElasticSlices, elastic.MaxSliceRestarts = 1, 3
	for _, tc := range []struct {
		name  string
		spec  PathwaysSpec
		check func(*api.JobSet) bool
	}{
		{"headless: the sidecars are the containers, no success policy", headless, func(js *api.JobSet) bool {
			p := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
			return js.Spec.SuccessPolicy == nil && len(p.InitContainers) == 0 && len(p.Containers) == 2
		}},
		{"real images run unchanged, with xpk's args", headless, func(js *api.JobSet) bool {
			w := js.Spec.ReplicatedJobs[1].Template.Spec.Template.Spec.Containers[0]
			return w.Image == "server:1" && w.Command == nil && w.Args[0] == "--server_port=29005"
		}},
		{"elastic: backoffLimit max-slice-restarts x hosts", elastic, func(js *api.JobSet) bool {
			return ptr.Deref(js.Spec.ReplicatedJobs[1].Template.Spec.BackoffLimit, 0) == 6
		}},
	} {
		js, err := BuildPathways(tc.spec)
		if err != nil || !tc.check(js) {
			t.Errorf("%s: err %v", tc.name, err)
		}
	}

	for _, tc := range []struct {
		spec PathwaysSpec
		flag string
	}{
		{PathwaysSpec{Name: "pw", TPUType: "v4-16", Slices: 2}, "--command"},
		{PathwaysSpec{Name: "pw", TPUType: "v9-1", Slices: 2, Command: "x"}, "--tpu-type"},
		{PathwaysSpec{Name: "pw", TPUType: "v4-16", Slices: 2000, Command: "x"}, "--num-slices"},
		{PathwaysSpec{Name: "pw", TPUType: "v4-16", Slices: 2, Command: "x", ElasticSlices: 2}, "--elastic-slices"},
		{PathwaysSpec{Name: "Bad_Name", TPUType: "v4-16", Slices: 2, Command: "x"}, "--workload"},
	} {
		if _, err := BuildPathways(tc.spec); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%+v: error %v, want one naming %s", tc.spec, err, tc.flag)
		}
	}
}
