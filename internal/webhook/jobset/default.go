// Package jobset is the JobSet admission webhook: defaulting and validation
// with upstream's rules, as pure functions, plus their controller-runtime
// wiring. Every refusal names the field and says what to change.
package jobset

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// Default fills in what upstream's webhook fills in; the CRD schema
// supplies the rest (replicas 1, groupName default, restartStrategy Recreate).
func Default(js *api.JobSet) {
	if js.Spec.SuccessPolicy == nil {
		js.Spec.SuccessPolicy = &api.SuccessPolicy{Operator: api.OperatorAll}
	}
	if js.Spec.StartupPolicy == nil {
		js.Spec.StartupPolicy = &api.StartupPolicy{StartupPolicyOrder: api.AnyOrder}
	}
	for i := range js.Spec.ReplicatedJobs {
		spec := &js.Spec.ReplicatedJobs[i].Template.Spec
		if spec.CompletionMode == nil {
			spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		}
		if spec.Template.Spec.RestartPolicy == "" {
			spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		}
	}
	if js.Spec.Network == nil {
		js.Spec.Network = &api.Network{}
	}
	if js.Spec.Network.EnableDNSHostnames == nil {
		js.Spec.Network.EnableDNSHostnames = ptr.To(true)
	}
	if js.Spec.Network.PublishNotReadyAddresses == nil {
		js.Spec.Network.PublishNotReadyAddresses = ptr.To(true)
	}
	if fp := js.Spec.FailurePolicy; fp != nil {
		for i := range fp.Rules {
			if fp.Rules[i].Name == "" {
				fp.Rules[i].Name = fmt.Sprintf("failurePolicyRule%d", i)
			}
		}
	}
	for i := range js.Spec.VolumeClaimPolicies {
		p := &js.Spec.VolumeClaimPolicies[i]
		if p.RetentionPolicy == nil {
			p.RetentionPolicy = &api.VolumeRetentionPolicy{}
		}
		if p.RetentionPolicy.WhenDeleted == nil {
			p.RetentionPolicy.WhenDeleted = ptr.To(api.RetentionPolicyDelete)
		}
	}
}
