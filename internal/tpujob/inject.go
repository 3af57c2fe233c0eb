// Package tpu is the open TPU webhook: it writes into a TPU Job's pod
// template the environment GKE's closed webhook and TPU device plugin would
// give its pods, and it refuses TPU workloads whose shape cannot work.
// Inject and Validate are pure; webhook.go wires them into admission.
package tpujob

import (
	"fmt"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	jobset "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/naming"
	tpucat "github.com/multislice/multislice/internal/tpu"
)

// RestartAttemptEnv carries the JobSet restart attempt, so a startup script
// can tell a fresh start from a restart and load the latest checkpoint.
const RestartAttemptEnv = "JOBSET_RESTART_ATTEMPT"

func fieldEnv(name, annotation string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.annotations['" + annotation + "']"},
	}}
}

// Inject adds the TPU environment to every container of the Job's pod
// template that requests google.com/tpu, never replacing a variable the
// user set. It reports whether it changed anything.
func Inject(job *batchv1.Job) bool {
	pod := &job.Spec.Template.Spec
	var env []corev1.EnvVar
	indexed := ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	parallelism := int(ptr.Deref(job.Spec.Parallelism, 1))
	if indexed && pod.Subdomain != "" && parallelism > 1 && job.Name != "" {
		hosts := make([]string, parallelism)
		for i := range hosts {
			hosts[i] = naming.PodHostname(job.Name, i) + "." + pod.Subdomain
		}
		env = append(env,
			fieldEnv("TPU_WORKER_ID", batchv1.JobCompletionIndexAnnotation),
			corev1.EnvVar{Name: "TPU_WORKER_HOSTNAMES", Value: strings.Join(hosts, ",")})
		if js, rjob := job.Labels[jobset.JobSetNameKey], job.Labels[jobset.ReplicatedJobNameKey]; js != "" && rjob != "" {
			// A JobSet's coordinator (Pathways: its head) coordinates its
			// slices too, as xpk's workers say from the same label.
			coordinator := job.Labels[jobset.CoordinatorKey]
			if coordinator == "" {
				coordinator = naming.PodHostname(naming.JobName(js, rjob, 0), 0) + "." + pod.Subdomain
			}
			env = append(env,
				fieldEnv("MEGASCALE_NUM_SLICES", jobset.ReplicatedJobReplicas),
				fieldEnv("MEGASCALE_SLICE_ID", jobset.JobIndexKey),
				corev1.EnvVar{Name: "MEGASCALE_COORDINATOR_ADDRESS", Value: coordinator})
		}
	}
	if job.Labels[jobset.JobSetNameKey] != "" {
		env = append(env, fieldEnv(RestartAttemptEnv, jobset.RestartsKey))
	}
	changed := false
	// Init containers too: a TPU sidecar (restartPolicy Always) or an init
	// step that touches the TPUs needs the same environment.
	for i := range len(pod.InitContainers) + len(pod.Containers) {
		c := containerAt(pod, i)
		chips, ok := tpuChips(c)
		if !ok {
			continue
		}
		add := append(append([]corev1.EnvVar(nil), env...), devicePluginEnv(&job.Spec.Template, chips)...)
		for _, e := range add {
			if !hasEnv(c, e.Name) {
				c.Env = append(c.Env, e)
				changed = true
			}
		}
	}
	return changed
}

// containerAt indexes the init containers, then the containers.
func containerAt(pod *corev1.PodSpec, i int) *corev1.Container {
	if i < len(pod.InitContainers) {
		return &pod.InitContainers[i]
	}
	return &pod.Containers[i-len(pod.InitContainers)]
}

// devicePluginEnv is what GKE's TPU device plugin puts on the node, derived
// from the slice the pod template asks for (templateShape) and the chips
// requested: for a dynamic slice, the whole stitched slice's.
func devicePluginEnv(tmpl *corev1.PodTemplateSpec, chips int) []corev1.EnvVar {
	shape, err := templateShape(tmpl, chips)
	if err != nil {
		return nil
	}
	return []corev1.EnvVar{
		{Name: "TPU_ACCELERATOR_TYPE", Value: shape.AcceleratorType()},
		{Name: "TPU_TOPOLOGY", Value: shape.Topology.String()},
		{Name: "TPU_CHIPS_PER_HOST_BOUNDS", Value: shape.ChipsPerHostBounds()},
		{Name: "TPU_HOST_BOUNDS", Value: shape.HostBounds()},
		{Name: "TPU_TOPOLOGY_WRAP", Value: shape.Wrap()},
		{Name: "TPU_SKIP_MDS_QUERY", Value: "true"},
	}
}

// templateShape is the slice a pod template asks for: by GKE's
// slice-topology annotation (dynamic slicing, tpu7x) when it has one, else
// by its nodeSelector.
func templateShape(tmpl *corev1.PodTemplateSpec, chips int) (tpucat.Shape, error) {
	if t := tmpl.Annotations[gke.SliceTopologyAnnotation]; t != "" {
		s, _, err := tpucat.DynamicSlice(t)
		return s, err
	}
	return ShapeOf(tmpl.Spec.NodeSelector, chips)
}

// ShapeOf resolves the slice a pod template selects; chips (the request per
// container) picks the machine type where a topology allows several.
func ShapeOf(sel map[string]string, chips int) (tpucat.Shape, error) {
	acc, topo := sel[gke.AcceleratorLabel], sel[gke.TopologyLabel]
	if acc == "" || topo == "" {
		return tpucat.Shape{}, fmt.Errorf("nodeSelector names no %s and %s", gke.AcceleratorLabel, gke.TopologyLabel)
	}
	g, err := tpucat.ForAccelerator(acc)
	if err != nil {
		return tpucat.Shape{}, err
	}
	if mt, ok := g.MachineTypes[chips]; ok {
		if s, err := tpucat.NewShape(acc, topo, mt); err == nil {
			return s, nil
		}
	}
	return tpucat.NewShape(acc, topo, "")
}

// tpuChips is the container's google.com/tpu limit (or request).
func tpuChips(c *corev1.Container) (int, bool) {
	for _, list := range []corev1.ResourceList{c.Resources.Limits, c.Resources.Requests} {
		if q, ok := list[gke.TPUResource]; ok {
			return int(q.Value()), true
		}
	}
	return 0, false
}

func hasEnv(c *corev1.Container, name string) bool {
	for _, e := range c.Env {
		if e.Name == name {
			return true
		}
	}
	return false
}
