package jobset

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/naming"
	"github.com/multislice/multislice/internal/podgroups"
	"github.com/multislice/multislice/internal/podtemplate"
	"github.com/multislice/multislice/internal/tpujob"
)

var (
	ruleNameRE = regexp.MustCompile(`^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$`)
	// validFailureReasons are the Job failure reasons a rule may name.
	validFailureReasons = []string{
		batchv1.JobReasonBackoffLimitExceeded, batchv1.JobReasonDeadlineExceeded, batchv1.JobReasonFailedIndexes,
		batchv1.JobReasonMaxFailedIndexesExceeded, batchv1.JobReasonPodFailurePolicy,
	}
	// podSuffix stands for the 5 random characters the Job controller adds.
	podSuffix = "-abcde"
)

// ValidateCreate checks a new JobSet with upstream's rules.
func ValidateCreate(js *api.JobSet, gates features.Gates) field.ErrorList {
	spec := field.NewPath("spec")
	var errs field.ErrorList
	name := js.Name
	if name == "" {
		name = js.GenerateName + "xxxxx" // the apiserver appends 5 characters
	}
	rjobs := map[string]*api.ReplicatedJob{}
	for i := range js.Spec.ReplicatedJobs {
		rjobs[js.Spec.ReplicatedJobs[i].Name] = &js.Spec.ReplicatedJobs[i]
	}
	if fp := js.Spec.FailurePolicy; fp != nil && fp.RestartStrategy == api.InPlaceRestart && !gates.InPlaceRestart {
		errs = append(errs, field.Forbidden(spec.Child("failurePolicy", "restartStrategy"),
			"InPlaceRestart needs the InPlaceRestart feature gate; use Recreate or BlockingRecreate"))
	}
	if js.Spec.Scheduling != nil {
		if !gates.WorkloadAwareScheduling {
			errs = append(errs, field.Forbidden(spec.Child("scheduling"), "needs the manager's feature gate "+features.WorkloadAwareScheduling+
				" (multislice manager --feature-gates="+features.WorkloadAwareScheduling+"=true); or remove it"))
		} else {
			_, compileErrs := podgroups.Compile(js)
			errs = append(errs, compileErrs...)
		}
	}
	if n := js.Spec.Network; n != nil && n.Subdomain != "" {
		p := spec.Child("network", "subdomain")
		for _, msg := range append(validation.IsDNS1123Subdomain(n.Subdomain), validation.IsDNS1035Label(n.Subdomain)...) {
			errs = append(errs, field.Invalid(p, n.Subdomain, msg))
		}
	}
	if v, ok := js.Annotations[api.RestartGracePeriodAnnotation]; ok {
		if n, err := strconv.ParseInt(v, 10, 64); err != nil || n < 0 {
			errs = append(errs, field.Invalid(field.NewPath("metadata", "annotations").Key(api.RestartGracePeriodAnnotation), v,
				"must be a whole number of seconds, 0 or more (e.g. \"0\" to stop old pods at once on a restart)"))
		}
	}
	if fp := js.Spec.FailurePolicy; fp != nil && fp.MaxRestarts < 0 {
		errs = append(errs, field.Invalid(spec.Child("failurePolicy", "maxRestarts"), fp.MaxRestarts, "must be 0 or more (0: the first failure fails the JobSet)"))
	}
	errs = append(errs, validateBudgets(js, gates, spec)...)
	errs = append(errs, validateExclusiveKeys(js)...)
	errs = append(errs, tpujob.CheckJobSet(js).Errors...)
	if m := js.Spec.ManagedBy; m != nil {
		errs = append(errs, validateManagedBy(*m, spec.Child("managedBy"))...)
	}
	for i, rj := range js.Spec.ReplicatedJobs {
		p := spec.Child("replicatedJobs").Index(i)
		errs = append(errs, validateReplicatedJob(js, name, i, &rj, p)...)
		if fp := js.Spec.FailurePolicy; fp != nil && fp.RestartStrategy == api.InPlaceRestart && gates.InPlaceRestart {
			errs = append(errs, validateInPlace(&rj, p.Child("template", "spec"))...)
		}
	}
	if sp := js.Spec.SuccessPolicy; sp != nil {
		for i, t := range sp.TargetReplicatedJobs {
			if rjobs[t] == nil {
				errs = append(errs, field.Invalid(spec.Child("successPolicy", "targetReplicatedJobs").Index(i), t,
					"names no replicated job: use one of "+strings.Join(names(js), ", ")))
			}
		}
	}
	errs = append(errs, validateFailurePolicy(js, rjobs, gates, spec.Child("failurePolicy"))...)
	errs = append(errs, validateCoordinator(js, rjobs, spec.Child("coordinator"))...)
	errs = append(errs, validateClaims(js, name, spec.Child("volumeClaimPolicies"))...)
	return errs
}

// validateExclusiveKeys: an exclusive-topology annotation must name a
// node label key, or no node could ever carry it.
func validateExclusiveKeys(js *api.JobSet) field.ErrorList {
	var errs field.ErrorList
	check := func(p *field.Path, annotations map[string]string) {
		if v, ok := annotations[api.ExclusiveKey]; ok {
			for _, msg := range validation.IsQualifiedName(v) {
				errs = append(errs, field.Invalid(p.Key(api.ExclusiveKey), v,
					"must be a node label key such as cloud.google.com/gke-nodepool: "+msg))
			}
		}
	}
	check(field.NewPath("metadata", "annotations"), js.Annotations)
	for i, rj := range js.Spec.ReplicatedJobs {
		check(field.NewPath("spec", "replicatedJobs").Index(i).Child("template", "metadata", "annotations"), rj.Template.Annotations)
	}
	return errs
}

func names(js *api.JobSet) []string {
	out := make([]string, len(js.Spec.ReplicatedJobs))
	for i, rj := range js.Spec.ReplicatedJobs {
		out[i] = rj.Name
	}
	return out
}

func validateManagedBy(m string, p *field.Path) field.ErrorList {
	if len(m) > 63 {
		return field.ErrorList{field.TooLong(p, m, 63)}
	}
	domain, path, ok := strings.Cut(m, "/")
	if !ok || path == "" || len(validation.IsDNS1123Subdomain(domain)) > 0 || strings.ContainsAny(path, " ?#") {
		return field.ErrorList{field.Invalid(p, m, "must be a domain-prefixed path such as example.com/my-controller, or "+api.JobSetControllerName)}
	}
	return nil
}

func validateReplicatedJob(js *api.JobSet, jsName string, i int, rj *api.ReplicatedJob, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rj.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), "name the replicated job: its child Jobs are named <jobset>-<name>-<index>"))
	} else if msgs := validation.IsDNS1035Label(rj.Name); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("name"), rj.Name, msgs[0]))
	}
	spec := rj.Template.Spec
	if parallelism := int64(ptr.Deref(spec.Parallelism, 1)); int64(rj.Replicas)*parallelism > math.MaxInt32 {
		errs = append(errs, field.Invalid(p.Child("replicas"), rj.Replicas,
			fmt.Sprintf("replicas x parallelism (%d) must not exceed %d", int64(rj.Replicas)*parallelism, math.MaxInt32)))
	}
	if rj.GroupName != "" {
		for _, msg := range validation.IsDNS1035Label(rj.GroupName) {
			errs = append(errs, field.Invalid(p.Child("groupName"), rj.GroupName, msg))
		}
	}
	longestJob := naming.JobName(jsName, rj.Name, max(0, int(rj.Replicas)-1))
	if msgs := validation.IsDNS1035Label(longestJob); len(msgs) > 0 {
		errs = append(errs, field.Invalid(p.Child("name"), rj.Name,
			fmt.Sprintf("child Job name %q is invalid (%s): shorten the JobSet or replicated job name", longestJob, msgs[0])))
	} else if ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion && spec.Completions != nil {
		longestPod := naming.PodHostname(longestJob, max(0, int(*spec.Completions)-1)) + podSuffix
		if msgs := validation.IsDNS1035Label(longestPod); len(msgs) > 0 {
			errs = append(errs, field.Invalid(p.Child("name"), rj.Name,
				fmt.Sprintf("pod name %q would be invalid (%s): shorten the JobSet or replicated job name", longestPod, msgs[0])))
		}
	}
	if i == 0 && len(rj.DependsOn) > 0 {
		errs = append(errs, field.Forbidden(p.Child("dependsOn"), "the first replicated job cannot depend on another"))
	}
	earlier := names(js)[:i]
	for k, d := range rj.DependsOn {
		if !slices.Contains(earlier, d.Name) {
			errs = append(errs, field.Invalid(p.Child("dependsOn").Index(k).Child("name"), d.Name,
				"must name a replicated job listed earlier: one of ["+strings.Join(earlier, ", ")+"]"))
		}
	}
	return errs
}

func validateFailurePolicy(js *api.JobSet, rjobs map[string]*api.ReplicatedJob, gates features.Gates, p *field.Path) field.ErrorList {
	fp := js.Spec.FailurePolicy
	if fp == nil {
		return nil
	}
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, r := range fp.Rules {
		rp := p.Child("rules").Index(i)
		switch {
		case len(r.Name) == 0 || len(r.Name) > 128:
			errs = append(errs, field.Invalid(rp.Child("name"), r.Name, "must be 1 to 128 characters"))
		case !ruleNameRE.MatchString(r.Name):
			errs = append(errs, field.Invalid(rp.Child("name"), r.Name, "must start with a letter and contain only letters, digits, '_', ',' and ':' (regex "+ruleNameRE.String()+")"))
		case seen[r.Name]:
			errs = append(errs, field.Duplicate(rp.Child("name"), r.Name))
		}
		seen[r.Name] = true
		for k, reason := range r.OnJobFailureReasons {
			if !slices.Contains(validFailureReasons, reason) {
				errs = append(errs, field.NotSupported(rp.Child("onJobFailureReasons").Index(k), reason, validFailureReasons))
			}
		}
		for k, pattern := range r.OnJobFailureMessagePatterns {
			if _, err := regexp.Compile(pattern); err != nil {
				errs = append(errs, field.Invalid(rp.Child("onJobFailureMessagePatterns").Index(k), pattern, "not a valid RE2 regular expression: "+err.Error()))
			}
		}
		for k, t := range r.TargetReplicatedJobs {
			if rjobs[t] == nil {
				errs = append(errs, field.Invalid(rp.Child("targetReplicatedJobs").Index(k), t,
					"names no replicated job: use one of "+strings.Join(names(js), ", ")))
			}
		}
		if r.Action == api.RestartJob || r.Action == api.RestartJobAndIgnoreMaxRestarts {
			if !gates.RestartJob {
				errs = append(errs, field.Forbidden(rp.Child("action"), string(r.Action)+" needs the RestartJob feature gate; use RestartJobSet"))
			}
			for name, rj := range rjobs {
				if rj.Replicas > 1024 {
					errs = append(errs, field.Invalid(rp.Child("action"), r.Action,
						fmt.Sprintf("single-Job restarts allow at most 1024 replicas per replicated job; %s has %d", name, rj.Replicas)))
				}
			}
		}
	}
	return errs
}

// validateBudgets checks the restart budgets (RestartBudgets gate): each
// replicated job's at least 0 and at most the JobSet's maxRestarts, which
// bounds every counted restart anyway; the infrastructure's at least 0.
func validateBudgets(js *api.JobSet, gates features.Gates, spec *field.Path) field.ErrorList {
	var errs field.ErrorList
	fp := js.Spec.FailurePolicy
	gateOff := "needs the manager's feature gate " + features.RestartBudgets + " (multislice manager --feature-gates=" + features.RestartBudgets + "=true); or remove it"
	if fp != nil && fp.MaxInfrastructureRestarts != nil {
		p := spec.Child("failurePolicy", "maxInfrastructureRestarts")
		if !gates.RestartBudgets {
			errs = append(errs, field.Forbidden(p, gateOff))
		} else if *fp.MaxInfrastructureRestarts < 0 {
			errs = append(errs, field.Invalid(p, *fp.MaxInfrastructureRestarts, "must be 0 or more; leave it unset for no limit"))
		}
	}
	for i, rj := range js.Spec.ReplicatedJobs {
		if rj.FailurePolicy == nil {
			continue
		}
		rp := spec.Child("replicatedJobs").Index(i).Child("failurePolicy")
		p := rp.Child("maxRestarts")
		max := int32(0)
		if fp != nil {
			max = fp.MaxRestarts
		}
		switch n := rj.FailurePolicy.MaxRestarts; {
		case !gates.RestartBudgets:
			errs = append(errs, field.Forbidden(rp, gateOff))
		case n < 0:
			errs = append(errs, field.Invalid(p, n, "must be 0 or more (0: the first failure of "+rj.Name+" fails the JobSet)"))
		case n > max:
			errs = append(errs, field.Invalid(p, n, fmt.Sprintf("must be at most spec.failurePolicy.maxRestarts (%d), which bounds every counted restart: raise that, or lower this", max)))
		}
	}
	return errs
}

func validateCoordinator(js *api.JobSet, rjobs map[string]*api.ReplicatedJob, p *field.Path) field.ErrorList {
	c := js.Spec.Coordinator
	if c == nil {
		return nil
	}
	rj := rjobs[c.ReplicatedJob]
	if rj == nil {
		return field.ErrorList{field.Invalid(p.Child("replicatedJob"), c.ReplicatedJob, "names no replicated job: use one of "+strings.Join(names(js), ", "))}
	}
	var errs field.ErrorList
	if c.JobIndex < 0 || c.JobIndex >= int(rj.Replicas) {
		errs = append(errs, field.Invalid(p.Child("jobIndex"), c.JobIndex, fmt.Sprintf("must be in [0, %d), the replicas of %s", rj.Replicas, rj.Name)))
	}
	spec := rj.Template.Spec
	if ptr.Deref(spec.CompletionMode, batchv1.NonIndexedCompletion) != batchv1.IndexedCompletion || spec.Completions == nil {
		errs = append(errs, field.Invalid(p.Child("replicatedJob"), c.ReplicatedJob, "the coordinator's Job must be Indexed with completions set"))
	} else if c.PodIndex < 0 || c.PodIndex >= int(*spec.Completions) {
		errs = append(errs, field.Invalid(p.Child("podIndex"), c.PodIndex, fmt.Sprintf("must be in [0, %d), the completions of %s", *spec.Completions, rj.Name)))
	}
	if ep := naming.CoordinatorEndpoint(js); len(validation.IsValidLabelValue(ep)) > 0 {
		errs = append(errs, field.Invalid(p, ep, "the coordinator endpoint must be a valid label value (at most 63 characters): shorten the names"))
	}
	return errs
}

func validateClaims(js *api.JobSet, jsName string, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := map[string]bool{}
	for i, policy := range js.Spec.VolumeClaimPolicies {
		for k, t := range policy.Templates {
			tp := p.Index(i).Child("templates").Index(k).Child("metadata", "name")
			if seen[t.Name] {
				errs = append(errs, field.Duplicate(tp, t.Name))
			}
			seen[t.Name] = true
			for _, msg := range validation.IsDNS1123Subdomain(t.Name) {
				errs = append(errs, field.Invalid(tp, t.Name, msg))
			}
			if pvc := naming.PVCName(t.Name, jsName); len(pvc) > 63 {
				errs = append(errs, field.Invalid(tp, t.Name, fmt.Sprintf("claim name %q is longer than 63 characters: shorten the template or JobSet name", pvc)))
			}
			mounted := false
			for _, rj := range js.Spec.ReplicatedJobs {
				pod := rj.Template.Spec.Template.Spec
				for _, v := range pod.Volumes {
					if v.Name == t.Name {
						errs = append(errs, field.Invalid(tp, t.Name, "replicated job "+rj.Name+" already has a volume of this name: rename one of them"))
					}
				}
				for _, cs := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
					for _, c := range cs {
						for _, m := range c.VolumeMounts {
							mounted = mounted || m.Name == t.Name
						}
					}
				}
			}
			if !mounted {
				errs = append(errs, field.Invalid(tp, t.Name, "no container mounts it: add a volumeMount named "+t.Name+" or remove the template"))
			}
		}
	}
	return errs
}

// Warnings are what admission says of a JobSet it accepts: a field kept
// but not acted on while its feature gate is off (as upstream, which
// stores such a field and does not enforce it).
func Warnings(js *api.JobSet, gates features.Gates) []string {
	var out []string
	if js.Spec.ActiveDeadlineSeconds != nil && !gates.ActiveDeadlineSeconds {
		out = append(out, "spec.activeDeadlineSeconds is not enforced: the manager's feature gate "+features.ActiveDeadlineSeconds+
			" is off (multislice manager --feature-gates="+features.ActiveDeadlineSeconds+"=true)")
	}
	return append(out, tpujob.CheckJobSet(js).Advice...)
}

// ValidateUpdate: replicated jobs are immutable, except that while the
// JobSet is (or was) suspended the pod template's labels, annotations,
// nodeSelector, tolerations and schedulingGates may change (the Kueue path),
// and with the ElasticJobSet gate an Indexed replicated job's parallelism
// and completions (kept equal) and its replicas may change while the JobSet
// has not finished; managedBy never changes. The CRD's CEL rules guard the
// other fields.
func ValidateUpdate(old, js *api.JobSet, gates features.Gates) field.ErrorList {
	errs := ValidateCreate(js, gates)
	spec := field.NewPath("spec")
	if !apiequality.Semantic.DeepEqual(old.Spec.ManagedBy, js.Spec.ManagedBy) {
		errs = append(errs, field.Invalid(spec.Child("managedBy"), ptr.Deref(js.Spec.ManagedBy, ""), "is immutable: delete and recreate the JobSet to change it"))
	}
	suspended := ptr.Deref(old.Spec.Suspend, false) || ptr.Deref(js.Spec.Suspend, false)
	if !suspended && !apiequality.Semantic.DeepEqual(old.Spec.Scheduling, js.Spec.Scheduling) {
		errs = append(errs, field.Forbidden(spec.Child("scheduling"), "is immutable while the JobSet runs: suspend it first (its Workload and PodGroups go, and come back as the new spec.scheduling says when it resumes)"))
	}
	if gates.ElasticJobSet && gates.WorkloadAwareScheduling && !suspended && old.Spec.Scheduling != nil {
		errs = append(errs, validateGangResize(old, js)...)
	}
	olds := map[string]*api.ReplicatedJob{}
	for i := range old.Spec.ReplicatedJobs {
		olds[old.Spec.ReplicatedJobs[i].Name] = &old.Spec.ReplicatedJobs[i]
	}
	// Compare the new replicated jobs with what may change masked by the old values.
	masked := make([]api.ReplicatedJob, len(js.Spec.ReplicatedJobs))
	for i := range js.Spec.ReplicatedJobs {
		masked[i] = *js.Spec.ReplicatedJobs[i].DeepCopy()
		o := olds[masked[i].Name]
		if o == nil {
			continue
		}
		if gates.ElasticJobSet {
			errs = append(errs, validateElastic(old, o, &js.Spec.ReplicatedJobs[i], spec.Child("replicatedJobs").Index(i))...)
			if indexed(&masked[i]) {
				masked[i].Replicas = o.Replicas
				masked[i].Template.Spec.Parallelism, masked[i].Template.Spec.Completions = o.Template.Spec.Parallelism, o.Template.Spec.Completions
			}
		}
		if suspended {
			from, to := &o.Template.Spec.Template, &masked[i].Template.Spec.Template
			to.Labels, to.Annotations = from.Labels, from.Annotations
			to.Spec.NodeSelector, to.Spec.Tolerations, to.Spec.SchedulingGates = from.Spec.NodeSelector, from.Spec.Tolerations, from.Spec.SchedulingGates
			if gates.MutablePodResources {
				podtemplate.CopyResources(&to.Spec, &from.Spec)
			}
		}
	}
	if !apiequality.Semantic.DeepEqual(old.Spec.ReplicatedJobs, masked) {
		msg := "field is immutable"
		if !suspended {
			msg += "; while the JobSet is suspended, its pod templates' labels, annotations, nodeSelector, tolerations and schedulingGates may change"
		}
		if !gates.MutablePodResources {
			msg += "; with the " + features.MutablePodResources + " feature gate, the containers' resources too"
		}
		if !gates.ElasticJobSet {
			msg += "; with the ElasticJobSet feature gate, an Indexed replicated job's parallelism, completions and replicas may change"
		}
		errs = append(errs, field.Forbidden(spec.Child("replicatedJobs"), msg))
	}
	return errs
}

func indexed(rj *api.ReplicatedJob) bool {
	return ptr.Deref(rj.Template.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
}

// validateElastic checks a scaling change of one replicated job with
// upstream's rules (KEP-463); replicas follow the same rules (upstream keeps
// them immutable for now; its KEP plans this).
func validateElastic(old *api.JobSet, o, rj *api.ReplicatedJob, p *field.Path) field.ErrorList {
	n, was := rj.Template.Spec, o.Template.Spec
	pChanged, cChanged := !ptr.Equal(n.Parallelism, was.Parallelism), !ptr.Equal(n.Completions, was.Completions)
	rChanged := rj.Replicas != o.Replicas
	if !indexed(rj) || !pChanged && !cChanged && !rChanged {
		return nil // a NonIndexed change falls to "field is immutable"
	}
	if meta.IsStatusConditionTrue(old.Status.Conditions, string(api.JobSetCompleted)) ||
		meta.IsStatusConditionTrue(old.Status.Conditions, string(api.JobSetFailed)) {
		return field.ErrorList{field.Forbidden(p.Child("template", "spec"),
			"parallelism, completions and replicas cannot change once the JobSet has finished (Completed or Failed)")}
	}
	var errs field.ErrorList
	tp := p.Child("template", "spec")
	if pChanged && n.Parallelism != nil && *n.Parallelism < 1 {
		errs = append(errs, field.Invalid(tp.Child("parallelism"), *n.Parallelism, "parallelism must be >= 1"))
	}
	if cChanged && n.Completions != nil && *n.Completions < 1 {
		errs = append(errs, field.Invalid(tp.Child("completions"), *n.Completions, "completions must be >= 1"))
	}
	if (pChanged || cChanged) && n.Parallelism != nil && n.Completions != nil && *n.Parallelism != *n.Completions {
		errs = append(errs, field.Invalid(tp.Child("completions"), *n.Completions,
			"completions must be equal to parallelism for Elastic Indexed Jobs: set both to the same value"))
	}
	if rChanged && rj.Replicas < 1 {
		errs = append(errs, field.Invalid(p.Child("replicas"), rj.Replicas, "replicas must be >= 1: suspend or delete the JobSet to stop it"))
	}
	return errs
}

// validateGangResize refuses a resize of a running JobSet's replicated
// jobs that its Workload or PodGroups would have to follow: Kubernetes
// keeps their gangs immutable, so a group left at its old minCount would
// wait for pods that never come, or gang fewer than the spec says.
func validateGangResize(old, js *api.JobSet) field.ErrorList {
	was, oldErrs := podgroups.Compile(old)
	now, newErrs := podgroups.Compile(js)
	if len(oldErrs)+len(newErrs) > 0 {
		return nil // ValidateCreate names what is wrong with the new one
	}
	type size struct{ replicas, parallelism int32 }
	sizes := map[string]size{}
	for _, rj := range old.Spec.ReplicatedJobs {
		sizes[rj.Name] = size{rj.Replicas, ptr.Deref(rj.Template.Spec.Parallelism, 1)}
	}
	changes := podgroups.Resized(was, now)
	var errs field.ErrorList
	for i, rj := range js.Spec.ReplicatedJobs {
		if sizes[rj.Name] == (size{rj.Replicas, ptr.Deref(rj.Template.Spec.Parallelism, 1)}) {
			continue
		}
		var what []string
		for _, c := range changes {
			if slices.Contains(c.ReplicatedJobs, rj.Name) {
				what = append(what, c.What)
			}
		}
		if len(what) > 0 {
			errs = append(errs, field.Forbidden(field.NewPath("spec", "replicatedJobs").Index(i),
				"resizing it would change "+strings.Join(what, " and ")+", which Kubernetes keeps immutable: suspend the JobSet to resize it "+
					"(its Workload and PodGroups go, and come back sized as the new spec says when it resumes), "+
					"or give the group a gang minCount under spec.scheduling that the new size still meets"))
		}
	}
	return errs
}

// validateInPlace: an in-place restart keeps pods, so their Jobs must never
// fail on their own (the JobSet decides), must replace only pods that have
// failed, and must run every pod at once (the barrier waits for all).
func validateInPlace(rj *api.ReplicatedJob, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	s := rj.Template.Spec
	if s.BackoffLimit == nil || *s.BackoffLimit != math.MaxInt32 {
		errs = append(errs, field.Invalid(p.Child("backoffLimit"), ptrString(s.BackoffLimit),
			fmt.Sprintf("replicatedJob %s: must be %d (MaxInt32) with restartStrategy InPlaceRestart: pods restart in place, the JobSet counts restarts", rj.Name, math.MaxInt32)))
	}
	if s.PodReplacementPolicy == nil || *s.PodReplacementPolicy != batchv1.Failed {
		errs = append(errs, field.Invalid(p.Child("podReplacementPolicy"), ptrString(s.PodReplacementPolicy),
			fmt.Sprintf("replicatedJob %s: must be Failed with restartStrategy InPlaceRestart, so a replacement pod is made only once the old one is gone", rj.Name)))
	}
	if s.Completions == nil || s.Parallelism == nil || *s.Completions != *s.Parallelism {
		errs = append(errs, field.Invalid(p.Child("completions"), ptrString(s.Completions),
			fmt.Sprintf("replicatedJob %s: completions and parallelism must be set and equal with restartStrategy InPlaceRestart (every worker runs at once)", rj.Name)))
	}
	return errs
}

func ptrString[T any](v *T) string {
	if v == nil {
		return "<unset>"
	}
	return fmt.Sprint(*v)
}
