// Package features owns Multislice's feature gates: their names, defaults
// and what each one changes. The controller and the webhooks read one Gates
// value; `multislice manager --feature-gates` and `multislice up
// --feature-gates` parse it here.
package features

import (
	"fmt"
	"sort"
	"strings"
)

// Gate names, as upstream JobSet spells them.
const (
	RestartJob                = "RestartJob"
	InPlaceRestart            = "InPlaceRestart"
	ElasticJobSet             = "ElasticJobSet"
	ExecutionAttemptsTracking = "ExecutionAttemptsTracking"
	ActiveDeadlineSeconds     = "JobSetActiveDeadlineSeconds"
	MutablePodResources       = "MutablePodResourcesForSuspendedJobSets"
	WorkloadAwareScheduling   = "JobSetWorkloadAwareSchedulingAPI"
	DynamicSlicing            = "DynamicSlicing"
	RestartBudgets            = "RestartBudgets"
)

// Gate describes one feature gate.
type Gate struct {
	Name    string
	Default bool
	// Stage is upstream's maturity ("alpha"), "ahead" for a feature
	// upstream has designed but not built, or "gke" for one of GKE's
	// closed controllers built in the open.
	Stage string
	Doc   string
}

// All lists every gate, in the order help and docs show them.
var All = []Gate{
	{RestartJob, false, "alpha", "failure-policy actions RestartJob and RestartJobAndIgnoreMaxRestarts: restart only the failed Job (at most 1024 replicas per replicated job); off: refused at admission"},
	{InPlaceRestart, false, "alpha", "failurePolicy.restartStrategy InPlaceRestart (KEP-467): healthy pods restart in place through the agent sidecar (multislice agent), a failed slice is recreated alone; off: refused at admission"},
	{ElasticJobSet, false, "alpha", "parallelism/completions (equal, Indexed) and replicas of a running JobSet may change; child Jobs follow (KEP-463); off: immutable"},
	{ExecutionAttemptsTracking, false, "alpha", "status.executionAttempts and the jobset.sigs.k8s.io/execution-attempt annotation (and, ahead of upstream, label) count every start: first start, whole-JobSet restart, resume (KEP-1282, upstream #1283)"},
	{ActiveDeadlineSeconds, false, "alpha", "spec.activeDeadlineSeconds (KEP-1186): past it, counted from status.startTime (suspended time excluded, restarts included), every child Job stops and the JobSet fails (DeadlineExceeded); off: the field is kept but not enforced, and admission warns"},
	{MutablePodResources, false, "alpha", "while a JobSet is suspended its pod templates' container and pod resources may change (KEP-1150: Kueue and DWS right-size it); the change reaches the child Jobs when it resumes (the Jobs' own MutablePodResourcesForSuspendedJobs, Kubernetes 1.36+); off: immutable"},
	{DynamicSlicing, false, "gke", "GKE's dynamic slicing (tpu7x): Jobs whose pods carry cloud.google.com/gke-tpu-slice-topology get Slices (accelerator.gke.io/v1beta1) stitched from adjacent free 4x4x4 sub-blocks and start pinned to them once they are Ready; the manager also judges every Slice's readiness. Needs the Slice CRD (multislice up installs it; on GKE, GKE's slice controller owns it, so leave this off there). On in the local cluster"},
	{RestartBudgets, false, "ahead", "restart budgets (kubernetes-sigs/jobset #976, #1129 B): replicatedJobs[].failurePolicy.maxRestarts bounds the restarts that replicated job's failures cause, and restarts the infrastructure causes (a slice failed by slice health, a hot-swap) count only in status.infrastructureRestarts, bounded by failurePolicy.maxInfrastructureRestarts (unset: unlimited); off: the fields are refused at admission and every restart counts as upstream's"},
	{WorkloadAwareScheduling, false, "alpha", "spec.scheduling (KEP-969): a scheduling.k8s.io/v1beta1 Workload and PodGroups per JobSet, its pods pointed at them, so kube-scheduler gangs them (the API server serving scheduling.k8s.io/v1beta1 and the scheduler, both with GenericWorkload); off: refused at admission"},
}

// Gates are the values in force.
type Gates struct {
	RestartJob, InPlaceRestart, ElasticJobSet, ExecutionAttemptsTracking, ActiveDeadlineSeconds, MutablePodResources bool
	WorkloadAwareScheduling, DynamicSlicing, RestartBudgets                                                          bool
}

// Defaults are the gates with no flag given.
func Defaults() Gates {
	g, _ := Parse("")
	return g
}

// Parse reads "Name=true,Other=false" over the defaults.
func Parse(s string) (Gates, error) {
	values := map[string]bool{}
	for _, g := range All {
		values[g.Name] = g.Default
	}
	for _, kv := range strings.Split(s, ",") {
		kv = strings.TrimSpace(kv)
		if kv == "" {
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if _, known := values[k]; !ok || !known || (v != "true" && v != "false") {
			return Gates{}, fmt.Errorf("--feature-gates: %q: want Name=true|false with Name one of %s", kv, strings.Join(Names(), ", "))
		}
		values[k] = v == "true"
	}
	return Gates{
		RestartJob: values[RestartJob], InPlaceRestart: values[InPlaceRestart],
		ElasticJobSet: values[ElasticJobSet], ExecutionAttemptsTracking: values[ExecutionAttemptsTracking],
		ActiveDeadlineSeconds: values[ActiveDeadlineSeconds], MutablePodResources: values[MutablePodResources],
		WorkloadAwareScheduling: values[WorkloadAwareScheduling], DynamicSlicing: values[DynamicSlicing],
		RestartBudgets: values[RestartBudgets],
	}, nil
}

// Names are the gate names, sorted.
func Names() []string {
	out := make([]string, len(All))
	for i, g := range All {
		out[i] = g.Name
	}
	sort.Strings(out)
	return out
}

// Help is the flag's usage text: one line per gate.
func Help() string {
	var b strings.Builder
	b.WriteString("feature gates, e.g. RestartJob=true,ElasticJobSet=true:")
	for _, g := range All {
		fmt.Fprintf(&b, "\n  %s=true|false (%s, default %v): %s", g.Name, g.Stage, g.Default, g.Doc)
	}
	return b.String()
}
