package placement

import api "github.com/multislice/multislice/api/jobset/v1alpha2"

// Priority is a JobSet's rank in the queue: the pod priority of its first
// replicated job (spec.priority, else its PriorityClass's value by
// classValue, else 0), as the scheduler would give its pods.
func Priority(js *api.JobSet, classValue func(name string) (int32, bool)) int32 {
	if len(js.Spec.ReplicatedJobs) == 0 {
		return 0
	}
	spec := js.Spec.ReplicatedJobs[0].Template.Spec.Template.Spec
	if spec.Priority != nil {
		return *spec.Priority
	}
	if spec.PriorityClassName == "" || classValue == nil {
		return 0
	}
	v, _ := classValue(spec.PriorityClassName)
	return v
}
