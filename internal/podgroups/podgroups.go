// Package podgroups compiles a JobSet's spec.scheduling (KEP-969) into the
// scheduling.k8s.io/v1beta1 objects kube-scheduler gangs pods by: one
// Workload per JobSet, its PodGroup templates, and the PodGroups the
// child Jobs' pods join. It is pure: the controller creates what Compile
// says; the webhook refuses what Compile refuses.
package podgroups

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

const (
	// RuntimeConfig and KubernetesGates are what Kubernetes 1.37 needs to
	// serve the Workload and PodGroup API, beta and off by default
	// (kube-apiserver --runtime-config, --feature-gates), to bind a
	// PodGroup's pods together (kube-scheduler --feature-gates: its
	// GangScheduling plugin) and to let a deleted PodGroup go once its pods
	// have (kube-controller-manager --feature-gates: PodGroup protection).
	RuntimeConfig   = "scheduling.k8s.io/v1beta1=true"
	KubernetesGates = "GenericWorkload=true"
	// TemplateAnnotation on a child Job names its group's template in the
	// Workload, as upstream's design has it.
	TemplateAnnotation = "scheduling.k8s.io/group-template-name"
	// maxTemplates is the Workload API's cap on podGroupTemplates.
	maxTemplates = 8
)

// Group is one PodGroup: the pods of every Job of ReplicatedJobs, or of
// the Job JobIndex of the one ReplicatedJob (per-Job mode).
type Group struct {
	Name           string // the PodGroup object
	Template       string // its template in the Workload
	ReplicatedJobs []string
	JobIndex       int // -1: every Job of ReplicatedJobs
	MinCount       int32
}

// Plan is what a JobSet's scheduling compiles to; the zero Plan (no
// spec.scheduling) makes nothing.
type Plan struct {
	Workload  string
	Templates []schedulingv1beta1.PodGroupTemplate
	Groups    []Group
}

// Compile returns the JobSet's plan, or the errors that make it
// impossible, each naming its field under spec.scheduling.
func Compile(js *api.JobSet) (Plan, field.ErrorList) {
	s := js.Spec.Scheduling
	if s == nil {
		return Plan{}, nil
	}
	path := field.NewPath("spec", "scheduling")
	c := compiler{js: js, plan: Plan{Workload: WorkloadName(js)}}
	top := s.SchedulingPolicy != nil || s.SchedulingConstraints != nil || s.DisruptionMode != nil
	switch {
	case top && len(s.ReplicatedJobs) > 0:
		c.errs = append(c.errs, field.Forbidden(path.Child("replicatedJobs"),
			"set either the whole JobSet's group (schedulingPolicy, schedulingConstraints, disruptionMode) or replicatedJobs, not both: groups of groups are not built in this alpha"))
	case len(s.ReplicatedJobs) > 0:
		c.perReplicatedJob(path.Child("replicatedJobs"))
	case sequenced(js):
		// Jobs created one replicated job after another could never fill
		// one gang of the whole JobSet: a group per replicated job.
		if p := s.SchedulingPolicy; p != nil && p.Gang != nil && p.Gang.MinCount != nil {
			c.errs = append(c.errs, field.Forbidden(path.Child("schedulingPolicy", "gang", "minCount"),
				"a whole-JobSet minCount cannot be met when replicated jobs start in order (startupPolicy InOrder or dependsOn): leave it out for a gang per replicated job"))
		}
		for _, rj := range js.Spec.ReplicatedJobs {
			c.shared(path, rj.Name, []string{rj.Name}, s.SchedulingPolicy, s.SchedulingConstraints, s.DisruptionMode, nil)
		}
	default:
		names := make([]string, len(js.Spec.ReplicatedJobs))
		for i, rj := range js.Spec.ReplicatedJobs {
			names[i] = rj.Name
		}
		c.shared(path, js.Name, names, s.SchedulingPolicy, s.SchedulingConstraints, s.DisruptionMode, nil)
	}
	if len(c.plan.Templates) > maxTemplates {
		c.errs = append(c.errs, field.TooMany(path.Child("replicatedJobs"), len(c.plan.Templates), maxTemplates))
	}
	if len(c.errs) > 0 {
		return Plan{}, c.errs
	}
	return c.plan, nil
}

// WorkloadName is the name of the JobSet's Workload.
func WorkloadName(js *api.JobSet) string { return objectName(js, js.Name) }

// ForJob is the group the child Job index of replicated job rj joins (nil:
// none).
func (p Plan) ForJob(rj string, index int) *Group {
	for i := range p.Groups {
		g := &p.Groups[i]
		if slices.Contains(g.ReplicatedJobs, rj) && (g.JobIndex < 0 || g.JobIndex == index) {
			return g
		}
	}
	return nil
}

// Resized lists what going from plan was (the one a running JobSet's
// objects were made from) to plan now (its replicated jobs resized,
// ElasticJobSet) would change of what Kubernetes 1.37 keeps immutable: a
// template of the Workload, or the minCount of a group both plans have.
// Each entry names the replicated jobs it concerns. Groups only added (new
// Jobs, a group each) or gone (Jobs removed) change nothing made.
func Resized(was, now Plan) []Change {
	var out []Change
	templates := map[string]schedulingv1beta1.PodGroupTemplate{}
	for _, t := range was.Templates {
		templates[t.Name] = t
	}
	for _, t := range now.Templates {
		if old, ok := templates[t.Name]; !ok || !equality.Semantic.DeepEqual(old, t) {
			out = append(out, Change{What: fmt.Sprintf("the Workload's group template %q", t.Name), ReplicatedJobs: now.templateTargets(t.Name)})
		}
	}
	groups := map[string]Group{}
	for _, g := range was.Groups {
		groups[g.Name] = g
	}
	for _, g := range now.Groups {
		if old, ok := groups[g.Name]; ok && old.MinCount != g.MinCount {
			out = append(out, Change{What: fmt.Sprintf("PodGroup %s's minCount (%d to %d)", g.Name, old.MinCount, g.MinCount), ReplicatedJobs: g.ReplicatedJobs})
		}
	}
	return out
}

// Change is one immutable thing a resize would change (Resized).
type Change struct {
	What           string
	ReplicatedJobs []string
}

func (p Plan) templateTargets(template string) []string {
	var out []string
	for _, g := range p.Groups {
		if g.Template == template {
			for _, rj := range g.ReplicatedJobs {
				if !slices.Contains(out, rj) {
					out = append(out, rj)
				}
			}
		}
	}
	return out
}

// WorkloadObject is the plan's Workload, which js controls.
func (p Plan) WorkloadObject(js *api.JobSet) *schedulingv1beta1.Workload {
	return &schedulingv1beta1.Workload{
		ObjectMeta: owned(js, p.Workload),
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef:     &schedulingv1beta1.TypedLocalObjectReference{APIGroup: api.GroupVersion.Group, Kind: "JobSet", Name: js.Name},
			PodGroupTemplates: p.Templates,
		},
	}
}

// PodGroupObject is group g of the plan, as its template says, which js
// controls.
func (p Plan) PodGroupObject(js *api.JobSet, g Group) *schedulingv1beta1.PodGroup {
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: owned(js, g.Name),
		Spec:       schedulingv1beta1.PodGroupSpec{WorkloadRef: &schedulingv1beta1.WorkloadReference{WorkloadName: p.Workload, TemplateName: g.Template}},
	}
	for _, t := range p.Templates {
		if t.Name == g.Template {
			pg.Spec.SchedulingPolicy = *t.SchedulingPolicy.DeepCopy()
			pg.Spec.SchedulingConstraints = t.SchedulingConstraints.DeepCopy()
			pg.Spec.DisruptionMode = t.DisruptionMode.DeepCopy()
			for _, c := range t.ResourceClaims {
				pg.Spec.ResourceClaims = append(pg.Spec.ResourceClaims, *c.DeepCopy())
			}
		}
	}
	return pg
}

func owned(js *api.JobSet, name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: js.Namespace,
		Labels:          map[string]string{api.JobSetNameKey: js.Name, api.JobSetUIDKey: string(js.UID)},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(js, api.GroupVersion.WithKind("JobSet"))}}
}

type compiler struct {
	js   *api.JobSet
	plan Plan
	errs field.ErrorList
}

// perReplicatedJob: a group per entry (shared by its targets) or, with
// job, a group per Job of its one target; every ReplicatedJob targeted
// exactly once.
func (c *compiler) perReplicatedJob(path *field.Path) {
	targeted := map[string]bool{}
	for i, e := range c.js.Spec.Scheduling.ReplicatedJobs {
		p := path.Index(i)
		for j, t := range e.TargetReplicatedJobs {
			switch {
			case c.replicatedJob(t) == nil:
				c.errs = append(c.errs, field.NotFound(p.Child("targetReplicatedJobs").Index(j), t))
			case targeted[t]:
				c.errs = append(c.errs, field.Duplicate(p.Child("targetReplicatedJobs").Index(j), t))
			}
			targeted[t] = true
		}
		if len(e.TargetReplicatedJobs) == 0 {
			c.errs = append(c.errs, field.Required(p.Child("targetReplicatedJobs"), "the replicated jobs this group is for"))
			continue
		}
		if e.Job == nil {
			c.shared(p, strings.Join(e.TargetReplicatedJobs, "-"), e.TargetReplicatedJobs, e.SchedulingPolicy, e.SchedulingConstraints, e.DisruptionMode, e.ResourceClaims)
			continue
		}
		if len(e.TargetReplicatedJobs) != 1 || e.SchedulingPolicy != nil || e.SchedulingConstraints != nil || e.DisruptionMode != nil || len(e.ResourceClaims) > 0 {
			c.errs = append(c.errs, field.Invalid(p.Child("job"), "", "a group per Job is for exactly one target replicated job, and the entry's own schedulingPolicy, schedulingConstraints, disruptionMode and resourceClaims stay unset"))
			continue
		}
		c.perJob(p.Child("job"), e.TargetReplicatedJobs[0], e.Job)
	}
	for _, rj := range c.js.Spec.ReplicatedJobs {
		if !targeted[rj.Name] {
			c.errs = append(c.errs, field.Required(path, fmt.Sprintf("replicated job %q is in no entry: with replicatedJobs, every replicated job is targeted exactly once", rj.Name)))
		}
	}
}

// shared makes one template and one PodGroup for every pod of targets.
func (c *compiler) shared(path *field.Path, item string, targets []string, policy *api.SchedulingPolicy,
	constraints *schedulingv1beta1.PodGroupSchedulingConstraints, disruption *schedulingv1beta1.DisruptionMode, claims []schedulingv1beta1.PodGroupResourceClaim) {
	pods := int32(0)
	for _, t := range targets {
		if rj := c.replicatedJob(t); rj != nil {
			pods += rj.Replicas * ptr.Deref(rj.Template.Spec.Parallelism, 1)
		}
	}
	minCount, ok := c.template(path.Child("schedulingPolicy"), item, policy, pods, constraints, disruption, claims)
	if ok {
		name := objectName(c.js, c.js.Name+"-"+item)
		if item == c.js.Name {
			name = c.plan.Workload // the whole JobSet's group bears its name
		}
		c.plan.Groups = append(c.plan.Groups, Group{Name: name, Template: c.plan.Templates[len(c.plan.Templates)-1].Name,
			ReplicatedJobs: targets, JobIndex: -1, MinCount: minCount})
	}
}

// perJob makes one template for the replicated job and one PodGroup per
// Job of it (a PodGroup names its template; all of them share it), so
// that 1,000 slices need 1 template, not 1,000.
func (c *compiler) perJob(path *field.Path, target string, j *api.JobScheduling) {
	rj := c.replicatedJob(target)
	if rj == nil {
		return
	}
	minCount, ok := c.template(path.Child("schedulingPolicy"), target, j.SchedulingPolicy, ptr.Deref(rj.Template.Spec.Parallelism, 1), j.SchedulingConstraints, j.DisruptionMode, j.ResourceClaims)
	if !ok {
		return
	}
	template := c.plan.Templates[len(c.plan.Templates)-1].Name
	for i := range int(rj.Replicas) {
		c.plan.Groups = append(c.plan.Groups, Group{Name: objectName(c.js, fmt.Sprintf("%s-%s-%d", c.js.Name, target, i)), Template: template,
			ReplicatedJobs: []string{target}, JobIndex: i, MinCount: minCount})
	}
}

// template adds a PodGroup template; its gang's minCount defaults to pods
// (the pods of one group) and may not exceed it. It returns the minCount
// (0 for basic).
func (c *compiler) template(path *field.Path, item string, policy *api.SchedulingPolicy, pods int32,
	constraints *schedulingv1beta1.PodGroupSchedulingConstraints, disruption *schedulingv1beta1.DisruptionMode, claims []schedulingv1beta1.PodGroupResourceClaim) (int32, bool) {
	t := schedulingv1beta1.PodGroupTemplate{Name: label(c.js, item), SchedulingConstraints: constraints, DisruptionMode: disruption, ResourceClaims: claims}
	minCount := int32(0)
	switch {
	case policy != nil && policy.Basic != nil && policy.Gang != nil:
		c.errs = append(c.errs, field.Invalid(path, "basic and gang", "choose one: basic or gang"))
		return 0, false
	case policy != nil && policy.Basic != nil:
		t.SchedulingPolicy.Basic = &schedulingv1beta1.BasicSchedulingPolicy{}
	default: // gang, the default
		minCount = pods
		if policy != nil && policy.Gang != nil && policy.Gang.MinCount != nil {
			minCount = *policy.Gang.MinCount
		}
		if minCount < 1 || minCount > pods {
			c.errs = append(c.errs, field.Invalid(path.Child("gang", "minCount"), minCount,
				fmt.Sprintf("must be 1 to the group's %d pods", pods)))
			return 0, false
		}
		t.SchedulingPolicy.Gang = &schedulingv1beta1.GangSchedulingPolicy{MinCount: minCount}
	}
	for _, other := range c.plan.Templates {
		if other.Name == t.Name {
			c.errs = append(c.errs, field.Duplicate(field.NewPath("spec", "scheduling"), fmt.Sprintf("group %q is made twice (e.g. a replicated job named as two joined ones)", t.Name)))
			return 0, false
		}
	}
	c.plan.Templates = append(c.plan.Templates, t)
	return minCount, true
}

func (c *compiler) replicatedJob(name string) *api.ReplicatedJob {
	for i := range c.js.Spec.ReplicatedJobs {
		if c.js.Spec.ReplicatedJobs[i].Name == name {
			return &c.js.Spec.ReplicatedJobs[i]
		}
	}
	return nil
}

// sequenced: replicated jobs start one after another.
func sequenced(js *api.JobSet) bool {
	if p := js.Spec.StartupPolicy; p != nil && p.StartupPolicyOrder == api.InOrder {
		return true
	}
	return slices.ContainsFunc(js.Spec.ReplicatedJobs, func(rj api.ReplicatedJob) bool { return len(rj.DependsOn) > 0 })
}

// objectName is base with a 10-character hash of the JobSet's identity and
// base, cut to a DNS label: deterministic, so the controller finds its
// objects again by name, and apart from objects other controllers name.
func objectName(js *api.JobSet, base string) string {
	sum := sha1.Sum([]byte("JobSet/" + js.Namespace + "/" + js.Name + "/" + base))
	hash := hex.EncodeToString(sum[:])[:10]
	if room := 63 - 1 - len(hash); len(base) > room {
		base = strings.TrimRight(base[:room], "-.")
	}
	return base + "-" + hash
}

// label is a template name: item, or, past a DNS label's 63 characters,
// its hashed short form.
func label(js *api.JobSet, item string) string {
	if len(item) <= 63 {
		return item
	}
	return objectName(js, item)
}
