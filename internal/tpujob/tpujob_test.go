package tpujob

import (
	"math"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/testobj"
)

func tpuJob(name string, parallelism int32, chips string, sel map[string]string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Spec: batchv1.JobSpec{
			CompletionMode: ptr.To(batchv1.IndexedCompletion), Parallelism: ptr.To(parallelism), Completions: ptr.To(parallelism),
			BackoffLimit: ptr.To(int32(0)),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Subdomain: "svc", NodeSelector: sel,
				Containers: []corev1.Container{
					{Name: "tpu", Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{gke.TPUResource: resource.MustParse(chips)}}},
					{Name: "sidecar"},
				},
			}},
		},
	}
}

var v4x2 = tpuSelector("tpu-v4-podslice", "2x2x2")

// tpuSelector is GKE's node selector for a TPU slice ("": that key left out).
func tpuSelector(accelerator, topology string) map[string]string {
	var spec corev1.PodSpec
	spec.Containers = []corev1.Container{{}}
	testobj.TPU(&spec, accelerator, topology, "0")
	return spec.NodeSelector
}

func env(c corev1.Container) map[string]string {
	out := map[string]string{}
	for _, e := range c.Env {
		if e.ValueFrom != nil {
			out[e.Name] = "field:" + e.ValueFrom.FieldRef.FieldPath
		} else {
			out[e.Name] = e.Value
		}
	}
	return out
}

func TestInjectJobSetChild(t *testing.T) {
	j := tpuJob("multislice-job-slice-2", 2, "4", v4x2)
	j.Labels["jobset.sigs.k8s.io/jobset-name"] = "multislice-job"
	j.Labels["jobset.sigs.k8s.io/replicatedjob-name"] = "slice"
	j.Spec.Template.Spec.Subdomain = "multislice-job"
	j.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "TPU_TOPOLOGY", Value: "mine"}}
	if !Inject(j) {
		t.Fatal("nothing injected")
	}
	got := env(j.Spec.Template.Spec.Containers[0])
	want := map[string]string{
		"TPU_WORKER_ID":                 "field:metadata.annotations['batch.kubernetes.io/job-completion-index']",
		"TPU_WORKER_HOSTNAMES":          "multislice-job-slice-2-0.multislice-job,multislice-job-slice-2-1.multislice-job",
		"MEGASCALE_NUM_SLICES":          "field:metadata.annotations['jobset.sigs.k8s.io/replicatedjob-replicas']",
		"MEGASCALE_SLICE_ID":            "field:metadata.annotations['jobset.sigs.k8s.io/job-index']",
		"MEGASCALE_COORDINATOR_ADDRESS": "multislice-job-slice-0-0.multislice-job",
		"JOBSET_RESTART_ATTEMPT":        "field:metadata.annotations['jobset.sigs.k8s.io/restart-attempt']",
		"TPU_ACCELERATOR_TYPE":          "v4-16",
		"TPU_TOPOLOGY":                  "mine", // the user's value stays
		"TPU_CHIPS_PER_HOST_BOUNDS":     "2,2,1",
		"TPU_HOST_BOUNDS":               "1,1,2",
		"TPU_TOPOLOGY_WRAP":             "false,false,false",
		"TPU_SKIP_MDS_QUERY":            "true",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("injected %d variables, want %d: %v", len(got), len(want), got)
	}
	if n := len(j.Spec.Template.Spec.Containers[1].Env); n != 0 {
		t.Errorf("the container without TPUs got %d variables", n)
	}
	if Inject(j) {
		t.Error("a second Inject changed the Job again")
	}
}

func TestInjectPlainIndexedJob(t *testing.T) {
	j := tpuJob("train", 4, "4", tpuSelector("tpu-v5-lite-podslice", "4x4"))
	Inject(j)
	got := env(j.Spec.Template.Spec.Containers[0])
	if got["TPU_WORKER_HOSTNAMES"] != "train-0.svc,train-1.svc,train-2.svc,train-3.svc" || got["TPU_ACCELERATOR_TYPE"] != "v5litepod-16" || got["TPU_HOST_BOUNDS"] != "2,2,1" {
		t.Errorf("env = %v", got)
	}
	for _, k := range []string{"MEGASCALE_NUM_SLICES", "MEGASCALE_SLICE_ID", "MEGASCALE_COORDINATOR_ADDRESS", "JOBSET_RESTART_ATTEMPT"} {
		if _, ok := got[k]; ok {
			t.Errorf("%s injected into a Job that no JobSet owns", k)
		}
	}
	// Without a subdomain or with one pod, no worker list; device variables still come.
	single := tpuJob("one", 1, "4", v4x2)
	Inject(single)
	if got := env(single.Spec.Template.Spec.Containers[0]); got["TPU_WORKER_HOSTNAMES"] != "" || got["TPU_TOPOLOGY"] != "2x2x2" {
		t.Errorf("single-pod job env = %v", got)
	}
}

// TestCheckClasses pins every TPU check's class: a shape GKE refuses too,
// or that cannot run, is an error; our advice is a warning, never a refusal.
func TestCheckClasses(t *testing.T) {
	backoff := func(n int32) *batchv1.Job { j := tpuJob("a", 2, "4", v4x2); j.Spec.BackoffLimit = ptr.To(n); return j }
	cases := []struct {
		name   string
		job    *batchv1.Job
		slices int
		check  Check  // "" for a valid shape: no finding at all
		want   string // a substring of the finding
	}{
		{"valid v4-16 slice", tpuJob("a", 2, "4", v4x2), 4, "", ""},
		{"no TPUs: not checked", func() *batchv1.Job {
			j := tpuJob("a", 3, "4", v4x2)
			j.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
			return j
		}(), 1, "", ""},
		{"in-place shape keeps its backoffLimit", func() *batchv1.Job {
			j := backoff(math.MaxInt32)
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			return j
		}(), 4, "", ""},
		{"a single slice may retry pods", backoff(8), 1, "", ""},
		{"parallelism", func() *batchv1.Job { j := tpuJob("a", 3, "4", v4x2); j.Spec.Completions = ptr.To(int32(2)); return j }(), 1,
			CheckParallelism, "spec.parallelism: Invalid value: 3: v4-16 (tpu-v4-podslice 2x2x2) has 2 hosts: set parallelism to 2"},
		{"completions", func() *batchv1.Job { j := tpuJob("a", 2, "4", v4x2); j.Spec.Completions = ptr.To(int32(3)); return j }(), 1,
			CheckCompletions, "spec.completions: Invalid value: 3: set completions to 2, the hosts of v4-16"},
		{"chips", tpuJob("a", 2, "8", v4x2), 1, CheckChips,
			`spec.template.spec.containers[0].resources.limits[google.com/tpu]: Invalid value: 8: tpu-v4-podslice 2x2x2 has 4 chips per host: request google.com/tpu: 4`},
		{"bad pair", tpuJob("a", 2, "4", tpuSelector("tpu-v6e-slice", "2x2x2")), 1, CheckShape, "v6e topologies have 2 dimensions"},
		{"xpk's Pathways worker: backoffLimit 4 x hosts", backoff(8), 2, CheckBackoffLimit,
			"spec.backoffLimit: a failed pod is retried inside its slice, up to 8 times"},
		{"single-host multislice", tpuJob("a", 1, "4", tpuSelector("tpu-v4-podslice", "2x2x1")), 2, CheckSingleHostMany,
			"2 slices of v4-8, one host each"},
		{"half a selector", tpuJob("a", 2, "4", tpuSelector("tpu-v4-podslice", "")), 1, CheckSelector,
			"spec.template.spec.nodeSelector: selects only one of"},
		{"NonIndexed", func() *batchv1.Job {
			j := tpuJob("a", 2, "4", v4x2)
			j.Spec.CompletionMode = ptr.To(batchv1.NonIndexedCompletion)
			return j
		}(), 2, CheckCompletionMode, "spec.completionMode: Invalid value: \"NonIndexed\": exclusive placement"},
	}
	dynamic := func(topology string, hosts int32, edit func(*batchv1.Job)) *batchv1.Job {
		j := tpuJob("a", hosts, "4", tpuSelector("tpu7x", ""))
		j.Spec.Template.Annotations = map[string]string{gke.SliceTopologyAnnotation: topology}
		if edit != nil {
			edit(j)
		}
		return j
	}
	cases = append(cases, []struct {
		name   string
		job    *batchv1.Job
		slices int
		check  Check
		want   string
	}{
		{"xpk's super-slicing: the accelerator and the annotation", dynamic("4x4x8", 32, nil), 2, "", ""},
		{"xpk's sub-slicing, with Kueue's required topology", dynamic("2x2x4", 4, func(j *batchv1.Job) {
			j.Spec.Template.Annotations[gke.PodSetRequiredTopologyAnnotation] = gke.PartitionCubeLabel
		}), 1, "", ""},
		{"a dynamic slice's hosts", dynamic("4x4x8", 16, func(j *batchv1.Job) { j.Spec.Completions = ptr.To(int32(32)) }), 1,
			CheckParallelism, "has 32 hosts: set parallelism to 32"},
		{"a shape no cubes form", dynamic("4x4x6", 24, nil), 1, CheckSliceTopology,
			"spec.template.metadata.annotations[cloud.google.com/gke-tpu-slice-topology]: Invalid value: \"4x4x6\": 4x4x6 cannot be formed"},
		{"the annotation and a topology selector", dynamic("4x4x8", 32, func(j *batchv1.Job) {
			j.Spec.Template.Spec.NodeSelector[gke.TopologyLabel] = "4x4x8"
		}), 1, CheckSliceTopology, "remove the cloud.google.com/gke-tpu-topology selector"},
		{"a sub-slice without its required topology", dynamic("2x4x4", 8, nil), 1, CheckSliceTopology,
			"annotate kueue.x-k8s.io/podset-required-topology: cloud.google.com/gke-tpu-partition-4x4x4-id"},
	}...)
	seen := map[Check]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := field.NewPath("spec")
			f := CheckJobSpec(&c.job.Spec, c.slices, p)
			f.Merge(CheckCompletionModeForExclusive(&c.job.Spec, true, false, p))
			var refused, advised []string
			for _, e := range f.Errors {
				refused = append(refused, e.Error())
			}
			advised = f.Advice
			if c.check == "" {
				if len(refused)+len(advised) > 0 {
					t.Fatalf("a valid shape: errors %q, advice %q", refused, advised)
				}
				return
			}
			seen[c.check] = true
			got, other := refused, advised
			if Classes[c.check] == Advise {
				got, other = advised, refused
			}
			if len(got) != 1 || !strings.Contains(got[0], c.want) || len(other) != 0 {
				t.Fatalf("check %s is a %s: want one %q there; errors %q, advice %q", c.check, Classes[c.check], c.want, refused, advised)
			}
		})
	}
	for check := range Classes {
		if !seen[check] {
			t.Errorf("check %s has no case", check)
		}
	}
	// GKE's own refusals stay errors; what GKE runs is never refused.
	for check, want := range map[Check]Class{CheckShape: Refuse, CheckChips: Refuse, CheckParallelism: Refuse, CheckBackoffLimit: Advise} {
		if Classes[check] != want {
			t.Errorf("check %s is a %s, want %s", check, Classes[check], want)
		}
	}
}

// A TPU request only in an init container (a TPU sidecar) is seen by both
// the injection and the validation.
func TestInitContainerTPU(t *testing.T) {
	job := tpuJob("j", 2, "4", v4x2)
	job.Spec.Template.Spec.InitContainers = []corev1.Container{job.Spec.Template.Spec.Containers[0]}
	job.Spec.Template.Spec.InitContainers[0].Name = "tpu-sidecar"
	job.Spec.Template.Spec.Containers = job.Spec.Template.Spec.Containers[1:]
	if !Inject(job) || env(job.Spec.Template.Spec.InitContainers[0])["TPU_WORKER_ID"] == "" {
		t.Fatalf("no TPU environment injected into the init container: %v", job.Spec.Template.Spec.InitContainers[0].Env)
	}
	if len(job.Spec.Template.Spec.Containers[0].Env) != 0 {
		t.Errorf("the container without TPUs got env %v", job.Spec.Template.Spec.Containers[0].Env)
	}
	job.Spec.Template.Spec.InitContainers[0].Resources.Limits[gke.TPUResource] = resource.MustParse("8")
	errs := ValidateJobSpec(&job.Spec, 1, field.NewPath("spec"))
	if len(errs) == 0 || !strings.Contains(errs.ToAggregate().Error(), "spec.template.spec.initContainers[0].resources.limits[google.com/tpu]") {
		t.Fatalf("wrong chips in an init container: %v", errs)
	}
}

// A dynamic slice's pods get the whole stitched slice's environment.
func TestInjectDynamicSlice(t *testing.T) {
	j := tpuJob("train-slice-0", 32, "4", tpuSelector("tpu7x", ""))
	j.Spec.Template.Annotations = map[string]string{gke.SliceTopologyAnnotation: "4x4x8"}
	Inject(j)
	got := env(j.Spec.Template.Spec.Containers[0])
	if got["TPU_TOPOLOGY"] != "4x4x8" || got["TPU_ACCELERATOR_TYPE"] != "tpu7x-256" || strings.Count(got["TPU_WORKER_HOSTNAMES"], ",") != 31 {
		t.Errorf("env %v", got)
	}
}
