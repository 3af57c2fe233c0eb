package status

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/view"
	"github.com/multislice/multislice/internal/workload"
)

// Print writes a JobSet's view as tables.
func Print(out io.Writer, v view.JobSet) {
	fmt.Fprintf(out, "JobSet %s/%s: %s, restarts %d (max %d", v.Namespace, v.Name, v.State, v.Restarts, v.MaxRestarts)
	if v.InfrastructureRestarts > 0 {
		fmt.Fprintf(out, "; infrastructure %d", v.InfrastructureRestarts)
	}
	for _, b := range v.Budgets {
		fmt.Fprintf(out, "; %s %d of %d", b.ReplicatedJob, b.Used, b.Max)
	}
	fmt.Fprint(out, ")")
	if v.InPlaceAttempt != nil {
		fmt.Fprintf(out, ", in-place attempt %d (ATTEMPT: restarts/in-place)", *v.InPlaceAttempt)
	}
	fmt.Fprint(out, "\n")
	if v.HotSwap != "" {
		fmt.Fprintf(out, "HOT-SWAP: %s\n", v.HotSwap)
	}
	fmt.Fprint(out, "\n")
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SLICE\tJOB\tNODE POOL\tWORKER\tPOD\tNODE\tPHASE\tATTEMPT")
	for _, s := range v.Slices {
		slice := fmt.Sprintf("slice-%d", s.Slice) // as logs prefixes its lines, and MEGASCALE_SLICE_ID
		if len(s.Workers) == 0 {
			fmt.Fprintf(w, "%s\t%s\t%s\t-\t-\t-\t-\t%d\n", slice, s.Job, dash(s.Domain), s.Attempt)
		}
		for _, wk := range s.Workers {
			attempt := strconv.Itoa(wk.Attempt)
			if wk.InPlaceAttempt != "" {
				attempt += "/" + wk.InPlaceAttempt
			}
			fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", slice, s.Job, dash(s.Domain), wk.Index, wk.Pod, dash(wk.Node), wk.Phase, attempt)
		}
	}
	w.Flush()
	if len(v.Others) > 0 {
		fmt.Fprintln(out, "\nNOT SLICES (their pods request no TPU, e.g. Pathways' head)")
		w = tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
		fmt.Fprintln(w, "JOB\tREPLICATED JOB\tDOMAIN\tPOD\tNODE\tPHASE\tATTEMPT")
		for _, s := range v.Others {
			for _, wk := range s.Workers {
				fmt.Fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%d\n", s.Job, s.ReplicatedJob, dash(s.Domain), wk.Pod, dash(wk.Node), wk.Phase, wk.Attempt)
			}
			if len(s.Workers) == 0 {
				fmt.Fprintf(w, "%s\t%s\t%s\t-\t-\t-\t%d\n", s.Job, s.ReplicatedJob, dash(s.Domain), s.Attempt)
			}
		}
		w.Flush()
	}
	if q := v.Queue; q != nil {
		fmt.Fprintf(out, "\nQUEUE: waiting for capacity, %d of %d (priority %d; served by priority, then age)\n", q.Position, q.Waiting, q.Priority)
		for _, a := range q.Ahead {
			fmt.Fprintf(out, "  ahead: %s/%s (priority %d, %d slices)\n", a.Namespace, a.Name, a.Priority, a.Slices)
		}
	}
	if k := v.Kueue; k != nil {
		fmt.Fprintf(out, "\nKUEUE: Workload %s in LocalQueue %s: %s", k.Workload, k.Queue, k.State)
		if k.Why != "" {
			fmt.Fprintf(out, " (%s)", k.Why)
		}
		fmt.Fprintln(out)
	}
	fmt.Fprintln(out, "\nCONDITIONS")
	for _, c := range v.Conditions {
		fmt.Fprintf(out, "  %s=%s %s: %s\n", c.Type, c.Status, c.Reason, c.Message)
	}
	if len(v.Events) > 0 {
		fmt.Fprintln(out, "\nRECENT EVENTS")
		for _, e := range v.Events {
			fmt.Fprintln(out, "  "+e)
		}
	}
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// jobSetRun prints one JobSet, once or (watch) every two seconds: as
// tables (table, wide) or as an object (yaml, json, name, jsonpath,
// custom-columns). Watching a terminal redraws it; a pipe gets frames, not
// control codes.
func jobSetRun(ctx context.Context, o *Options) error {
	c, err := o.F.Objects()
	if err != nil {
		return err
	}
	for {
		v, err := observe(ctx, c, o.Namespace, o.JobSet)
		if err != nil {
			return err
		}
		switch o.Output.Format {
		case "", "table", "wide":
			switch {
			case o.Watch && cli.IsTerminal(o.F.Out):
				fmt.Fprint(o.F.Out, "\033[H\033[2J") // clear the terminal between frames
			case o.Watch:
				fmt.Fprintf(o.F.Out, "--- %s\n", time.Now().Format("15:04:05"))
			}
			Print(o.F.Out, v)
		default:
			if err := cli.PrintObject(o.F.Out, o.Output, v); err != nil {
				return err
			}
		}
		if !o.Watch {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
}

func observe(ctx context.Context, c client.Client, namespace, name string) (view.JobSet, error) {
	var js api.JobSet
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &js); err != nil {
		return view.JobSet{}, fmt.Errorf("jobset %s/%s: %w", namespace, name, err)
	}
	sel := client.MatchingLabels{api.JobSetNameKey: name}
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(namespace), sel); err != nil {
		return view.JobSet{}, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), sel); err != nil {
		return view.JobSet{}, err
	}
	var events corev1.EventList
	err := c.List(ctx, &events, client.InNamespace(namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("involvedObject.name", name)})
	if err != nil {
		return view.JobSet{}, err
	}
	v := view.Summarize(&js, jobs.Items, pods.Items, events.Items)
	if view.WaitingForCapacity(&js) {
		v.Queue = queuePlace(ctx, c, &js)
	}
	if js.Labels[workload.QueueLabel] != "" {
		v.Kueue = kueueAdmission(ctx, c, &js)
	}
	return v, nil
}

// kueueAdmission finds the JobSet's Workload (owned by it); nil when
// Kueue is not installed, this user may not list Workloads, or Kueue has
// not made one yet.
func kueueAdmission(ctx context.Context, c client.Client, js *api.JobSet) *view.KueueAdmission {
	var list unstructured.UnstructuredList
	list.SetGroupVersionKind(schema.GroupVersionKind{Group: "kueue.x-k8s.io", Version: "v1beta2", Kind: "WorkloadList"})
	if err := c.List(ctx, &list, client.InNamespace(js.Namespace)); err != nil {
		return nil
	}
	return view.WorkloadOf(js, list.Items)
}

// queuePlace reads the queue of every namespace; nil when this user may
// not list it (the rest of the view does not need it).
func queuePlace(ctx context.Context, c client.Client, js *api.JobSet) *view.QueuePlace {
	var all api.JobSetList
	if err := c.List(ctx, &all); err != nil {
		return nil
	}
	var classes schedulingv1.PriorityClassList
	values := map[string]int32{}
	if err := c.List(ctx, &classes); err == nil {
		for _, pc := range classes.Items {
			values[pc.Name] = pc.Value
		}
	}
	return view.PlaceInQueue(js, all.Items, func(name string) (int32, bool) { v, ok := values[name]; return v, ok })
}
