package workload

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/workload"
)

// PathwaysOptions is `workload create-pathways`'s command line.
type PathwaysOptions struct {
	F      *cli.Factory
	Spec   workload.PathwaysSpec
	DryRun bool
	Output string

	env []string
}

// NewCmdCreatePathways is `workload create-pathways`, xpk's command of the
// same name; runF (nil: createPathwaysRun) gets the options.
func NewCmdCreatePathways(f *cli.Factory, runF func(context.Context, *PathwaysOptions) error) *cobra.Command {
	o := &PathwaysOptions{F: f}
	if runF == nil {
		runF = createPathwaysRun
	}
	cmd := &cobra.Command{
		Use:   "create-pathways --workload=NAME --tpu-type=v4-16 --num-slices=2 --command='...'",
		Short: "Write a Pathways JobSet as xpk does (a head on the CPU pool cpu-np, one worker Job per slice) and submit it",
		Long: `Write a Pathways JobSet in the shape xpk renders for ` + "`xpk workload create-pathways`" + `: a pathways-head
replicated job (the proxy and resource manager as sidecars, your JAX program as the main container)
on the node pool cpu-np, exclusive by host, and a worker replicated job with one Job per TPU slice.
Pathways' images are not public: without --proxy-server-image and --server-image the project's
own image plays them (multislice pathways-standin), so the workload runs on the local cluster.`,
		Example: `  multislice workload create-pathways --workload=pw --tpu-type=v4-16 --num-slices=2 --command='python train.py'
  multislice workload create-pathways --workload=pw --tpu-type=v5p-32 --num-slices=4 --headless --dry-run -o yaml
  multislice workload create-pathways --workload=pw --tpu-type=v6e-16 --num-slices=8 --elastic-slices=1 --max-slice-restarts=3 \
      --proxy-server-image=us-docker.pkg.dev/cloud-tpu-v2-images/pathways/proxy_server:latest \
      --server-image=us-docker.pkg.dev/cloud-tpu-v2-images/pathways/server:latest --command='python train.py'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if o.Spec.Name == "" {
				return fmt.Errorf("no workload name: give --workload=NAME")
			}
			var err error
			if o.Spec.Env, err = parseEnv(o.env); err != nil {
				return err
			}
			o.Spec.Namespace = f.Namespace(o.Spec.Namespace)
			return runF(cmd.Context(), o)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Spec.Name, "workload", "", "the workload's name (required)")
	fl.StringVar(&o.Spec.TPUType, "tpu-type", "", "TPU type of each slice, e.g. v4-16, v5p-32, v6e-16, tpu7x-128 (required)")
	fl.IntVar(&o.Spec.Slices, "num-slices", 1, "number of slices (worker Jobs)")
	fl.StringVar(&o.Spec.Image, "docker-image", "python:3.12", "image of your JAX program (the head's main container)")
	fl.StringVar(&o.Spec.Command, "command", "", "your JAX program, run by bash -c in the head (required unless --headless)")
	fl.BoolVar(&o.Spec.Headless, "headless", false, "no program in the head: connect to the proxy from outside (kubectl port-forward ... 29000)")
	fl.StringVar(&o.Spec.ProxyImage, "proxy-server-image", "", "Pathways proxy image (default: the stand-in, "+workload.StandInImage+")")
	fl.StringVar(&o.Spec.ServerImage, "server-image", "", "Pathways server image, the resource manager and the workers (default: the stand-in)")
	fl.StringVar(&o.Spec.WorkerImage, "worker-image", "", "Pathways worker image (default: --server-image)")
	fl.StringVar(&o.Spec.GCSLocation, "pathways-gcs-location", workload.DefaultGCSLocation, "Pathways' scratch location")
	fl.IntVar(&o.Spec.ElasticSlices, "elastic-slices", 0, "slices that may fail without failing the workload")
	fl.IntVar(&o.Spec.MaxSliceRestarts, "max-slice-restarts", 1, "with --elastic-slices: restarts of a slice's workers per host before its Job fails")
	fl.Int32Var(&o.Spec.MaxRestarts, "max-restarts", 0, "restarts of the whole workload before it fails (xpk ignores it for Pathways: 0)")
	fl.StringVar(&o.Spec.Priority, "priority", "", "PriorityClass of the workers: very-low, low, medium, high, very-high")
	fl.StringVar(&o.Spec.QueueName, "kueue-queue", "", "Kueue LocalQueue to submit to (label kueue.x-k8s.io/queue-name)")
	fl.StringArrayVar(&o.env, "env", nil, "an environment variable KEY=VALUE of your program, repeatable")
	fl.Int64Var(&o.Spec.GracePeriod, "termination-grace-period-seconds", 30, "how long the workers get to stop on a restart")
	fl.StringVarP(&o.Spec.Namespace, "namespace", "n", "", "namespace (default: the context's)")
	fl.BoolVar(&o.DryRun, "dry-run", false, "print the JobSet instead of creating it")
	fl.StringVarP(&o.Output, "output", "o", "", "output format of --dry-run: yaml (default) or json")
	_ = cmd.MarkFlagRequired("tpu-type")
	return cmd
}

func createPathwaysRun(ctx context.Context, o *PathwaysOptions) error {
	js, err := workload.BuildPathways(o.Spec)
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
	// The head runs on the CPU pool xpk names; without it nothing of the
	// workload could start (it would wait, saying so): refuse it now.
	var nodes corev1.NodeList
	if err := c.List(ctx, &nodes, client.MatchingLabels{gke.NodePoolLabel: workload.PathwaysCPUPool}, client.Limit(1)); err != nil {
		return fmt.Errorf("look for the node pool %s: %w", workload.PathwaysCPUPool, err)
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("--workload %s: the Pathways head runs on the node pool %s (nodeSelector %s=%s), and the cluster has none: "+
			"add it, e.g. multislice nodepool create %s --machine-type=e2-standard-8 --num-nodes=1 (on GKE: gcloud container node-pools create %s ...)",
			js.Name, workload.PathwaysCPUPool, gke.NodePoolLabel, workload.PathwaysCPUPool, workload.PathwaysCPUPool, workload.PathwaysCPUPool)
	}
	if err := c.Create(ctx, js); err != nil {
		return fmt.Errorf("create workload %s: %w", js.Name, err)
	}
	fmt.Fprintf(o.F.Out, "workload %s created: a Pathways head on %s and %d x %s slices. Follow it with: multislice status %s -w\n",
		js.Name, workload.PathwaysCPUPool, o.Spec.Slices, o.Spec.TPUType, js.Name)
	return nil
}
