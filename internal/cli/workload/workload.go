// Package workload implements `multislice workload create|list|delete`.
package workload

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/internal/workload"
)

// NewCmdWorkload is `multislice workload`.
func NewCmdWorkload(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "workload", Short: "Create, list and delete multislice workloads (JobSets)"}
	cmd.AddCommand(newCmdCreate(f), newCmdList(f), newCmdDelete(f))
	return cmd
}

type createOptions struct {
	spec     workload.Spec
	name     string   // --workload, xpk's spelling of NAME
	env      []string // KEY=VALUE each; a value may hold commas
	ttl      int32
	dryRun   bool
	output   string
	exitCode []int32
}

func newCmdCreate(f *cli.Factory) *cobra.Command {
	o := &createOptions{}
	cmd := &cobra.Command{
		Use:   "create NAME|--workload=NAME --tpu-type=v4-16 --num-slices=4 --command='...'",
		Short: "Write a multislice JobSet and submit it (or print it with --dry-run -o yaml)",
		Example: `  multislice workload create train --tpu-type=v4-16 --num-slices=4 --command='python train.py'
  multislice workload create train --tpu-type=v5litepod-16 --num-slices=2 --command='python train.py' --dry-run -o yaml
  multislice workload create --workload=train --docker-image=gcr.io/me/trainer:1 --tpu-type=v5p-32 --num-slices=8 \
      --command='python train.py' --kueue-queue=multislice-queue --env XLA_FLAGS=--a=1,--b=2 --max-restarts=50`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 1 && o.name != "" && args[0] != o.name:
				return fmt.Errorf("NAME %q and --workload %q differ: give one of them", args[0], o.name)
			case len(args) == 1:
				o.spec.Name = args[0]
			case o.name != "":
				o.spec.Name = o.name
			default:
				return fmt.Errorf("no workload name: give NAME or --workload=NAME")
			}
			var err error
			if o.spec.Env, err = parseEnv(o.env); err != nil {
				return err
			}
			o.spec.RestartOnExitCodes = o.exitCode
			o.spec.TTLSecondsAfterFinished = &o.ttl
			o.spec.Namespace = f.Namespace(o.spec.Namespace)
			return runCreate(cmd.Context(), f, o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.spec.TPUType, "tpu-type", "", "TPU type of each slice, e.g. v4-16, v5litepod-16, v5p-32, v6e-16 (required)")
	fl.IntVar(&o.spec.Slices, "num-slices", 1, "number of slices")
	fl.StringVar(&o.spec.Command, "command", "", "command run by bash -c in every worker (required)")
	fl.StringVar(&o.name, "workload", "", "the workload's name (xpk's spelling of NAME)")
	fl.StringVar(&o.spec.Image, "image", "python:3.12", "container image")
	fl.StringVar(&o.spec.Image, "docker-image", "python:3.12", "container image (xpk's spelling of --image)")
	fl.Int32Var(&o.spec.MaxRestarts, "max-restarts", 0, "restarts of the whole workload before it fails")
	fl.StringVar(&o.spec.Priority, "priority", "", "PriorityClass: very-low, low, medium, high, very-high")
	fl.StringArrayVar(&o.env, "env", nil, "an environment variable KEY=VALUE, repeatable; the value may contain commas and '=' (e.g. --env XLA_FLAGS=--a=1,--b=2)")
	fl.StringVar(&o.spec.QueueName, "kueue-queue", "", "Kueue LocalQueue to submit to (label kueue.x-k8s.io/queue-name)")
	fl.Int32SliceVar(&o.exitCode, "restart-on-exit-codes", nil, "exit codes that restart the workload, besides 42 and 127-255; any other failure fails it at once (as xpk)")
	fl.Int32Var(&o.ttl, "ttl-seconds-after-finished", 43200, "delete the finished workload after this many seconds (as xpk: 12 h)")
	fl.StringVar(&o.spec.ShmSize, "shm-size", "", "size of a memory-backed /dev/shm, e.g. 16Gi (default: the runtime's 64 MiB)")
	fl.Int64Var(&o.spec.GracePeriod, "termination-grace-period-seconds", 30, "how long pods get to stop on a restart")
	fl.StringVarP(&o.spec.Namespace, "namespace", "n", "", "namespace (default: the context's)")
	fl.BoolVar(&o.dryRun, "dry-run", false, "print the JobSet instead of creating it")
	fl.StringVarP(&o.output, "output", "o", "", "output format of --dry-run: yaml (default) or json")
	_ = cmd.MarkFlagRequired("tpu-type")
	return cmd
}

func runCreate(ctx context.Context, f *cli.Factory, o *createOptions) error {
	js, err := workload.Build(o.spec)
	if err != nil {
		return err
	}
	if o.dryRun {
		return cli.PrintObject(f.Out, o.output, js)
	}
	c, err := newClient(f)
	if err != nil {
		return err
	}
	if err := c.Create(ctx, js); err != nil {
		return fmt.Errorf("create workload %s: %w", js.Name, err)
	}
	fmt.Fprintf(f.Out, "workload %s created: %d x %s slices. Follow it with: multislice status %s -w\n",
		js.Name, o.spec.Slices, o.spec.TPUType, js.Name)
	return nil
}

// parseEnv reads KEY=VALUE flags; the value is everything after the first '='.
func parseEnv(flags []string) (map[string]string, error) {
	env := map[string]string{}
	for _, kv := range flags {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("--env %q: want KEY=VALUE", kv)
		}
		if _, dup := env[k]; dup {
			return nil, fmt.Errorf("--env %s is given twice", k)
		}
		env[k] = v
	}
	return env, nil
}

func newClient(f *cli.Factory) (client.Client, error) {
	cfg, err := f.WorkloadConfig()
	if err != nil {
		return nil, err
	}
	return client.New(cfg, client.Options{Scheme: manager.Scheme()})
}

// listed is one workload as `workload list` prints it.
type listed struct {
	Name       string      `json:"name"`
	Namespace  string      `json:"namespace"`
	Slices     int32       `json:"slices"`
	State      string      `json:"state"`
	Restarts   int32       `json:"restarts"`
	Queue      string      `json:"queue,omitempty"`
	Created    metav1.Time `json:"created"`
	Conditions string      `json:"-"`
}

// ResourceName is the workload's JobSet as `kubectl get -o name` names it.
func (l listed) ResourceName() string { return "jobset.jobset.x-k8s.io/" + l.Name }

func newCmdList(f *cli.Factory) *cobra.Command {
	var ns, output string
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List workloads with their state and restarts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := newClient(f)
			if err != nil {
				return err
			}
			var list api.JobSetList
			if err := c.List(cmd.Context(), &list, client.InNamespace(f.Namespace(ns))); err != nil {
				return err
			}
			items := make([]listed, 0, len(list.Items))
			for _, js := range list.Items {
				l := listed{Name: js.Name, Namespace: js.Namespace, State: workload.State(&js), Restarts: js.Status.Restarts,
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
				items = append(items, l)
			}
			return cli.Print(f.Out, output, items, func(wide bool) string {
				if wide {
					return "NAME\tSLICES\tSTATE\tRESTARTS\tAGE\tQUEUE\tCONDITIONS"
				}
				return "NAME\tSLICES\tSTATE\tRESTARTS\tAGE"
			}, func(l listed, wide bool) string {
				row := fmt.Sprintf("%s\t%d\t%s\t%d\t%s", l.Name, l.Slices, l.State, l.Restarts, duration.HumanDuration(time.Since(l.Created.Time)))
				if wide {
					row += fmt.Sprintf("\t%s\t%s", cli.OrDash(l.Queue), cli.OrDash(l.Conditions))
				}
				return row
			})
		},
	}
	cmd.Flags().StringVarP(&ns, "namespace", "n", "", "namespace (default: the context's)")
	cli.OutputFlag(cmd, &output)
	return cmd
}

func newCmdDelete(f *cli.Factory) *cobra.Command {
	var ns string
	cmd := &cobra.Command{
		Use:   "delete NAME",
		Short: "Delete a workload, its Jobs and pods",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			c, err := newClient(f)
			if err != nil {
				return err
			}
			js := &api.JobSet{ObjectMeta: metav1.ObjectMeta{Name: args[0], Namespace: f.Namespace(ns)}}
			if err := c.Delete(cmd.Context(), js, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
				return fmt.Errorf("delete workload %s: %w", args[0], err)
			}
			fmt.Fprintf(f.Out, "workload %s deleted\n", args[0])
			return nil
		},
	}
	cmd.Flags().StringVarP(&ns, "namespace", "n", "", "namespace (default: the context's)")
	return cmd
}
