// Package naming derives every generated name of a JobSet: child Jobs, pod
// hostnames, the subdomain, job keys, the coordinator endpoint and PVCs.
// Names are contracts (scripts and pods rely on them), so they live here only.
package naming

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"

	jobset "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// JobName is <jobset>-<replicated job>-<index>; it does not change across
// restarts, so pod hostnames stay stable.
func JobName(jobSet, replicatedJob string, index int) string {
	return fmt.Sprintf("%s-%s-%d", jobSet, replicatedJob, index)
}

// PodHostname is the hostname the Job controller gives an Indexed pod.
func PodHostname(jobName string, podIndex int) string {
	return fmt.Sprintf("%s-%d", jobName, podIndex)
}

// Subdomain is network.subdomain, or the JobSet name.
func Subdomain(js *jobset.JobSet) string {
	if js.Spec.Network != nil && js.Spec.Network.Subdomain != "" {
		return js.Spec.Network.Subdomain
	}
	return js.Name
}

// JobKey is the SHA-1 hex digest of "<namespace>/<job name>", as upstream
// computes it (its API comment says SHA256; its code uses SHA-1).
func JobKey(namespace, jobName string) string {
	sum := sha1.Sum([]byte(namespace + "/" + jobName))
	return hex.EncodeToString(sum[:])
}

// CoordinatorEndpoint is <jobset>-<rjob>-<jobIndex>-<podIndex>.<subdomain>.
func CoordinatorEndpoint(js *jobset.JobSet) string {
	c := js.Spec.Coordinator
	if c == nil {
		return ""
	}
	return PodHostname(JobName(js.Name, c.ReplicatedJob, c.JobIndex), c.PodIndex) + "." + Subdomain(js)
}

// PVCName is <claim template name>-<jobset name>.
func PVCName(template, jobSet string) string { return template + "-" + jobSet }
