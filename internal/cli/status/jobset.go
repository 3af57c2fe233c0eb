package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"text/tabwriter"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/internal/workload"
)

// View is a JobSet at a glance: slices x workers; `status -o json` prints it.
type View struct {
	Name, Namespace, State string
	Restarts, MaxRestarts  int32
	// InPlaceAttempt is the current in-place restart attempt (KEP-467), if any.
	InPlaceAttempt *int32 `json:",omitempty"`
	Slices         []Slice
	Conditions     []metav1.Condition
	Events         []string
}

// Slice is one child Job: its domain and its workers.
type Slice struct {
	Job, ReplicatedJob, Domain string
	Index, Attempt             int
	Workers                    []Worker
}

// Worker is one pod of a slice.
type Worker struct {
	Index            int
	Pod, Node, Phase string
	Attempt          int
	// InPlaceAttempt is the attempt the pod's in-place restart agent reported.
	InPlaceAttempt string `json:",omitempty"`
}

// Summarize is the pure part of `status JOBSET`.
func Summarize(js *api.JobSet, jobs []batchv1.Job, pods []corev1.Pod, events []corev1.Event) View {
	v := View{Name: js.Name, Namespace: js.Namespace, State: workload.State(js), Restarts: js.Status.Restarts, Conditions: js.Status.Conditions,
		InPlaceAttempt: js.Status.CurrentInPlaceRestartAttempt}
	if js.Spec.FailurePolicy != nil {
		v.MaxRestarts = js.Spec.FailurePolicy.MaxRestarts
	}
	byJob := map[string][]Worker{}
	for _, p := range pods {
		if p.DeletionTimestamp != nil {
			continue
		}
		idx, _ := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
		attempt, _ := strconv.Atoi(p.Labels[api.RestartsKey])
		byJob[p.Labels["job-name"]] = append(byJob[p.Labels["job-name"]], Worker{
			Index: idx, Pod: p.Name, Node: p.Spec.NodeName, Phase: string(p.Status.Phase), Attempt: attempt,
			InPlaceAttempt: p.Annotations[api.InPlaceRestartAttemptKey],
		})
	}
	for _, j := range jobs {
		if j.DeletionTimestamp != nil {
			continue
		}
		idx, _ := strconv.Atoi(j.Labels[api.JobIndexKey])
		attempt, _ := strconv.Atoi(j.Labels[api.RestartsKey])
		w := byJob[j.Name]
		sort.Slice(w, func(a, b int) bool { return w[a].Index < w[b].Index })
		v.Slices = append(v.Slices, Slice{Job: j.Name, ReplicatedJob: j.Labels[api.ReplicatedJobNameKey],
			Domain: j.Annotations[api.AssignedDomainAnnotation], Index: idx, Attempt: attempt, Workers: w})
	}
	sort.Slice(v.Slices, func(a, b int) bool {
		if v.Slices[a].ReplicatedJob != v.Slices[b].ReplicatedJob {
			return v.Slices[a].ReplicatedJob < v.Slices[b].ReplicatedJob
		}
		return v.Slices[a].Index < v.Slices[b].Index
	})
	sort.Slice(events, func(a, b int) bool { return eventTime(events[a]).Before(eventTime(events[b])) })
	for _, e := range events[max(0, len(events)-8):] {
		v.Events = append(v.Events, fmt.Sprintf("%s %s %s: %s", eventTime(e).Format("15:04:05"), e.Type, e.Reason, e.Message))
	}
	return v
}

func eventTime(e corev1.Event) time.Time {
	for _, t := range []time.Time{e.EventTime.Time, e.LastTimestamp.Time, e.CreationTimestamp.Time} {
		if !t.IsZero() {
			return t
		}
	}
	return time.Time{}
}

// Print writes the view as tables.
func (v View) Print(out io.Writer) {
	fmt.Fprintf(out, "JobSet %s/%s: %s, restarts %d (max %d)", v.Namespace, v.Name, v.State, v.Restarts, v.MaxRestarts)
	if v.InPlaceAttempt != nil {
		fmt.Fprintf(out, ", in-place attempt %d (ATTEMPT: restarts/in-place)", *v.InPlaceAttempt)
	}
	fmt.Fprint(out, "\n\n")
	w := tabwriter.NewWriter(out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(w, "SLICE\tJOB\tNODE POOL\tWORKER\tPOD\tNODE\tPHASE\tATTEMPT")
	for _, s := range v.Slices {
		slice := fmt.Sprintf("%s-%d", s.ReplicatedJob, s.Index)
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

// RunJobSet prints one JobSet, once or (watch) every two seconds.
func RunJobSet(ctx context.Context, f *cli.Factory, namespace, name, output string, watch bool) error {
	if output != "" && output != "json" {
		return fmt.Errorf("-o %q: use json, or nothing for tables", output)
	}
	cfg, err := f.WorkloadConfig()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		return err
	}
	for {
		v, err := observe(ctx, c, namespace, name)
		if err != nil {
			return err
		}
		if output == "json" {
			enc := json.NewEncoder(f.Out)
			enc.SetIndent("", "  ")
			if err := enc.Encode(v); err != nil {
				return err
			}
		} else {
			if watch {
				fmt.Fprint(f.Out, "\033[H\033[2J") // clear the terminal between frames
			}
			v.Print(f.Out)
		}
		if !watch {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(2 * time.Second):
		}
	}
}

func observe(ctx context.Context, c client.Client, namespace, name string) (View, error) {
	var js api.JobSet
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &js); err != nil {
		return View{}, fmt.Errorf("jobset %s/%s: %w", namespace, name, err)
	}
	sel := client.MatchingLabels{api.JobSetNameKey: name}
	var jobs batchv1.JobList
	if err := c.List(ctx, &jobs, client.InNamespace(namespace), sel); err != nil {
		return View{}, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(namespace), sel); err != nil {
		return View{}, err
	}
	var events corev1.EventList
	err := c.List(ctx, &events, client.InNamespace(namespace),
		client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("involvedObject.name", name)})
	if err != nil {
		return View{}, err
	}
	return Summarize(&js, jobs.Items, pods.Items, events.Items), nil
}
