// Package workload implements `multislice workload create|list|delete`,
// each command in gh's shape: an Options struct the flags fill,
// NewCmdX(f, runF) (a test's runF sees the options the command line made)
// and xRun(ctx, opts), which tests call with a fake client.
package workload

import (
	"context"
	"fmt"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/jobsetlist"
	"github.com/multislice/multislice/internal/workload"
)

// NewCmdWorkload is `multislice workload`.
func NewCmdWorkload(f *cli.Factory) *cobra.Command {
	cmd := &cobra.Command{Use: "workload", Short: "Create, list and delete multislice workloads (JobSets)"}
	cmd.AddCommand(NewCmdCreate(f, nil), NewCmdCreatePathways(f, nil), NewCmdList(f, nil), NewCmdDelete(f, nil))
	return cmd
}

// CreateOptions is `workload create`'s command line.
type CreateOptions struct {
	F      *cli.Factory
	Spec   workload.Spec
	DryRun bool
	Output string

	name     string   // --workload, xpk's spelling of NAME
	env      []string // KEY=VALUE each; a value may hold commas
	ttl      int32
	exitCode []int32
}

// NewCmdCreate is `workload create`; runF (nil: createRun) gets the options.
func NewCmdCreate(f *cli.Factory, runF func(context.Context, *CreateOptions) error) *cobra.Command {
	o := &CreateOptions{F: f}
	if runF == nil {
		runF = createRun
	}
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
				o.Spec.Name = args[0]
			case o.name != "":
				o.Spec.Name = o.name
			default:
				return fmt.Errorf("no workload name: give NAME or --workload=NAME")
			}
			var err error
			if o.Spec.Env, err = parseEnv(o.env); err != nil {
				return err
			}
			o.Spec.RestartOnExitCodes = o.exitCode
			o.Spec.TTLSecondsAfterFinished = &o.ttl
			o.Spec.Namespace = f.Namespace(o.Spec.Namespace)
			return runF(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Spec.TPUType, "tpu-type", "", "TPU type of each slice, e.g. v4-16, v5litepod-16, v5p-32, v6e-16 (required)")
	fl.IntVar(&o.Spec.Slices, "num-slices", 1, "number of slices")
	fl.StringVar(&o.Spec.Command, "command", "", "command run by bash -c in every worker (required)")
	fl.StringVar(&o.name, "workload", "", "the workload's name (xpk's spelling of NAME)")
	fl.StringVar(&o.Spec.Image, "image", "python:3.12", "container image")
	fl.StringVar(&o.Spec.Image, "docker-image", "python:3.12", "container image (xpk's spelling of --image)")
	fl.Int32Var(&o.Spec.MaxRestarts, "max-restarts", 0, "restarts of the whole workload before it fails")
	fl.StringVar(&o.Spec.Priority, "priority", "", "PriorityClass: very-low, low, medium, high, very-high")
	fl.StringArrayVar(&o.env, "env", nil, "an environment variable KEY=VALUE, repeatable; the value may contain commas and '=' (e.g. --env XLA_FLAGS=--a=1,--b=2)")
	fl.StringVar(&o.Spec.QueueName, "kueue-queue", "", "Kueue LocalQueue to submit to (label kueue.x-k8s.io/queue-name)")
	fl.Int32SliceVar(&o.exitCode, "restart-on-exit-codes", nil, "exit codes that restart the workload, besides 42 and 127-255; any other failure fails it at once (as xpk)")
	fl.Int32Var(&o.ttl, "ttl-seconds-after-finished", 43200, "delete the finished workload after this many seconds (as xpk: 12 h)")
	fl.StringVar(&o.Spec.ShmSize, "shm-size", "", "size of a memory-backed /dev/shm, e.g. 16Gi (default: the runtime's 64 MiB)")
	fl.Int64Var(&o.Spec.GracePeriod, "termination-grace-period-seconds", 30, "how long pods get to stop on a restart")
	fl.BoolVar(&o.Spec.SuperSlicing, "super-slicing", false, "GKE's dynamic slicing (tpu7x): each slice stitched from adjacent 4x4x4 cubes when scheduled, e.g. --tpu-type tpu7x-4x4x8 (as xpk renders it)")
	fl.BoolVar(&o.Spec.SubSlicing, "sub-slicing", false, "GKE's dynamic slicing (tpu7x): each slice cut from one 4x4x4 cube, --tpu-type tpu7x-2x2x4 or tpu7x-2x4x4 (as xpk renders it)")
	fl.StringVarP(&o.Spec.Namespace, "namespace", "n", "", "namespace (default: the context's)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print the JobSet instead of creating it")
	fl.StringVarP(&o.Output, "output", "o", "", "output format of --dry-run: yaml (default) or json")
	_ = cmd.MarkFlagRequired("tpu-type")
	return cmd
}

func createRun(ctx context.Context, o *CreateOptions) error {
	js, err := workload.Build(o.Spec)
	if err != nil {
		return err
	}
	if o.DryRun {
		return cli.PrintObject(o.F.Out, cli.Output{Format: o.Output}, js)
	}
	c, err := o.F.Objects()
	if err != nil {
		return err
	}
	if err := c.Create(ctx, js); err != nil {
		return fmt.Errorf("create workload %s: %w", js.Name, err)
	}
	fmt.Fprintf(o.F.Out, "workload %s created: %d x %s slices. Follow it with: multislice status %s -w\n",
		js.Name, o.Spec.Slices, o.Spec.TPUType, js.Name)
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

// ListOptions is `workload list`'s command line.
type ListOptions struct {
	F             *cli.Factory
	Namespace     string
	AllNamespaces bool
	Output        cli.Output
}

// NewCmdList is `workload list`; runF (nil: listRun) gets the options.
func NewCmdList(f *cli.Factory, runF func(context.Context, *ListOptions) error) *cobra.Command {
	o := &ListOptions{F: f}
	if runF == nil {
		runF = listRun
	}
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List workloads with their state and restarts",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.Namespace = f.Namespace(o.Namespace)
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "namespace (default: the context's)")
	jobsetlist.AllNamespacesFlag(cmd, &o.AllNamespaces)
	cli.OutputFlag(cmd, &o.Output)
	return cmd
}

func listRun(ctx context.Context, o *ListOptions) error {
	c, err := o.F.Objects()
	if err != nil {
		return err
	}
	items, err := jobsetlist.List(ctx, c, o.Namespace, o.AllNamespaces)
	if err != nil {
		return err
	}
	return jobsetlist.Print(o.F, o.Output, items, o.AllNamespaces)
}

// DeleteOptions is `workload delete`'s command line.
type DeleteOptions struct {
	F         *cli.Factory
	Namespace string
	Name      string
}

// NewCmdDelete is `workload delete`; runF (nil: deleteRun) gets the options.
func NewCmdDelete(f *cli.Factory, runF func(context.Context, *DeleteOptions) error) *cobra.Command {
	o := &DeleteOptions{F: f}
	if runF == nil {
		runF = deleteRun
	}
	cmd := &cobra.Command{
		Use:               "delete NAME",
		ValidArgsFunction: jobsetlist.CompleteNames(f),
		Short:             "Delete a workload, its Jobs and pods",
		Args:              cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Name, o.Namespace = args[0], f.Namespace(o.Namespace)
			return runF(cmd.Context(), o)
		},
	}
	cmd.Flags().StringVarP(&o.Namespace, "namespace", "n", "", "namespace (default: the context's)")
	return cmd
}

func deleteRun(ctx context.Context, o *DeleteOptions) error {
	c, err := o.F.Objects()
	if err != nil {
		return err
	}
	js := &api.JobSet{ObjectMeta: metav1.ObjectMeta{Name: o.Name, Namespace: o.Namespace}}
	if err := c.Delete(ctx, js, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil {
		return fmt.Errorf("delete workload %s: %w", o.Name, err)
	}
	fmt.Fprintf(o.F.Out, "workload %s deleted\n", o.Name)
	return nil
}
