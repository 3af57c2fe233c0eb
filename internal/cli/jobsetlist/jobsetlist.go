// Package jobsetlist is the list of JobSets as `workload list` and
// `status` print it: one row per JobSet (its slices, state, restarts,
// age), of one namespace or, with -A, of all (a NAMESPACE column first,
// as kubectl's).
package jobsetlist

import (
	"context"
	"fmt"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/workload"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Item is one JobSet as the list prints it.
type Item struct {
	Name       string      `json:"name"`
	Namespace  string      `json:"namespace"`
	Slices     int32       `json:"slices"`
	State      string      `json:"state"`
	Restarts   int32       `json:"restarts"`
	Queue      string      `json:"queue,omitempty"`
	Created    metav1.Time `json:"created"`
	Conditions string      `json:"-"`
}

// ResourceName is the JobSet as `kubectl get -o name` names it.
func (l Item) ResourceName() string { return "jobset.jobset.x-k8s.io/" + l.Name }

// Of is js as the list shows it.
func Of(js *api.JobSet) Item {
	l := Item{Name: js.Name, Namespace: js.Namespace, State: workload.State(js), Restarts: js.Status.Restarts,
		Queue: js.Labels[workload.QueueLabel], Created: js.CreationTimestamp}
	for _, rj := range js.Spec.ReplicatedJobs {
		l.Slices += rj.Replicas
	}
	var conds []string
	for _, c := range js.Status.Conditions {
		if c.Status == metav1.ConditionTrue {
			conds = append(conds, c.Type)
		}
	}
	l.Conditions = strings.Join(conds, ",")
	return l
}

// List reads the JobSets of namespace, or of every namespace when all.
func List(ctx context.Context, c client.Client, namespace string, all bool) ([]Item, error) {
	var list api.JobSetList
	var opts []client.ListOption
	if !all {
		opts = append(opts, client.InNamespace(namespace))
	}
	if err := c.List(ctx, &list, opts...); err != nil {
		return nil, fmt.Errorf("list JobSets: %w", err)
	}
	items := make([]Item, 0, len(list.Items))
	for i := range list.Items {
		items = append(items, Of(&list.Items[i]))
	}
	return items, nil
}

// Print prints items (-o and --no-headers as kubectl's); all adds the
// NAMESPACE column first, as `kubectl get -A` does.
func Print(f *cli.Factory, o cli.Output, items []Item, all bool) error {
	return cli.Print(f.Out, o, items, func(wide bool) string {
		h := "NAME\tSLICES\tSTATE\tRESTARTS\tAGE"
		if wide {
			h += "\tQUEUE\tCONDITIONS"
		}
		if all {
			h = "NAMESPACE\t" + h
		}
		return h
	}, func(l Item, wide bool) string {
		row := fmt.Sprintf("%s\t%d\t%s\t%d\t%s", l.Name, l.Slices, l.State, l.Restarts, duration.HumanDuration(time.Since(l.Created.Time)))
		if wide {
			row += fmt.Sprintf("\t%s\t%s", cli.OrDash(l.Queue), cli.OrDash(l.Conditions))
		}
		if all {
			row = l.Namespace + "\t" + row
		}
		return row
	})
}

// AllNamespacesFlag adds kubectl's -A to cmd.
func AllNamespacesFlag(cmd interface {
	Flags() *pflag.FlagSet
}, all *bool) {
	cmd.Flags().BoolVarP(all, "all-namespaces", "A", false, "list the JobSets of every namespace, as kubectl -A")
}

// CompleteNames completes a JobSet name argument (the first only) from
// the namespace the command's -n or the context names, as kubectl
// completes resource names.
func CompleteNames(f *cli.Factory) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		ns := ""
		if fl := cmd.Flags().Lookup("namespace"); fl != nil {
			ns = fl.Value.String()
		}
		c, err := f.Objects()
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		items, err := List(cmd.Context(), c, f.Namespace(ns), false)
		if err != nil {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		var names []string
		for _, l := range items {
			if strings.HasPrefix(l.Name, toComplete) {
				names = append(names, l.Name)
			}
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}
