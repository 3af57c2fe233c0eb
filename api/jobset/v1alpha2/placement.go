package v1alpha2

import batchv1 "k8s.io/api/batch/v1"

// PlacementAnnotations are the exclusive-placement annotations
// (ExclusiveKey, NodeSelectorStrategyKey) that rjob's child Jobs carry, as
// upstream decides them: each replicated job's template wins over the
// JobSet's, key by key. A replicated job with neither is not placed
// exclusively (e.g. Pathways' head by hostname, its workers by node pool).
func PlacementAnnotations(js *JobSet, rjob *ReplicatedJob) map[string]string {
	out := map[string]string{}
	for _, key := range []string{ExclusiveKey, NodeSelectorStrategyKey} {
		if v, ok := rjob.Template.Annotations[key]; ok {
			out[key] = v
		} else if v, ok := js.Annotations[key]; ok {
			out[key] = v
		}
	}
	return out
}

// Pin places child Job j in domain of its exclusive key: the node
// selector the scheduler obeys and AssignedDomainAnnotation, which says
// that placement chose it (a selector the user wrote says nothing). The
// one place a pin is written.
func Pin(j *batchv1.Job, key, domain string) {
	if j.Spec.Template.Spec.NodeSelector == nil {
		j.Spec.Template.Spec.NodeSelector = map[string]string{}
	}
	j.Spec.Template.Spec.NodeSelector[key] = domain
	if j.Annotations == nil {
		j.Annotations = map[string]string{}
	}
	j.Annotations[AssignedDomainAnnotation] = domain
}

// PinnedDomain is the domain placement pinned j to, "" if none.
func PinnedDomain(j *batchv1.Job) string {
	return j.Annotations[AssignedDomainAnnotation]
}
