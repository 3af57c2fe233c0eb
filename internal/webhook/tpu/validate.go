package tpu

import (
	"fmt"
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/multislice/multislice/internal/gke"
)

// ValidateJobSpec checks a TPU Job (or a JobSet's Job template) against its
// slice: slices is how many such Jobs run together (replicas of a JobSet's
// replicated job; 1 for a plain Job). Templates that request no TPUs or name
// no accelerator and topology are not checked.
func ValidateJobSpec(spec *batchv1.JobSpec, slices int, p *field.Path) field.ErrorList {
	pod := spec.Template.Spec
	sel := pod.NodeSelector
	chips, containerIdx, list := 0, -1, "containers"
	for _, cs := range []struct {
		name string
		c    []corev1.Container
	}{{"containers", pod.Containers}, {"initContainers", pod.InitContainers}} {
		for i := range cs.c {
			if n, ok := tpuChips(&cs.c[i]); ok && containerIdx < 0 {
				chips, containerIdx, list = n, i, cs.name
			}
		}
	}
	if containerIdx < 0 || sel[gke.AcceleratorLabel] == "" && sel[gke.TopologyLabel] == "" {
		return nil
	}
	selPath := p.Child("template", "spec", "nodeSelector")
	if sel[gke.AcceleratorLabel] == "" || sel[gke.TopologyLabel] == "" {
		return field.ErrorList{field.Required(selPath, fmt.Sprintf("a TPU workload selects both %s and %s", gke.AcceleratorLabel, gke.TopologyLabel))}
	}
	shape, err := ShapeOf(sel, chips)
	if err != nil {
		return field.ErrorList{field.Invalid(selPath.Key(gke.TopologyLabel), sel[gke.TopologyLabel], err.Error())}
	}
	var errs field.ErrorList
	limitPath := p.Child("template", "spec", list).Index(containerIdx).Child("resources", "limits").Key(gke.TPUResource)
	if chips != shape.ChipsPerHost {
		errs = append(errs, field.Invalid(limitPath, chips, fmt.Sprintf("%s %s has %d chips per host: request google.com/tpu: %d",
			shape.Accelerator, shape.Topology, shape.ChipsPerHost, shape.ChipsPerHost)))
	}
	hosts := int32(shape.Hosts)
	if v := ptr.Deref(spec.Parallelism, 1); v != hosts {
		errs = append(errs, field.Invalid(p.Child("parallelism"), v, fmt.Sprintf("%s (%s %s) has %d hosts: set parallelism to %d, one pod per host",
			shape.AcceleratorType(), shape.Accelerator, shape.Topology, hosts, hosts)))
	}
	if spec.Completions != nil && *spec.Completions != hosts {
		errs = append(errs, field.Invalid(p.Child("completions"), *spec.Completions, fmt.Sprintf("set completions to %d, the hosts of %s", hosts, shape.AcceleratorType())))
	}
	if slices > 1 {
		if !shape.MultiHost() {
			errs = append(errs, field.Invalid(selPath.Key(gke.TopologyLabel), shape.Topology.String(),
				fmt.Sprintf("a multislice workload cannot use single-host slices (%s is one host): choose a multi-host topology", shape.AcceleratorType())))
		}
		if v := ptr.Deref(spec.BackoffLimit, 6); v != 0 && !inPlaceShape(spec) {
			errs = append(errs, field.Invalid(p.Child("backoffLimit"), v,
				"a multislice workload needs backoffLimit: 0, so a failed pod fails its slice and the JobSet restarts every slice "+
					"(or, for restartStrategy InPlaceRestart, 2147483647 with podReplacementPolicy: Failed)"))
		}
	}
	return errs
}

// inPlaceShape is a Job of an in-place restart JobSet (KEP-467): it never
// fails on its own (backoffLimit MaxInt32) and replaces only failed pods;
// its JobSet restarts every slice through the agents instead.
func inPlaceShape(spec *batchv1.JobSpec) bool {
	return ptr.Deref(spec.BackoffLimit, 0) == math.MaxInt32 && ptr.Deref(spec.PodReplacementPolicy, "") == batchv1.Failed
}
