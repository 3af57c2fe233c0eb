// Package tpujob is what GKE's TPU webhook does to a Job, as pure
// functions: the checks that refuse or advise on a TPU Job's shape
// (CheckJobSpec, CheckJobSet) and the TPU environment its pods get
// (Inject). The admission webhooks and the JobSet controller share it.
package tpujob

import (
	"fmt"
	"math"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	tpucat "github.com/multislice/multislice/internal/tpu"
)

// Findings are what the TPU checks of one Job (or Job template) found,
// sorted as GKE sorts them: Errors are shapes GKE refuses too or that
// cannot run (no slice has them), and refuse admission; Advice is ours
// alone (the shape runs, maybe not as the user expects) and becomes an
// admission warning, which kubectl prints, and an event. Admission
// follows GKE: a check GKE does not make never refuses what GKE runs.
type Findings struct {
	Errors field.ErrorList
	Advice []string
}

// Check names each TPU check, for the table in docs/tpu-webhook.md and
// the test that pins every check's class.
type Check string

const (
	CheckSelector       Check = "selector"        // accelerator and topology selected together
	CheckShape          Check = "shape"           // a known accelerator with a topology it has
	CheckChips          Check = "chips"           // google.com/tpu = the chips per host
	CheckParallelism    Check = "parallelism"     // one pod per host of the slice
	CheckCompletions    Check = "completions"     // as many completions as hosts
	CheckSingleHostMany Check = "single-host"     // several single-host slices
	CheckBackoffLimit   Check = "backoff-limit"   // a failed pod fails its slice
	CheckCompletionMode Check = "completion-mode" // exclusive placement needs Indexed
	CheckSliceTopology  Check = "slice-topology"  // a dynamic slice's shape forms, and is asked for one way
)

// Class says whether a check refuses (Refuse) or advises (Advise).
type Class string

const (
	Refuse Class = "error"
	Advise Class = "warning"
)

// Classes is every check's class: one home for the sorting that docs and
// tests state.
var Classes = map[Check]Class{
	CheckSelector:       Advise,
	CheckShape:          Refuse,
	CheckChips:          Refuse,
	CheckParallelism:    Refuse,
	CheckCompletions:    Refuse,
	CheckSingleHostMany: Advise,
	CheckBackoffLimit:   Advise,
	CheckCompletionMode: Refuse,
	CheckSliceTopology:  Refuse,
}

// add files err under check's class: an error, or advice in its words.
func (f *Findings) add(check Check, err *field.Error) {
	if Classes[check] == Refuse {
		f.Errors = append(f.Errors, err)
		return
	}
	f.Advice = append(f.Advice, fmt.Sprintf("%s: %s", err.Field, err.Detail))
}

// Merge appends other's findings.
func (f *Findings) Merge(other Findings) {
	f.Errors = append(f.Errors, other.Errors...)
	f.Advice = append(f.Advice, other.Advice...)
}

// CheckJobSpec checks a TPU Job (or a JobSet's Job template) against its
// slice: slices is how many such Jobs run together (replicas of a JobSet's
// replicated job; 1 for a plain Job). Templates that request no TPUs or name
// neither accelerator nor topology are not checked.
func CheckJobSpec(spec *batchv1.JobSpec, slices int, p *field.Path) Findings {
	var f Findings
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
	dynamic := spec.Template.Annotations[gke.SliceTopologyAnnotation]
	if containerIdx < 0 || sel[gke.AcceleratorLabel] == "" && sel[gke.TopologyLabel] == "" && dynamic == "" {
		return f
	}
	selPath := p.Child("template", "spec", "nodeSelector")
	var shape tpucat.Shape
	if dynamic != "" {
		var ok bool
		if shape, ok = checkDynamic(&f, spec, p); !ok {
			return f
		}
	} else {
		if sel[gke.AcceleratorLabel] == "" || sel[gke.TopologyLabel] == "" {
			f.add(CheckSelector, field.Required(selPath, fmt.Sprintf("selects only one of %s and %s: the slice's shape is unknown, "+
				"so its pods get no TPU_TOPOLOGY or TPU_HOST_BOUNDS from us and the scheduler may mix shapes; select both",
				gke.AcceleratorLabel, gke.TopologyLabel)))
			return f
		}
		var err error
		if shape, err = ShapeOf(sel, chips); err != nil {
			f.add(CheckShape, field.Invalid(selPath.Key(gke.TopologyLabel), sel[gke.TopologyLabel], err.Error()))
			return f
		}
	}
	limitPath := p.Child("template", "spec", list).Index(containerIdx).Child("resources", "limits").Key(gke.TPUResource)
	if chips != shape.ChipsPerHost {
		f.add(CheckChips, field.Invalid(limitPath, chips, fmt.Sprintf("%s %s has %d chips per host: request google.com/tpu: %d",
			shape.Accelerator, shape.Topology, shape.ChipsPerHost, shape.ChipsPerHost)))
	}
	hosts := int32(shape.Hosts)
	if v := ptr.Deref(spec.Parallelism, 1); v != hosts {
		f.add(CheckParallelism, field.Invalid(p.Child("parallelism"), v, fmt.Sprintf("%s (%s %s) has %d hosts: set parallelism to %d, one pod per host",
			shape.AcceleratorType(), shape.Accelerator, shape.Topology, hosts, hosts)))
	}
	if spec.Completions != nil && *spec.Completions != hosts {
		f.add(CheckCompletions, field.Invalid(p.Child("completions"), *spec.Completions, fmt.Sprintf("set completions to %d, the hosts of %s", hosts, shape.AcceleratorType())))
	}
	if slices > 1 {
		if !shape.MultiHost() {
			f.add(CheckSingleHostMany, field.Invalid(selPath.Key(gke.TopologyLabel), shape.Topology.String(),
				fmt.Sprintf("%d slices of %s, one host each: they talk only over the data-centre network; a multi-host topology keeps a slice on ICI", slices, shape.AcceleratorType())))
		}
		if v := ptr.Deref(spec.BackoffLimit, 6); v != 0 && !inPlaceShape(spec) {
			f.add(CheckBackoffLimit, field.Invalid(p.Child("backoffLimit"), v, fmt.Sprintf(
				"a failed pod is retried inside its slice, up to %d times, while the other slices wait for it; only then does the slice's Job fail "+
					"and the JobSet restart every slice (its failure policy). Set backoffLimit: 0 for a failed pod to restart every slice at once", v)))
		}
	}
	return f
}

// CheckJobSet runs the TPU checks on every replicated job of js: its shape
// against its slice, and exclusive placement against its completion mode.
// The JobSet webhook refuses the errors and warns the advice; the
// controller records the advice as an event on the JobSet.
func CheckJobSet(js *api.JobSet) Findings {
	var f Findings
	for i := range js.Spec.ReplicatedJobs {
		rj := &js.Spec.ReplicatedJobs[i]
		p := field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "spec")
		f.Merge(CheckJobSpec(&rj.Template.Spec, int(rj.Replicas), p))
		ann := api.PlacementAnnotations(js, rj)
		_, exclusive := ann[api.ExclusiveKey]
		_, nodeSelector := ann[api.NodeSelectorStrategyKey]
		f.Merge(CheckCompletionModeForExclusive(&rj.Template.Spec, exclusive, nodeSelector, p))
	}
	return f
}

// checkDynamic checks a dynamic slice (tpu7x, GKE's slice-topology pod
// annotation): its shape forms from cubes, it is asked for by the
// annotation alone (no topology selector), on tpu7x, and a sub-slice says
// which topology level it must fit in (Kueue's required topology).
func checkDynamic(f *Findings, spec *batchv1.JobSpec, p *field.Path) (tpucat.Shape, bool) {
	ann := spec.Template.Annotations
	sel := spec.Template.Spec.NodeSelector
	annPath := p.Child("template", "metadata", "annotations").Key(gke.SliceTopologyAnnotation)
	selPath := p.Child("template", "spec", "nodeSelector")
	if v := sel[gke.TopologyLabel]; v != "" {
		f.add(CheckSliceTopology, field.Invalid(selPath.Key(gke.TopologyLabel), v, fmt.Sprintf(
			"a dynamic slice is asked for by the annotation %s alone: remove the %s selector (or the annotation, for a fixed node-pool slice)",
			gke.SliceTopologyAnnotation, gke.TopologyLabel)))
		return tpucat.Shape{}, false
	}
	if v := sel[gke.AcceleratorLabel]; v != "" && v != "tpu7x" {
		f.add(CheckSliceTopology, field.Invalid(selPath.Key(gke.AcceleratorLabel), v, fmt.Sprintf(
			"%s forms slices of tpu7x only: select %s: tpu7x, or drop the annotation and select a topology", gke.SliceTopologyAnnotation, gke.AcceleratorLabel)))
		return tpucat.Shape{}, false
	}
	shape, sub, err := tpucat.DynamicSlice(ann[gke.SliceTopologyAnnotation])
	if err != nil {
		f.add(CheckSliceTopology, field.Invalid(annPath, ann[gke.SliceTopologyAnnotation], err.Error()))
		return tpucat.Shape{}, false
	}
	if sub && ann[gke.PodSetRequiredTopologyAnnotation] == "" {
		f.add(CheckSliceTopology, field.Required(p.Child("template", "metadata", "annotations").Key(gke.PodSetRequiredTopologyAnnotation),
			fmt.Sprintf("a sub-slice (%s) is cut from one 4x4x4 cube: annotate %s: %s, as xpk does", shape.Topology, gke.PodSetRequiredTopologyAnnotation, gke.PartitionCubeLabel)))
		return tpucat.Shape{}, false
	}
	return shape, true
}

// ValidateJobSpec is CheckJobSpec's refusals alone.
func ValidateJobSpec(spec *batchv1.JobSpec, slices int, p *field.Path) field.ErrorList {
	return CheckJobSpec(spec, slices, p).Errors
}

// CheckCompletionModeForExclusive refuses exclusive placement of a
// NonIndexed Job template (upstream #1284): its pods have no completion
// index, so neither placement's leader nor a TPU worker id exists (a TPU
// program would fail far from the cause). The node-selector strategy,
// which needs no index, is the exception.
func CheckCompletionModeForExclusive(spec *batchv1.JobSpec, exclusive, nodeSelectorStrategy bool, p *field.Path) Findings {
	var f Findings
	if !exclusive || nodeSelectorStrategy || ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion {
		return f
	}
	f.add(CheckCompletionMode, field.Invalid(p.Child("completionMode"), string(ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion)),
		"exclusive placement (alpha.jobset.sigs.k8s.io/exclusive-topology) needs completionMode: Indexed: a NonIndexed pod has no "+
			"completion index, so it gets no TPU_WORKER_ID or TPU_WORKER_HOSTNAMES; set completionMode: Indexed "+
			"(or use alpha.jobset.sigs.k8s.io/node-selector-strategy with pre-labelled nodes)"))
	return f
}

// inPlaceShape is a Job of an in-place restart JobSet (KEP-467): it never
// fails on its own (backoffLimit MaxInt32) and replaces only failed pods;
// its JobSet restarts every slice through the agents instead.
func inPlaceShape(spec *batchv1.JobSpec) bool {
	return ptr.Deref(spec.BackoffLimit, 0) == math.MaxInt32 && ptr.Deref(spec.PodReplacementPolicy, "") == batchv1.Failed
}
