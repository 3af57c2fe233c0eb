package v1alpha2

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
