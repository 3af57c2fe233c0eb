package integration

import (
	"context"
	"fmt"
	"strings"
	"testing"

	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/podgroups"
	"github.com/multislice/multislice/internal/testobj"
	"github.com/multislice/multislice/test/framework"
)

// spec.scheduling (KEP-969, gate JobSetWorkloadAwareSchedulingAPI): a
// driver's group and a group per slice; the Workload and PodGroups exist
// before the Jobs, whose pods point at them; a suspended JobSet holds none
// and gets them back on resume; a restart keeps them; the webhook refuses
// what cannot be compiled, and anything while the gate is off.
func TestWorkloadAwareScheduling(t *testing.T) {
	gates := features.Defaults()
	gates.WorkloadAwareScheduling = true
	gates.ElasticJobSet = true
	env := framework.StartEnv(t, gates)
	ctx := context.Background()
	ns := env.Namespace(t)
	js := testobj.NewJobSet(ns, "train").ReplicatedJob("driver", 1, 1).ReplicatedJob("slice", 3, 2).FailurePolicy(2).Obj()
	js.Spec.Scheduling = &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{
		{TargetReplicatedJobs: []string{"driver"}},
		{TargetReplicatedJobs: []string{"slice"}, Job: &api.JobScheduling{}},
	}}
	create(t, env, js)
	jobs := waitJobs(t, env, ns, "train", 4)

	groups := func() map[string]int32 { // PodGroup -> its gang's minCount
		var l schedulingv1beta1.PodGroupList
		if err := env.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		out := map[string]int32{}
		for _, g := range l.Items {
			out[g.Name] = g.Spec.SchedulingPolicy.Gang.MinCount
		}
		return out
	}
	have := groups()
	if len(have) != 4 {
		t.Fatalf("PodGroups %v, want the driver's and one per slice", have)
	}
	for _, j := range jobs {
		g := j.Spec.Template.Spec.SchedulingGroup
		if g == nil || g.PodGroupName == nil {
			t.Fatalf("Job %s: pods join no PodGroup", j.Name)
		}
		want := ptr.Deref(j.Spec.Parallelism, 1)
		if have[*g.PodGroupName] != want {
			t.Errorf("Job %s joins %s (minCount %d), want an existing group of minCount %d", j.Name, *g.PodGroupName, have[*g.PodGroupName], want)
		}
		if tmpl := j.Annotations[podgroups.TemplateAnnotation]; tmpl != j.Labels[api.ReplicatedJobNameKey] {
			t.Errorf("Job %s: template annotation %q", j.Name, tmpl)
		}
	}
	var w schedulingv1beta1.Workload
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: podgroups.WorkloadName(js)}, &w); err != nil {
		t.Fatal(err)
	}
	if len(w.Spec.PodGroupTemplates) != 2 || w.Spec.ControllerRef == nil || w.Spec.ControllerRef.Name != "train" {
		t.Errorf("Workload %+v", w.Spec)
	}

	// A restart keeps the groups; the next attempt's pods join them.
	env.SetJobStatus(t, &jobs[1], "Failed", "BackoffLimitExceeded", "a pod failed")
	next := restart(t, env, ns, "train", 1, 4)
	if after := groups(); len(after) != 4 || *next[0].Spec.Template.Spec.SchedulingGroup.PodGroupName == "" {
		t.Errorf("after a restart: PodGroups %v", after)
	}

	// Suspended: no group holds capacity; resumed: they are back.
	suspend := func(s bool) {
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			err := env.Edit(ns, "train", func(cur *api.JobSet) { cur.Spec.Suspend = ptr.To(s) })
			return err == nil, fmt.Sprint(err)
		})
	}
	// protect plays kube-controller-manager's PodGroup protection: a
	// deleted PodGroup goes once no pod uses it (here no pod ever ran).
	protect := func() {
		var l schedulingv1beta1.PodGroupList
		if err := env.Client.List(ctx, &l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		for i := range l.Items {
			if g := &l.Items[i]; g.DeletionTimestamp != nil && len(g.Finalizers) > 0 {
				g.Finalizers = nil
				_ = env.Client.Update(ctx, g)
			}
		}
	}
	suspend(true)
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		protect()
		err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: podgroups.WorkloadName(js)}, &schedulingv1beta1.Workload{})
		return len(groups()) == 0 && apierrors.IsNotFound(err), fmt.Sprintf("PodGroups %v, Workload: %v", groups(), err)
	})
	suspend(false)
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		return len(groups()) == 4, fmt.Sprintf("PodGroups %v", groups())
	})

	// Resized while it runs (ElasticJobSet): a Job fewer, its group goes;
	// what a group it keeps would have to follow is refused.
	resize := func(rj int, replicas, parallelism int32) error {
		return env.Edit(ns, "train", func(cur *api.JobSet) {
			r := &cur.Spec.ReplicatedJobs[rj]
			r.Replicas, r.Template.Spec.Parallelism, r.Template.Spec.Completions = replicas, ptr.To(parallelism), ptr.To(parallelism)
		})
	}
	if err := resize(1, 2, 2); err != nil {
		t.Fatalf("a slice fewer: %v", err)
	}
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		protect()
		return len(groups()) == 3, fmt.Sprintf("PodGroups %v, want the driver's and two slices'", groups())
	})
	if err := resize(1, 2, 3); err == nil || !strings.Contains(err.Error(), `spec.replicatedJobs[1]: Forbidden: resizing it would change the Workload's group template "slice"`) {
		t.Errorf("more pods per slice, each slice's gang of 2 immutable: %v", err)
	}
	if err := resize(0, 2, 1); err == nil || !strings.Contains(err.Error(), `spec.replicatedJobs[0]: Forbidden: resizing it would change the Workload's group template "driver" and PodGroup `) {
		t.Errorf("a second driver, the driver group's gang of 1 immutable: %v", err)
	}

	// Changed while suspended: the suspended Jobs, made in the groups of
	// before (a pod template cannot change its group), are made again in
	// the groups of now when it resumes.
	suspend(true)
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		protect()
		return len(groups()) == 0, fmt.Sprintf("PodGroups %v", groups())
	})
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		err := env.Edit(ns, "train", func(cur *api.JobSet) { cur.Spec.Scheduling.ReplicatedJobs[1].Job = nil }) // both slices in one group
		return err == nil, fmt.Sprint(err)
	})
	suspend(false)
	shared, _ := podgroups.Compile(env.Get(t, ns, "train"))
	sliceGroup := shared.ForJob("slice", 0).Name
	framework.Eventually(t, wait, func(context.Context) (bool, string) {
		env.CollectGarbage(t, ns)
		var in []string
		for _, j := range env.CurrentJobs(t, ns, "train") {
			if g := j.Spec.Template.Spec.SchedulingGroup; j.Labels[api.ReplicatedJobNameKey] == "slice" && g != nil &&
				*g.PodGroupName == sliceGroup && !ptr.Deref(j.Spec.Suspend, false) {
				in = append(in, j.Name)
			}
		}
		return len(in) == 2 && len(groups()) == 2 && groups()[sliceGroup] == 4,
			fmt.Sprintf("running slice Jobs in %s: %v; PodGroups %v", sliceGroup, in, groups())
	})

	// Immutable while it runs.
	err := env.Edit(ns, "train", func(cur *api.JobSet) { cur.Spec.Scheduling.ReplicatedJobs[1].Job = &api.JobScheduling{} })
	if err == nil || !strings.Contains(err.Error(), "spec.scheduling: Forbidden: is immutable while the JobSet runs") {
		t.Errorf("changing spec.scheduling of a running JobSet: %v", err)
	}

	// Refused at admission, naming the field.
	bad := testobj.NewJobSet(ns, "bad").ReplicatedJob("driver", 1, 1).ReplicatedJob("slice", 3, 2).Obj()
	bad.Spec.Scheduling = &api.JobSetScheduling{ReplicatedJobs: []api.ReplicatedJobScheduling{{TargetReplicatedJobs: []string{"slice"}}}}
	if err := env.Client.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), `replicated job "driver" is in no entry`) {
		t.Errorf("a replicated job in no entry: %v", err)
	}
}

// With the gate off, spec.scheduling is refused by name, with the fix.
func TestWorkloadAwareSchedulingGateOff(t *testing.T) {
	env := sharedEnv(t)
	ns := env.Namespace(t)
	js := testobj.NewJobSet(ns, "train").ReplicatedJob("slice", 2, 2).Obj()
	js.Spec.Scheduling = &api.JobSetScheduling{}
	err := env.Client.Create(context.Background(), js)
	if err == nil || !strings.Contains(err.Error(), "spec.scheduling: Forbidden: needs the manager's feature gate JobSetWorkloadAwareSchedulingAPI") {
		t.Errorf("spec.scheduling with the gate off: %v", err)
	}
}
