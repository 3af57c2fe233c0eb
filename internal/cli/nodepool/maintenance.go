package nodepool

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/localfleet"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim/cloud"
	"github.com/multislice/multislice/internal/placement"
)

// MaintenanceOptions is `nodepool maintenance`'s command line.
type MaintenanceOptions struct {
	F       *cli.Factory
	Pool    string
	At      string
	Force   bool
	Timeout time.Duration
}

// maxWait bounds every wait of the command (--at, --timeout): a typo must
// not leave it waiting for days.
const maxWait = 24 * time.Hour

// NewCmdMaintenance is `nodepool maintenance`; runF (nil:
// maintenanceRun) gets the options.
func NewCmdMaintenance(f *cli.Factory, runF func(context.Context, *MaintenanceOptions) error) *cobra.Command {
	o := &MaintenanceOptions{F: f}
	if runF == nil {
		runF = maintenanceRun
	}
	cmd := &cobra.Command{
		Use:   "maintenance --nodepool NAME [--at TIME] [--force]",
		Short: "Planned maintenance of a pool: move the JobSet on it first (to a spare, else by hot-swap), then start it",
		Long: `Planned maintenance without surprise (GKE's All Capacity mode holds no spare):
at --at (RFC 3339, or a delay such as 10m; default now) the pool gets the
maintenance notice (taint cloud.google.com/impending-node-termination), which
slice health sees at once: the JobSet on the pool restarts elsewhere, on a
healthy free pool of its group, else by hot-swap on the pools of a JobSet of
lower priority. Only once none of its pods is left on the pool does the
simulated cloud's maintenance start (label
cloud.google.com/active-node-maintenance=ONGOING; the cloud repairs the pool
after its repair delay). When the JobSet cannot move, it says what blocks it
and waits, up to --timeout; --force starts the maintenance anyway.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runF(cmd.Context(), o) },
	}
	cmd.Flags().StringVar(&o.Pool, "nodepool", "", "the node pool to maintain (required)")
	cmd.Flags().StringVar(&o.At, "at", "", "when: an RFC 3339 time or a delay (e.g. 10m); default now; at most 24h away")
	cmd.Flags().BoolVar(&o.Force, "force", false, "start the maintenance even if the JobSet on the pool cannot move")
	cmd.Flags().DurationVar(&o.Timeout, "timeout", 10*time.Minute, "how long to wait for the JobSet to be able to move, and to move (at most 24h)")
	return cmd
}

// startAt reads --at: "" is now, a duration is from now, else RFC 3339.
func startAt(at string, now time.Time) (time.Time, error) {
	if at == "" {
		return now, nil
	}
	if d, err := time.ParseDuration(at); err == nil {
		if d < 0 || d > maxWait {
			return time.Time{}, fmt.Errorf("--at %s: want a delay of 0 to 24h, or an RFC 3339 time", at)
		}
		return now.Add(d), nil
	}
	t, err := time.Parse(time.RFC3339, at)
	if err != nil {
		return time.Time{}, fmt.Errorf("--at %q: want an RFC 3339 time (e.g. %s) or a delay (e.g. 10m)", at, now.Add(10*time.Minute).Format(time.RFC3339))
	}
	if t.After(now.Add(maxWait)) {
		return time.Time{}, fmt.Errorf("--at %s: at most 24h from now", at)
	}
	return t, nil
}

func maintenanceRun(ctx context.Context, o *MaintenanceOptions) error {
	if o.Pool == "" {
		return fmt.Errorf("--nodepool is required: the pool to maintain (see multislice nodepool list)")
	}
	if o.Timeout <= 0 || o.Timeout > maxWait {
		return fmt.Errorf("--timeout %s: want more than 0, at most 24h", o.Timeout)
	}
	at, err := startAt(o.At, time.Now())
	if err != nil {
		return err
	}
	c, err := localfleet.OpenCloud(ctx, o.F, "multislice nodepool maintenance")
	if err != nil {
		return err
	}
	if _, err := c.Pool(ctx, o.Pool); err != nil {
		return fmt.Errorf("--nodepool %s: %w", o.Pool, err)
	}
	objs, err := o.F.Objects()
	if err != nil {
		return err
	}
	if wait := time.Until(at); wait > 0 {
		fmt.Fprintf(o.F.Out, "Maintenance of %s at %s (in %s).\n", o.Pool, at.Format(time.RFC3339), wait.Round(time.Second))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(wait):
		}
	}
	deadline := time.Now().Add(o.Timeout)
	for {
		s, err := observeMaintenance(ctx, objs, o.Pool)
		if err != nil {
			return err
		}
		if s.occupant == nil {
			break // nothing runs there: nothing to move
		}
		how, blocked := moveBy(*s.occupant, s.free, s.others, s.group)
		if blocked == "" || o.Force {
			if blocked != "" {
				fmt.Fprintf(o.F.Out, "--force: %s; starting anyway.\n", blocked)
				break
			}
			if err := move(ctx, o, c, objs, s.occupant.JobSet, how, deadline); err != nil {
				return err
			}
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("maintenance of %s not started: %s (waited %s; --force starts it anyway)", o.Pool, blocked, o.Timeout)
		}
		fmt.Fprintf(o.F.Out, "Waiting: %s.\n", blocked)
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(5 * time.Second):
		}
	}
	out, err := c.Inject(ctx, cloud.FaultMaintenance, o.Pool, 0)
	if err != nil {
		return err
	}
	fmt.Fprintf(o.F.Out, "Maintenance started: %s.\n", out)
	return nil
}

// move gives the pool the maintenance notice and waits until no pod of
// the JobSet is left on it.
func move(ctx context.Context, o *MaintenanceOptions, c *cloud.Cloud, objs client.Client, jobSet, how string, deadline time.Time) error {
	if err := c.Notice(ctx, o.Pool); err != nil {
		return err
	}
	fmt.Fprintf(o.F.Out, "Notice given on %s: moving %s off it (%s).\n", o.Pool, jobSet, how)
	began := time.Now()
	for time.Now().Before(deadline) {
		s, err := observeMaintenance(ctx, objs, o.Pool)
		if err != nil {
			return err
		}
		if s.occupant == nil && s.podsOn == 0 {
			fmt.Fprintf(o.F.Out, "Moved %s off %s in %.1fs.\n", jobSet, o.Pool, time.Since(began).Seconds())
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
	return fmt.Errorf("%s did not leave %s within --timeout %s: see multislice status %s", jobSet, o.Pool, o.Timeout, jobSet)
}

// occupant is a JobSet holding pools of the group.
type occupant struct {
	JobSet    string
	Priority  int32
	Protected bool
}

// maintenanceState is what deciding a move reads: the JobSet on the pool,
// the group's healthy free pools, the other JobSets in the group.
type maintenanceState struct {
	group    string
	occupant *occupant
	podsOn   int
	free     int
	others   []occupant
}

// moveBy says how the JobSet on the pool can move, or what blocks it:
// a free healthy pool of its group, else hot-swap (the lowest-priority
// JobSet of the group below its priority that has not opted out), as the
// manager's placement would choose.
func moveBy(me occupant, free int, others []occupant, group string) (how, blocked string) {
	if free > 0 {
		return fmt.Sprintf("%d free healthy pool(s) in group %s", free, group), ""
	}
	sort.Slice(others, func(i, j int) bool { return others[i].Priority < others[j].Priority })
	for _, o := range others {
		if o.Priority < me.Priority && !o.Protected && !me.Protected {
			return fmt.Sprintf("hot-swap: %s (priority %d < %d)", o.JobSet, o.Priority, me.Priority), ""
		}
	}
	return "", fmt.Sprintf("%s (priority %d) cannot move: group %s has no healthy free pool and no JobSet of lower priority that hot-swap may take",
		me.JobSet, me.Priority, group)
}

// observeMaintenance reads the pool's group, which JobSet holds which of
// its pools, and which are free and healthy.
func observeMaintenance(ctx context.Context, objs client.Client, pool string) (maintenanceState, error) {
	var nodes corev1.NodeList
	if err := objs.List(ctx, &nodes); err != nil {
		return maintenanceState{}, err
	}
	var jobs batchv1.JobList
	if err := objs.List(ctx, &jobs); err != nil {
		return maintenanceState{}, err
	}
	var pods corev1.PodList
	if err := objs.List(ctx, &pods); err != nil {
		return maintenanceState{}, err
	}
	s := maintenanceState{}
	poolOf, fit := map[string]string{}, map[string]bool{}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		p := n.Labels[gke.NodePoolLabel]
		poolOf[n.Name] = p
		if p == pool {
			s.group = n.Labels[gke.MultisliceGroupLabel]
		}
		if _, seen := fit[p]; !seen {
			fit[p] = true
		}
		fit[p] = fit[p] && gke.FitForWork(n)
	}
	inGroup := map[string]bool{}
	for i := range nodes.Items {
		if g := nodes.Items[i].Labels[gke.MultisliceGroupLabel]; g != "" && g == s.group {
			inGroup[nodes.Items[i].Labels[gke.NodePoolLabel]] = true
		}
	}
	used := map[string]bool{}
	holders := map[string]bool{}
	var me string
	for i := range jobs.Items {
		j := &jobs.Items[i]
		d := api.PinnedDomain(j)
		if d == "" || api.JobOutcome(j) != "" || j.DeletionTimestamp != nil || !inGroup[d] {
			continue
		}
		used[d] = true
		js := j.Namespace + "/" + j.Labels[api.JobSetNameKey]
		holders[js] = true
		if d == pool {
			me = js
		}
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		if pl := poolOf[p.Spec.NodeName]; pl == pool && p.Labels[api.JobSetNameKey] != "" {
			s.podsOn++
		} else if gke.RequestsTPU(p.Spec) {
			used[pl] = true
		}
	}
	for p := range inGroup {
		if p != pool && fit[p] && !used[p] {
			s.free++
		}
	}
	values := priorityValues(ctx, objs)
	for js := range holders {
		o, err := occupantOf(ctx, objs, js, values)
		if err != nil {
			return s, err
		}
		if js == me {
			s.occupant = &o
		} else {
			s.others = append(s.others, o)
		}
	}
	return s, nil
}

func occupantOf(ctx context.Context, objs client.Client, name string, values func(string) (int32, bool)) (occupant, error) {
	ns, n, _ := strings.Cut(name, "/")
	var js api.JobSet
	if err := objs.Get(ctx, client.ObjectKey{Namespace: ns, Name: n}, &js); err != nil {
		return occupant{}, client.IgnoreNotFound(err)
	}
	return occupant{JobSet: name, Priority: placement.Priority(&js, values), Protected: js.Annotations[api.HotSwapAnnotation] == "false"}, nil
}

func priorityValues(ctx context.Context, objs client.Client) func(string) (int32, bool) {
	var classes schedulingv1.PriorityClassList
	values := map[string]int32{}
	if err := objs.List(ctx, &classes); err == nil {
		for _, pc := range classes.Items {
			values[pc.Name] = pc.Value
		}
	}
	return func(name string) (int32, bool) { v, ok := values[name]; return v, ok }
}
