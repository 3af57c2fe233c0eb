package slicing

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/types"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
)

// SliceAnnotation names, on a child Job, the Slice it is pinned to.
const SliceAnnotation = "multislice.dev/slice"

// Pin places Job j on the hosts of Slice name, formed from partitions
// (and, for a sub-slice, the hosts at the positions given): a required
// node affinity on the partition label and the host positions (ANDed
// into every term the template has), and SliceAnnotation. The one place a
// slice pin is written.
func Pin(j *batchv1.Job, name string, partitions, hosts []string) {
	reqs := []corev1.NodeSelectorRequirement{{Key: gke.PartitionCubeLabel, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(partitions)}}
	if len(hosts) > 0 {
		reqs = append(reqs, corev1.NodeSelectorRequirement{Key: slicev1beta1.HostPositionLabel, Operator: corev1.NodeSelectorOpIn, Values: slices.Clone(hosts)})
	}
	pod := &j.Spec.Template.Spec
	if pod.Affinity == nil {
		pod.Affinity = &corev1.Affinity{}
	}
	if pod.Affinity.NodeAffinity == nil {
		pod.Affinity.NodeAffinity = &corev1.NodeAffinity{}
	}
	na := pod.Affinity.NodeAffinity
	if na.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		na.RequiredDuringSchedulingIgnoredDuringExecution = &corev1.NodeSelector{}
	}
	terms := na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) == 0 {
		terms = []corev1.NodeSelectorTerm{{}}
	}
	for i := range terms {
		exprs := slices.DeleteFunc(slices.Clone(terms[i].MatchExpressions), pinned)
		terms[i].MatchExpressions = append(exprs, reqs...)
	}
	na.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms = terms
	if j.Annotations == nil {
		j.Annotations = map[string]string{}
	}
	j.Annotations[SliceAnnotation] = name
}

// pinned: a requirement Pin writes (a pin of an earlier attempt).
func pinned(e corev1.NodeSelectorRequirement) bool {
	return e.Key == gke.PartitionCubeLabel || e.Key == slicev1beta1.HostPositionLabel
}

// PinnedSelector selects the hosts Pin put j on (nil if none).
func PinnedSelector(j *batchv1.Job) labels.Selector {
	if PinnedSlice(j) == "" || j.Spec.Template.Spec.Affinity == nil || j.Spec.Template.Spec.Affinity.NodeAffinity == nil ||
		j.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	sel := labels.NewSelector()
	for _, t := range j.Spec.Template.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if pinned(e) && e.Operator == corev1.NodeSelectorOpIn {
				if r, err := labels.NewRequirement(e.Key, selection.In, e.Values); err == nil {
					sel = sel.Add(*r)
				}
			}
		}
		return sel // every term carries the same pin
	}
	return nil
}

// PinnedSlice is the Slice j is pinned to, "" if none.
func PinnedSlice(j *batchv1.Job) string { return j.Annotations[SliceAnnotation] }

// Asks says whether pods of template t ask for a dynamic slice (GKE's
// slice-topology annotation).
func Asks(t *corev1.PodTemplateSpec) bool {
	return t.Annotations[gke.SliceTopologyAnnotation] != ""
}

// Name is the Slice formed for Job job of the JobSet with UID uid: the
// Job's name (cut to fit GKE's 49 characters) and a hash of the UID, so
// that Slices of same-named Jobs in two namespaces, or of a JobSet
// recreated under its old name, never collide.
func Name(job string, uid types.UID) string {
	h := fnv.New32a()
	h.Write([]byte(uid))
	suffix := fmt.Sprintf("-%05x", h.Sum32()&0xfffff)
	base := job
	if n := slicev1beta1.MaxNameLength - len(suffix); len(base) > n {
		base = strings.TrimRight(base[:n], "-")
	}
	if base == "" || base[0] < 'a' || base[0] > 'z' {
		base = "s" + base
		if n := slicev1beta1.MaxNameLength - len(suffix); len(base) > n {
			base = base[:n]
		}
	}
	return base + suffix
}

// PinnedPartitions are the partitions Pin put j on (nil if none).
func PinnedPartitions(j *batchv1.Job) []string {
	if PinnedSlice(j) == "" {
		return nil
	}
	pod := j.Spec.Template.Spec
	if pod.Affinity == nil || pod.Affinity.NodeAffinity == nil || pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return nil
	}
	for _, t := range pod.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, e := range t.MatchExpressions {
			if e.Key == gke.PartitionCubeLabel && e.Operator == corev1.NodeSelectorOpIn {
				return e.Values
			}
		}
	}
	return nil
}

// Owner is the JobSet a Slice is formed for.
type Owner struct {
	Namespace, Name string
	UID             types.UID
}

// OwnerOf is js as the owner of its Slices.
func OwnerOf(js *api.JobSet) Owner { return Owner{Namespace: js.Namespace, Name: js.Name, UID: js.UID} }

// NewSlice is the Slice formed for want from cubes (a sub-slice: the
// quarters of its one cube): named for its Job, labelled with its JobSet
// (a cluster-scoped object has no namespaced owner), formed again on
// failure.
func NewSlice(o Owner, w Want, cubes []string, quarters uint8) *slicev1beta1.Slice {
	t := slices.Clone(w.Topology)
	slices.Sort(t)
	s := &slicev1beta1.Slice{
		ObjectMeta: metav1.ObjectMeta{
			Name: Name(w.Name, o.UID),
			Labels: map[string]string{
				slicev1beta1.JobSetNamespaceLabel: o.Namespace, slicev1beta1.JobSetNameLabel: o.Name,
				slicev1beta1.JobSetUIDLabel: string(o.UID), slicev1beta1.JobNameLabel: w.Name,
			},
			Annotations: map[string]string{slicev1beta1.RetryOnFailureAnnotation: "true"},
		},
		Spec: slicev1beta1.SliceSpec{Type: slicev1beta1.TPU7x, Topology: t.String(), PartitionIDs: cubes},
	}
	if quarters != 0 {
		s.Annotations[slicev1beta1.QuartersAnnotation] = FormatQuarters(quarters)
	}
	return s
}

// StateOf reads a Slice's Ready condition: Ready, or failed for good
// (reason FAILED) with why; neither while it is being judged or going.
func StateOf(s *slicev1beta1.Slice) (ready, failed bool, message string) {
	c := meta.FindStatusCondition(s.Status.Conditions, slicev1beta1.ReadyCondition)
	if c == nil || s.DeletionTimestamp != nil {
		return false, false, ""
	}
	return c.Status == metav1.ConditionTrue, c.Status == metav1.ConditionFalse && c.Reason == slicev1beta1.FailedReason, c.Message
}
