package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/multislice/multislice/internal/cmdline"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

const unavailableKey = "unavailable.json"

// MaxRepairDelay bounds how long the simulated cloud may take to repair.
const MaxRepairDelay = time.Hour

// CheckRepairDelay refuses a repair delay outside 0 to MaxRepairDelay,
// naming the flag that set it.
func CheckRepairDelay(flag string, d time.Duration) error {
	if d < 0 || d > MaxRepairDelay {
		return fmt.Errorf("%s=%s: want 0s to %s (0 repairs at once)", flag, d, MaxRepairDelay)
	}
	return nil
}

// Repairer heals broken slices as GKE does: after Delay the whole slice is
// torn down and created anew, but only when capacity allows.
type Repairer struct {
	Cloud *Cloud
	Delay time.Duration
	// NodeLease is the lease kwok keeps for the fleet's nodes (sim.NodeLease),
	// which sets RecreateAfter.
	NodeLease time.Duration
	Log       io.Writer

	repairs map[string]*repair // by pool: the broken ones
	records corelisters.ConfigMapLister
	nodes   corelisters.NodeLister
}

// repair is where a broken pool's repair stands (memory only: a restarted
// repairer finds the pool broken again and starts over).
type repair struct {
	since    time.Time // first seen broken
	waiting  bool      // said that it waits for capacity
	tornDown time.Time // its hosts are gone (zero: not yet), waiting out RecreateAfter
}

// Run repairs until ctx ends.
func (r *Repairer) Run(ctx context.Context) error {
	r.repairs = map[string]*repair{}
	if err := r.watch(ctx); err != nil {
		return err
	}
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := r.step(ctx, time.Now()); err != nil && ctx.Err() == nil {
			fmt.Fprintf(r.Log, "%s repair: %v\n", time.Now().Format(time.RFC3339), err)
		}
	}, 500*time.Millisecond)
	return nil
}

// watch starts informers on the cloud's records and on the nodes' labels:
// polling full lists of a 1,000-node fleet twice a second would cost the
// apiserver more than the workloads it serves.
func (r *Repairer) watch(ctx context.Context) error {
	records := informers.NewSharedInformerFactoryWithOptions(r.Cloud.client, 0, informers.WithNamespace(Namespace)).Core().V1().ConfigMaps()
	nodes := informers.NewSharedInformerFactoryWithOptions(r.Cloud.client, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = gke.NodePoolLabel })).Core().V1().Nodes()
	if err := nodes.Informer().SetTransform(labelsOnly); err != nil {
		return err
	}
	r.records, r.nodes = records.Lister(), nodes.Lister()
	go records.Informer().Run(ctx.Done())
	go nodes.Informer().Run(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), records.Informer().HasSynced, nodes.Informer().HasSynced) {
		return fmt.Errorf("watch nodes and pool records: stopped before they were read")
	}
	return nil
}

// labelsOnly keeps what repairs look at: a node's name and labels.
func labelsOnly(obj any) (any, error) {
	if n, ok := obj.(*corev1.Node); ok {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, ResourceVersion: n.ResourceVersion}}, nil
	}
	return obj, nil
}

func (r *Repairer) step(ctx context.Context, now time.Time) error {
	records, err := r.records.List(labels.Everything())
	if err != nil {
		return err
	}
	var poolRecords []*corev1.ConfigMap
	marked := map[string]bool{}
	unavailable := map[string]int{}
	for _, cm := range records {
		switch {
		case cm.Labels[PoolLabel] != "":
			poolRecords = append(poolRecords, cm)
			marked[cm.Labels[PoolLabel]] = cm.Annotations[FaultLabel] != ""
		case cm.Name == settingsMap:
			if unavailable, err = unavailableFrom(cm); err != nil {
				return err
			}
		}
	}
	pools, err := poolsFrom(poolRecords)
	if err != nil {
		return err
	}
	all, err := r.nodes.List(labels.Everything())
	if err != nil {
		return err
	}
	// A pool deleted mid-repair leaves nothing behind for one of its name.
	present := map[string]bool{}
	for _, p := range pools {
		present[p.Name] = true
	}
	maps.DeleteFunc(r.repairs, func(pool string, _ *repair) bool { return !present[pool] })
	nodes := map[string][]*corev1.Node{}
	for _, n := range all {
		nodes[n.Labels[gke.NodePoolLabel]] = append(nodes[n.Labels[gke.NodePoolLabel]], n)
	}
	for _, p := range pools {
		if p.Real {
			continue // the simulated cloud cannot remake a real host; `multislice up` restarts its kubelet
		}
		broken := marked[p.Name] || len(nodes[p.Name]) < p.Nodes
		for _, n := range nodes[p.Name] {
			broken = broken || n.Labels[FaultLabel] != ""
		}
		if !broken {
			delete(r.repairs, p.Name)
			continue
		}
		rp := r.repairs[p.Name]
		if rp == nil {
			rp = &repair{since: now}
			r.repairs[p.Name] = rp
		}
		if now.Sub(rp.since) < r.Delay {
			continue
		}
		if free := r.free(p, pools, unavailable); free < p.Nodes {
			if !rp.waiting {
				fmt.Fprintf(r.Log, "%s repair of %s waits for capacity: needs %d %s hosts, %d available\n", now.Format(time.RFC3339), p.Name, p.Nodes, p.Accelerator, free)
				rp.waiting = true
			}
			continue
		}
		if rp.tornDown.IsZero() {
			if err := r.tearDown(ctx, p); err != nil {
				return fmt.Errorf("repair %s: %w", p.Name, err)
			}
			rp.tornDown = time.Now() // the wait counts from the hosts gone
			continue
		}
		if now.Sub(rp.tornDown) < RecreateAfter(r.NodeLease) {
			continue
		}
		if err := r.create(ctx, p); err != nil {
			return fmt.Errorf("repair %s: %w", p.Name, err)
		}
		fmt.Fprintf(r.Log, "%s repaired slice %s: %d hosts recreated after %s\n", now.Format(time.RFC3339), p.Name, p.Nodes, now.Sub(rp.since).Round(time.Second))
		delete(r.repairs, p.Name)
	}
	return nil
}

// free is how many hosts of p's accelerator the cloud can give p now.
func (r *Repairer) free(p fleet.Resolved, pools []fleet.Resolved, unavailable map[string]int) int {
	if p.Shape == nil {
		return p.Nodes
	}
	used := 0
	for _, o := range pools {
		if o.Name != p.Name && o.Accelerator == p.Accelerator {
			used += o.Nodes
		}
	}
	return r.Cloud.Settings.Quota[p.Accelerator] - unavailable[p.Accelerator] - used
}

// RecreateAfter is how long a repaired pool's hosts stay gone before hosts
// of the same names are created again, in a fleet whose nodes hold lease.
// kwok renews a node's lease from a delay queue, every quarter of the lease
// (10.4 s with jitter for a kubelet's 40 s); a renewal in flight when the
// node goes is queued again, and is dropped only when it comes due and
// finds the node unheld. A node of the same name held before that keeps
// both renewals queued, and kwok v0.8.0's queue, indexed by name, then
// stalls every lease behind the stale entry: every node went NotReady once,
// 43-53 s after a repair. So the hosts stay gone until every renewal
// queued for them has come due: 12 s with a kubelet's lease.
func RecreateAfter(lease time.Duration) time.Duration {
	return (sim.RenewedWithin(lease) + 1500*time.Millisecond).Round(time.Second)
}

// RecreateAfterText says how long RecreateAfter is, for help texts.
func RecreateAfterText() string {
	return fmt.Sprintf("%s later (%s in a fleet of more than %d hosts, whose leases are longer)",
		RecreateAfter(sim.KubeletLease), RecreateAfter(sim.NodeLease(sim.LongLeaseHosts+1)), sim.LongLeaseHosts)
}

// tearDown removes the whole slice; create makes it again, fresh. Pods
// bound to the old hosts go with them (the pod garbage collector would
// remove them, later): a repaired host never resumes an old pod.
func (r *Repairer) tearDown(ctx context.Context, p fleet.Resolved) error {
	c := r.Cloud
	for i := 0; i < p.Nodes; i++ {
		pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + fleet.NodeName(p.Name, i)})
		if err != nil {
			return err
		}
		for _, pod := range pods.Items {
			err := c.client.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To(int64(0))})
			if err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
	}
	if err := c.deleteNodes(ctx, p); err != nil {
		return err
	}
	for i := 0; i < 100; i++ {
		left, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: gke.NodePoolLabel + "=" + p.Name})
		if err != nil {
			return err
		}
		if len(left.Items) == 0 {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	// A repaired host is a new machine: its old kubelet's lease goes too.
	// Left to the garbage collector, it could vanish under kwok after kwok
	// took the new node over, and the node would stay Ready with its pods
	// Pending (seen once, on the host that chaos fail-host had failed).
	for i := 0; i < p.Nodes; i++ {
		err := c.client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, fleet.NodeName(p.Name, i), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return nil
}

func (r *Repairer) create(ctx context.Context, p fleet.Resolved) error {
	c := r.Cloud
	if err := c.createNodes(ctx, []fleet.Resolved{p}); err != nil {
		return err
	}
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null,%q:null}}}`, FaultLabel, FaultLabel+"-since")
	_, err := c.client.CoreV1().ConfigMaps(Namespace).Patch(ctx, recordName(p.Name), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	return err
}

// Unavailable is how many hosts per accelerator the cloud has lost (chaos
// capacity): repairs and new pools cannot use them.
func (c *Cloud) Unavailable(ctx context.Context) (map[string]int, error) {
	cm, err := c.client.CoreV1().ConfigMaps(Namespace).Get(ctx, settingsMap, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return unavailableFrom(cm)
}

func unavailableFrom(cm *corev1.ConfigMap) (map[string]int, error) {
	out := map[string]int{}
	if data := cm.Data[unavailableKey]; data != "" {
		if err := json.Unmarshal([]byte(data), &out); err != nil {
			return nil, fmt.Errorf("%s in %s/%s is damaged: %w", unavailableKey, Namespace, settingsMap, err)
		}
	}
	return out, nil
}

// SetUnavailable takes hosts of an accelerator out of (or back into) the cloud.
func (c *Cloud) SetUnavailable(ctx context.Context, accelerator string, hosts int) error {
	if hosts < 0 {
		return fmt.Errorf("--unavailable must not be negative (got %d)", hosts)
	}
	quota, ok := c.Settings.Quota[accelerator]
	if !ok {
		return fmt.Errorf("--accelerator %q: this fleet has no such TPUs", accelerator)
	}
	if hosts > quota {
		return fmt.Errorf("--unavailable %d: the fleet has only %d %s hosts in all: use 0 to %d", hosts, quota, accelerator, quota)
	}
	current, err := c.Unavailable(ctx)
	if err != nil {
		return err
	}
	current[accelerator] = hosts
	data, _ := json.Marshal(current)
	patch, _ := json.Marshal(map[string]any{"data": map[string]string{unavailableKey: string(data)}})
	_, err = c.client.CoreV1().ConfigMaps(Namespace).Patch(ctx, settingsMap, types.MergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("no simulated cloud here")
	}
	return err
}

// RepairFlags is the command line of `multislice cloud-repair`; `up` fills
// it and calls Args.
type RepairFlags struct {
	Delay     time.Duration
	NodeLease time.Duration
}

// Bind defines the flags on fl, each writing into f, at their defaults.
func (f *RepairFlags) Bind(fl *pflag.FlagSet) {
	fl.DurationVar(&f.Delay, "delay", 10*time.Second, "time from a fault to the slice being torn down (it is created anew "+RecreateAfterText()+")")
	fl.DurationVar(&f.NodeLease, "node-lease", sim.KubeletLease, "the lease kwok keeps for the fleet's nodes, which sets how long a torn-down slice stays gone")
}

// Args is the command line that gives cloud-repair f.
func (f RepairFlags) Args() []string { return cmdline.Args(f, (*RepairFlags).Bind) }
