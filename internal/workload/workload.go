// Package workload writes multislice JobSets from a few facts (TPU type,
// slice count, command), the way xpk does for GKE: one child Job per slice,
// one pod per host, all chips of each host, exclusive node pools.
package workload

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/tpu"
)

// Label marks the JobSets this package writes.
const Label = "multislice.dev/workload"

// Priorities are the PriorityClasses xpk defines, by name and value.
var Priorities = map[string]int32{"very-low": 100, "low": 250, "medium": 500, "high": 750, "very-high": 1000}

// Spec is what a user says about a workload.
type Spec struct {
	Name, Namespace string
	TPUType         string // e.g. v4-16, v5litepod-16
	Slices          int
	Command         string
	Image           string
	MaxRestarts     int32
	Priority        string // one of Priorities, or "" for none
	Env             map[string]string
	// GracePeriod bounds how long pods get to stop on a restart.
	GracePeriod int64
	// QueueName is the Kueue LocalQueue (label kueue.x-k8s.io/queue-name); "" for none.
	QueueName string
	// RestartOnExitCodes add to xpk's restarting exit codes (42, 127-255):
	// a worker exiting with any other code is a user error that fails the
	// workload at once instead of burning restarts.
	RestartOnExitCodes []int32
	// TTLSecondsAfterFinished deletes the finished JobSet after that long (nil: never).
	TTLSecondsAfterFinished *int32
	// ShmSize sizes a memory-backed /dev/shm ("" leaves the runtime's 64 MiB).
	ShmSize string
	// SuperSlicing and SubSlicing render GKE's dynamic slicing (tpu7x), as
	// xpk does: the accelerator alone selected, the shape in the pod
	// annotation cloud.google.com/gke-tpu-slice-topology, no exclusive
	// placement; a super-slice is stitched from whole 4x4x4 cubes, a
	// sub-slice cut from one (with Kueue's required-topology annotation).
	SuperSlicing, SubSlicing bool
}

// QueueLabel is Kueue's label naming the LocalQueue of a workload.
const QueueLabel = "kueue.x-k8s.io/queue-name"

// PriorityClassLabel is Kueue's label naming a workload's
// WorkloadPriorityClass (`multislice kueue init` makes one per priority).
const PriorityClassLabel = "kueue.x-k8s.io/priority-class"

// restartingExitCodes are xpk's: 42 (a deliberate restart) and 127-255
// (command not found, killed by a signal: infrastructure, not the program).
func restartingExitCodes(extra []int32) []int32 {
	codes := []int32{42}
	for c := int32(127); c <= 255; c++ {
		codes = append(codes, c)
	}
	for _, c := range extra {
		if c != 42 && (c < 127 || c > 255) && !slices.Contains(codes, c) {
			codes = append(codes, c)
		}
	}
	sort.Slice(codes, func(i, j int) bool { return codes[i] < codes[j] })
	return codes
}

// Build validates the spec and writes its JobSet. Errors name the flag.
// MaxSlices bounds --num-slices: upstream's RestartJob cap and the
// largest multislice jobs run today are 1,024 slices.
const MaxSlices = 1024

func Build(s Spec) (*api.JobSet, error) {
	errs := checkShared("NAME", s.Name, s.Priority, s.QueueName, s.Env)
	shape, err := tpu.ShapeForType(s.TPUType)
	if err != nil {
		errs = append(errs, "--tpu-type: "+err.Error())
	}
	if s.Slices < 1 || s.Slices > MaxSlices {
		errs = append(errs, fmt.Sprintf("--num-slices: must be 1 to %d (got %d)", MaxSlices, s.Slices))
	} else if err == nil && s.Slices > 1 && !shape.MultiHost() {
		errs = append(errs, fmt.Sprintf("--num-slices: %s is a single-host slice and cannot form a multislice: use a multi-host type such as %s",
			s.TPUType, biggerType(shape)))
	}
	if strings.TrimSpace(s.Command) == "" {
		errs = append(errs, "--command: required, e.g. --command='python train.py'")
	}
	if s.MaxRestarts < 0 {
		errs = append(errs, "--max-restarts: must not be negative")
	}
	for _, c := range s.RestartOnExitCodes {
		if c < 1 || c > 255 {
			errs = append(errs, fmt.Sprintf("--restart-on-exit-codes: %d is not an exit code of a failure (1 to 255)", c))
		}
	}
	if s.TTLSecondsAfterFinished != nil && *s.TTLSecondsAfterFinished < 0 {
		errs = append(errs, "--ttl-seconds-after-finished: must not be negative")
	}
	var shm resource.Quantity
	if s.ShmSize != "" {
		q, err := resource.ParseQuantity(s.ShmSize)
		if err != nil || q.Sign() <= 0 {
			errs = append(errs, fmt.Sprintf("--shm-size %q: want a size such as 16Gi", s.ShmSize))
		}
		shm = q
	}
	if err == nil {
		errs = append(errs, checkDynamic(s, shape)...)
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%s", strings.Join(errs, "\n"))
	}
	hosts := int32(shape.Hosts)
	pod := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		HostNetwork:                   true,
		DNSPolicy:                     corev1.DNSClusterFirstWithHostNet,
		TerminationGracePeriodSeconds: ptr.To(s.GracePeriod),
		NodeSelector: map[string]string{
			gke.AcceleratorLabel: shape.Accelerator,
			gke.TopologyLabel:    shape.Topology.String(),
		},
		Tolerations:       []corev1.Toleration{{Key: gke.TPUTaintKey, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}},
		PriorityClassName: s.Priority,
		Containers: []corev1.Container{{
			Name:    "main",
			Image:   s.Image,
			Command: []string{"bash", "-c", s.Command},
			Env:     envList(s.Env),
			Ports:   []corev1.ContainerPort{{ContainerPort: 8471}, {ContainerPort: 8080}},
			Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{
				gke.TPUResource: *resource.NewQuantity(int64(shape.ChipsPerHost), resource.DecimalSI),
			}},
		}},
	}
	if s.ShmSize != "" {
		pod.Volumes = []corev1.Volume{{Name: "dshm", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{Medium: corev1.StorageMediumMemory, SizeLimit: &shm}}}}
		pod.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "dshm", MountPath: "/dev/shm"}}
	}
	labels := workloadLabels(s.Name, s.QueueName, s.Priority)
	js := &api.JobSet{
		TypeMeta: metav1.TypeMeta{APIVersion: api.GroupVersion.String(), Kind: "JobSet"},
		ObjectMeta: metav1.ObjectMeta{
			Name: s.Name, Namespace: s.Namespace,
			Labels:      labels,
			Annotations: map[string]string{api.ExclusiveKey: gke.NodePoolLabel},
		},
		Spec: api.JobSetSpec{
			TTLSecondsAfterFinished: s.TTLSecondsAfterFinished,
			// As xpk: a worker's user error (an exit code outside the
			// restarting ones) fails its Job by podFailurePolicy, and that
			// reason fails the JobSet without a restart.
			FailurePolicy: &api.FailurePolicy{MaxRestarts: s.MaxRestarts, Rules: []api.FailurePolicyRule{{
				Name: "UserError", Action: api.FailJobSet, OnJobFailureReasons: []string{batchv1.JobReasonPodFailurePolicy},
			}}},
			ReplicatedJobs: []api.ReplicatedJob{{
				Name: "slice", Replicas: int32(s.Slices),
				Template: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
					Parallelism: ptr.To(hosts), Completions: ptr.To(hosts), BackoffLimit: ptr.To(int32(0)),
					CompletionMode: ptr.To(batchv1.IndexedCompletion),
					PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
						Action: batchv1.PodFailurePolicyActionFailJob,
						OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
							ContainerName: ptr.To("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn,
							Values: restartingExitCodes(s.RestartOnExitCodes),
						},
					}}},
					Template: corev1.PodTemplateSpec{Spec: pod},
				}},
			}},
		},
	}
	if s.SuperSlicing || s.SubSlicing {
		dynamicSlices(js, shape, s.SubSlicing)
	}
	return js, nil
}

// checkDynamic refuses a dynamic-slicing shape that cubes do not form.
func checkDynamic(s Spec, shape tpu.Shape) []string {
	flag := "--super-slicing"
	if s.SubSlicing {
		flag = "--sub-slicing"
	}
	switch {
	case !s.SuperSlicing && !s.SubSlicing:
		return nil
	case s.SuperSlicing && s.SubSlicing:
		return []string{"--super-slicing, --sub-slicing: choose one"}
	case shape.Generation.Name != "tpu7x":
		return []string{fmt.Sprintf("%s: dynamic slices are tpu7x slices; use --tpu-type tpu7x-<topology>, e.g. tpu7x-4x4x8", flag)}
	}
	_, sub, err := tpu.DynamicSlice(shape.Topology.String())
	switch {
	case err != nil:
		return []string{fmt.Sprintf("%s: %v", flag, err)}
	case sub && s.SuperSlicing:
		return []string{fmt.Sprintf("--super-slicing: %s is a sub-slice, cut from one 4x4x4 cube: use --sub-slicing", shape.Topology)}
	case !sub && s.SubSlicing:
		return []string{fmt.Sprintf("--sub-slicing: %s is stitched from whole 4x4x4 cubes: use --super-slicing", shape.Topology)}
	}
	return nil
}

// dynamicSlices turns js into xpk's dynamic-slicing rendering.
func dynamicSlices(js *api.JobSet, shape tpu.Shape, sub bool) {
	delete(js.Annotations, api.ExclusiveKey)
	pod := &js.Spec.ReplicatedJobs[0].Template.Spec.Template
	delete(pod.Spec.NodeSelector, gke.TopologyLabel)
	pod.Annotations = map[string]string{gke.SliceTopologyAnnotation: shape.Topology.String()}
	if sub {
		pod.Annotations[gke.PodSetRequiredTopologyAnnotation] = gke.PartitionCubeLabel
	}
}

// checkShared checks what both generators take alike: the name (given by
// nameFlag), the priority, the Kueue queue and the environment.
func checkShared(nameFlag, name, priority, queue string, env map[string]string) []string {
	var errs []string
	if msgs := validation.IsDNS1035Label(name); len(msgs) > 0 || len(name) > 40 {
		errs = append(errs, fmt.Sprintf("%s %q: use at most 40 lowercase letters, digits and '-', starting with a letter", nameFlag, name))
	}
	if _, ok := Priorities[priority]; priority != "" && !ok {
		errs = append(errs, fmt.Sprintf("--priority %q: use one of very-low, low, medium, high, very-high", priority))
	}
	for k := range env {
		if msgs := validation.IsEnvVarName(k); len(msgs) > 0 {
			errs = append(errs, fmt.Sprintf("--env %q: %s", k, msgs[0]))
		}
	}
	if msgs := validation.IsDNS1123Subdomain(queue); queue != "" && len(msgs) > 0 {
		errs = append(errs, fmt.Sprintf("--kueue-queue %q: %s", queue, msgs[0]))
	}
	return errs
}

// workloadLabels are a generated JobSet's labels: ours, and Kueue's queue
// and priority class when it is queued.
func workloadLabels(name, queue, priority string) map[string]string {
	labels := map[string]string{Label: name}
	if queue != "" {
		labels[QueueLabel] = queue
		if priority != "" {
			labels[PriorityClassLabel] = priority
		}
	}
	return labels
}

func envList(m map[string]string) []corev1.EnvVar {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]corev1.EnvVar, len(keys))
	for i, k := range keys {
		out[i] = corev1.EnvVar{Name: k, Value: m[k]}
	}
	return out
}

func biggerType(s tpu.Shape) string {
	for _, topo := range s.Generation.Topologies() {
		if m, err := tpu.NewShape(s.Accelerator, topo, ""); err == nil && m.MultiHost() {
			return m.AcceleratorType()
		}
	}
	return "a larger slice"
}

// State sums a JobSet up in one word.
func State(js *api.JobSet) string {
	switch {
	case js.Status.TerminalState != "":
		return js.Status.TerminalState
	case ptr.Deref(js.Spec.Suspend, false):
		return "Suspended"
	}
	if c := meta.FindStatusCondition(js.Status.Conditions, string(api.JobSetTopologyAssigned)); c != nil && c.Status == metav1.ConditionFalse {
		return "Waiting"
	}
	if c := meta.FindStatusCondition(js.Status.Conditions, string(api.JobSetRestartingJobSet)); c != nil && c.Status == metav1.ConditionTrue {
		return "Restarting"
	}
	return "Running"
}
