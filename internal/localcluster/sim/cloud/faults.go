package cloud

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

// FaultLabel marks a node hit by an injected fault; the repairer heals the
// whole slice of such a node, as GKE repairs a multi-host slice as one unit.
const FaultLabel = "multislice.dev/fault"

// Fault kinds, as `multislice chaos` names them.
const (
	FaultHost        = "fail-host"
	FaultDeleteHost  = "delete-host"
	FaultMaintenance = "maintenance"
	FaultPreempt     = "preempt"
	FaultPod         = "fail-pod"
)

// Inject applies one fault to a pool and says what it did. host is the
// host a fail-host or delete-host hits (0 to the pool's hosts - 1).
func (c *Cloud) Inject(ctx context.Context, kind, pool string, host int) (string, error) {
	pools, err := c.Pools(ctx)
	if err != nil {
		return "", err
	}
	i := indexOf(pools, pool)
	if i < 0 {
		return "", notFound(pool)
	}
	p := pools[i]
	if host < 0 || host >= p.Nodes {
		return "", fmt.Errorf("--host %d: pool %s has hosts 0 to %d", host, pool, p.Nodes-1)
	}
	node := fleet.NodeName(pool, host)
	if p.Real {
		return c.injectReal(kind, p, node)
	}
	switch kind {
	case FaultHost:
		return fmt.Sprintf("host %s is NotReady (kwok no longer plays its kubelet)", node), c.failHost(ctx, node)
	case FaultDeleteHost:
		if err := c.markBroken(ctx, p.Pool, FaultDeleteHost); err != nil {
			return "", err
		}
		err := c.client.CoreV1().Nodes().Delete(ctx, node, metav1.DeleteOptions{})
		return fmt.Sprintf("host %s deleted", node), err
	case FaultMaintenance:
		for n := 0; n < p.Nodes; n++ {
			if err := c.startMaintenance(ctx, fleet.NodeName(pool, n)); err != nil {
				return "", err
			}
		}
		return fmt.Sprintf("%d hosts of %s are under maintenance (taint %s, label %s=ONGOING)", p.Nodes, pool, gke.ImpendingTerminationTaint, gke.ActiveMaintenanceLabel), nil
	case FaultPreempt:
		if err := c.markBroken(ctx, p.Pool, FaultPreempt); err != nil {
			return "", err
		}
		return fmt.Sprintf("slice %s preempted: its %d hosts are gone", pool, p.Nodes), c.deleteNodes(ctx, p)
	case FaultPod:
		return c.failPod(ctx, pool)
	}
	return "", fmt.Errorf("unknown fault %q: use %s, %s, %s, %s or %s", kind, FaultHost, FaultDeleteHost, FaultMaintenance, FaultPreempt, FaultPod)
}

// injectReal applies a fault to a real pool. The only one is a lost host:
// its kubelet stops, the node goes NotReady when its lease expires, as a
// host that crashed or left the network. The simulated cloud cannot
// delete, remake or fail the pods of real hosts.
func (c *Cloud) injectReal(kind string, p fleet.Resolved, node string) (string, error) {
	if kind != FaultHost {
		return "", fmt.Errorf("%s on %s: it is a pool of real hosts, which the simulated cloud cannot remake; use %s (the host's kubelet stops; `multislice up` starts it again)", kind, p.Name, FaultHost)
	}
	if c.StopKubelet == nil {
		return "", fmt.Errorf("%s on %s: no local cluster runs its real hosts here", kind, p.Name)
	}
	if err := c.StopKubelet(node); err != nil {
		return "", fmt.Errorf("stop the kubelet of %s: %w", node, err)
	}
	return fmt.Sprintf("host %s is lost: its kubelet stopped (it goes NotReady when its lease expires; `multislice up` starts it again)", node), nil
}

func (c *Cloud) failHost(ctx context.Context, node string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:null},"labels":{%q:%q}}}`, fleet.KwokNodeAnnotation, FaultLabel, FaultHost)
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, node, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		return fmt.Errorf("fail host %s: %w", node, err)
	}
	n, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	for i := range n.Status.Conditions {
		if n.Status.Conditions[i].Type == corev1.NodeReady {
			n.Status.Conditions[i] = corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionFalse,
				Reason: "SimulatedHostFailure", Message: "multislice chaos fail-host", LastTransitionTime: now, LastHeartbeatTime: now}
		}
	}
	_, err = c.client.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	return err
}

func (c *Cloud) startMaintenance(ctx context.Context, node string) error {
	n, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	n.Labels[gke.ActiveMaintenanceLabel] = "ONGOING"
	n.Labels[FaultLabel] = FaultMaintenance
	addNotice(n)
	_, err = c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	return err
}

// addNotice taints a node with GKE's maintenance notice, once.
func addNotice(n *corev1.Node) {
	for _, t := range n.Spec.Taints {
		if t.Key == gke.ImpendingTerminationTaint {
			return
		}
	}
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: gke.ImpendingTerminationTaint, Effect: corev1.TaintEffectNoSchedule})
}

// Pool is one node pool by name.
func (c *Cloud) Pool(ctx context.Context, name string) (fleet.Resolved, error) {
	pools, err := c.Pools(ctx)
	if err != nil {
		return fleet.Resolved{}, err
	}
	if i := indexOf(pools, name); i >= 0 {
		return pools[i], nil
	}
	return fleet.Resolved{}, notFound(name)
}

// Notice gives every host of a pool GKE's maintenance notice (the taint
// cloud.google.com/impending-node-termination) before the maintenance
// itself: slice health fails the slice on it, so its JobSet moves while
// the hosts still run.
func (c *Cloud) Notice(ctx context.Context, pool string) error {
	p, err := c.Pool(ctx, pool)
	if err != nil {
		return err
	}
	for i := 0; i < p.Nodes; i++ {
		n, err := c.client.CoreV1().Nodes().Get(ctx, fleet.NodeName(pool, i), metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("maintenance notice on %s: %w", pool, err)
		}
		addNotice(n)
		if _, err := c.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("maintenance notice on %s: %w", n.Name, err)
		}
	}
	return nil
}

// failPod makes one Running pod of the pool exit with code 137, killed as
// by the OOM killer or a hung-TPU watchdog (kwok's pod-exit stage): an
// infrastructure failure, which xpk-style workloads restart on.
func (c *Cloud) failPod(ctx context.Context, pool string) (string, error) {
	for n := 0; ; n++ {
		node := fleet.NodeName(pool, n)
		if _, err := c.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{}); err != nil {
			return "", fmt.Errorf("no Running pod on node pool %s", pool)
		}
		pods, err := c.client.CoreV1().Pods("").List(ctx, metav1.ListOptions{FieldSelector: "spec.nodeName=" + node + ",status.phase=Running"})
		if err != nil {
			return "", err
		}
		if len(pods.Items) == 0 {
			continue
		}
		p := pods.Items[0]
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
			sim.RunAnnotation: "0s", sim.ExitCodeAnnotation: "137"}}})
		if _, err := c.client.CoreV1().Pods(p.Namespace).Patch(ctx, p.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return "", err
		}
		return fmt.Sprintf("pod %s/%s on %s exits with code 137", p.Namespace, p.Name, node), nil
	}
}

// markBroken records on the pool's record that it needs a repair, for
// faults that leave no node to carry the mark.
func (c *Cloud) markBroken(ctx context.Context, p fleet.Pool, kind string) error {
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q,%q:%q}}}`, FaultLabel, kind, FaultLabel+"-since", time.Now().UTC().Format(time.RFC3339Nano))
	_, err := c.client.CoreV1().ConfigMaps(Namespace).Patch(ctx, recordName(p.Name), types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return notFound(p.Name)
	}
	return err
}
