package chaos

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/localcluster"
	"github.com/multislice/multislice/internal/localcluster/realhost"
	"github.com/multislice/multislice/internal/view"
)

// newCmdKillWorker is `multislice chaos kill-worker`: a worker's process
// dies inside its container on a real host, as a crash would.
func newCmdKillWorker(f *cli.Factory) *cobra.Command {
	var ns string
	var slice, worker int
	cmd := &cobra.Command{
		Use:   "kill-worker JOBSET --slice N --worker N",
		Short: "SIGKILL a worker's processes inside its container, on a real host",
		Long: `Send SIGKILL to every process in the main container of one worker of a JobSet
(slice and worker as in multislice status JOBSET and multislice logs), on a
real host of the local cluster: the process dies as in a crash, its kubelet
sees the container exit, and the JobSet's failure policy restarts it.`,
		Example: `  multislice chaos kill-worker trainer --slice 1 --worker 1`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if slice < 0 || worker < 0 {
				return fmt.Errorf("--slice and --worker are required: the worker to kill (see multislice status %s)", args[0])
			}
			ns = f.Namespace(ns)
			client, _, err := f.Client()
			if err != nil {
				return err
			}
			home, err := localcluster.At(f.Home())
			if err != nil {
				return err
			}
			pods, err := client.CoreV1().Pods(ns).List(cmd.Context(), metav1.ListOptions{LabelSelector: api.JobSetNameKey + "=" + args[0]})
			if err != nil {
				return err
			}
			for i := range pods.Items {
				p := &pods.Items[i]
				w := view.PodWorkerOf(p)
				if w.Slice != slice || w.Worker != worker || p.DeletionTimestamp != nil || len(p.Status.ContainerStatuses) == 0 {
					continue
				}
				container := view.DefaultContainer(p)
				var id string
				for _, s := range p.Status.ContainerStatuses {
					if s.Name == container && s.State.Running != nil {
						_, id, _ = strings.Cut(s.ContainerID, "://")
					}
				}
				pids, err := realhost.KillContainer(home.RealHostsLayout(), id)
				if err != nil {
					return fmt.Errorf("pod %s (container %s): %w", p.Name, container, err)
				}
				fmt.Fprintf(f.Out, "%s killed %s of pod %s on %s (pids %s)\n", stamp(),
					strings.TrimSuffix(w.Prefix(), " "), p.Name, p.Spec.NodeName, joinInts(pids))
				return nil
			}
			return fmt.Errorf("JobSet %s/%s has no running worker %d of slice %d", ns, args[0], worker, slice)
		},
	}
	cmd.Flags().StringVarP(&ns, "namespace", "n", "", "namespace of the JobSet (default: the context's)")
	cmd.Flags().IntVar(&slice, "slice", -1, "the worker's slice (the child Job's global index)")
	cmd.Flags().IntVar(&worker, "worker", -1, "the worker's index in its slice (TPU_WORKER_ID)")
	return cmd
}

func joinInts(ns []int) string {
	s := make([]string, len(ns))
	for i, n := range ns {
		s[i] = strconv.Itoa(n)
	}
	return strings.Join(s, ",")
}
