package cloud

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

const (
	lockName = "nodepool-operation"
	// lockTTL bounds how long a crashed operation blocks the next one.
	lockTTL = 2 * time.Minute
	// parallelism bounds concurrent node writes.
	parallelism = 32
)

// ErrBusy means another node-pool operation holds the lock.
var ErrBusy = errors.New("another node-pool operation is in progress")

// CreatePool validates a new pool against the catalogue, the existing pools'
// group rules and the free capacity, then records it and creates its nodes.
func (c *Cloud) CreatePool(ctx context.Context, p fleet.Pool) error {
	return c.locked(ctx, "create node pool "+p.Name, func() error {
		r, err := fleet.Resolve(p)
		if err != nil {
			return err
		}
		pools, err := c.Pools(ctx)
		if err != nil {
			return err
		}
		for _, existing := range pools {
			if existing.Name == p.Name {
				return fmt.Errorf("node pool %s already exists: pick another name, or change it with `multislice nodepool update`", p.Name)
			}
		}
		if _, err := fleet.Groups(append(pools, r), c.Settings.GroupLabels); err != nil {
			return err
		}
		if err := c.checkCapacity(r, pools); err != nil {
			return err
		}
		if err := c.writeRecord(ctx, r.Pool, true); err != nil {
			return err
		}
		return c.createNodes(ctx, []fleet.Resolved{r})
	})
}

// UpdatePool merges node labels into a pool (GKE's --node-labels) and its nodes.
func (c *Cloud) UpdatePool(ctx context.Context, name string, labels map[string]string) error {
	return c.locked(ctx, "update node pool "+name, func() error {
		pools, err := c.Pools(ctx)
		if err != nil {
			return err
		}
		i := indexOf(pools, name)
		if i < 0 {
			return notFound(name)
		}
		p := pools[i].Pool
		p.Labels = maps.Clone(p.Labels)
		if p.Labels == nil {
			p.Labels = map[string]string{}
		}
		maps.Copy(p.Labels, labels)
		r, err := fleet.Resolve(p)
		if err != nil {
			return err
		}
		pools[i] = r
		if _, err := fleet.Groups(pools, c.Settings.GroupLabels); err != nil {
			return err
		}
		if err := c.writeRecord(ctx, p, false); err != nil {
			return err
		}
		return c.labelNodes(ctx, r, labels)
	})
}

// DeletePool removes a pool's nodes and its record, freeing its capacity.
func (c *Cloud) DeletePool(ctx context.Context, name string) error {
	return c.locked(ctx, "delete node pool "+name, func() error {
		pools, err := c.Pools(ctx)
		if err != nil {
			return err
		}
		i := indexOf(pools, name)
		if i < 0 {
			return notFound(name)
		}
		if err := c.deleteNodes(ctx, pools[i]); err != nil {
			return err
		}
		err = c.client.CoreV1().ConfigMaps(Namespace).Delete(ctx, recordName(name), metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete node pool record %s: %w", name, err)
		}
		return nil
	})
}

// Provision creates a whole fleet at once, as `multislice up` does.
func (c *Cloud) Provision(ctx context.Context, pools []fleet.Resolved) error {
	for _, p := range pools {
		if err := c.writeRecord(ctx, p.Pool, true); err != nil {
			return err
		}
	}
	return c.createNodes(ctx, pools)
}

func (c *Cloud) checkCapacity(r fleet.Resolved, pools []fleet.Resolved) error {
	if r.Shape == nil {
		return nil // CPU capacity is not simulated
	}
	quota := c.Settings.Quota[r.Accelerator]
	used := 0
	for _, p := range pools {
		if p.Accelerator == r.Accelerator {
			used += p.Nodes
		}
	}
	if used+r.Nodes > quota {
		return fmt.Errorf("no capacity for node pool %s: it needs %d %s hosts and %d of %d are free; delete a pool, or raise capacity.%s in the fleet config",
			r.Name, r.Nodes, r.Accelerator, max(0, quota-used), quota, r.Accelerator)
	}
	return nil
}

func (c *Cloud) createNodes(ctx context.Context, pools []fleet.Resolved) error {
	var nodes []*corev1.Node
	for _, p := range pools {
		if !p.Real { // a real host's kubelet registers its node
			nodes = append(nodes, fleet.Nodes(p)...)
		}
	}
	errs := make([]error, len(nodes))
	workqueue.ParallelizeUntil(ctx, parallelism, len(nodes), func(i int) {
		_, err := c.client.CoreV1().Nodes().Create(ctx, nodes[i], metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			errs[i] = fmt.Errorf("create node %s: %w", nodes[i].Name, err)
		}
	})
	return errors.Join(errs...)
}

func (c *Cloud) labelNodes(ctx context.Context, p fleet.Resolved, labels map[string]string) error {
	patch := map[string]any{"metadata": map[string]any{"labels": labels}}
	data, err := json.Marshal(patch)
	if err != nil {
		return err
	}
	errs := make([]error, p.Nodes)
	workqueue.ParallelizeUntil(ctx, parallelism, p.Nodes, func(i int) {
		name := fleet.NodeName(p.Name, i)
		_, err := c.client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs[i] = fmt.Errorf("label node %s: %w", name, err)
		}
	})
	return errors.Join(errs...)
}

func (c *Cloud) deleteNodes(ctx context.Context, p fleet.Resolved) error {
	errs := make([]error, p.Nodes)
	workqueue.ParallelizeUntil(ctx, parallelism, p.Nodes, func(i int) {
		name := fleet.NodeName(p.Name, i)
		err := c.client.CoreV1().Nodes().Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs[i] = fmt.Errorf("delete node %s: %w", name, err)
		}
	})
	return errors.Join(errs...)
}

// locked runs op while holding the cloud's single operation lock (a Lease),
// refusing at once, with the holder named, if another operation runs.
func (c *Cloud) locked(ctx context.Context, what string, op func() error) error {
	leases := c.client.CoordinationV1().Leases(Namespace)
	host, _ := os.Hostname()
	holder := fmt.Sprintf("%s (%s, pid %d on %s)", what, c.whoOrDefault(), os.Getpid(), host)
	now := metav1.NewMicroTime(time.Now())
	lease := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: lockName, Namespace: Namespace},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity: &holder, AcquireTime: &now, RenewTime: &now,
			LeaseDurationSeconds: ptr.To(int32(lockTTL.Seconds())),
		},
	}
	_, err := leases.Create(ctx, lease, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		current, getErr := leases.Get(ctx, lockName, metav1.GetOptions{})
		if getErr != nil {
			return fmt.Errorf("read node-pool operation lock: %w", getErr)
		}
		if !expired(current) {
			return fmt.Errorf("%w: %s, started %s ago. Only one node-pool operation runs at a time; wait for it to finish and retry",
				ErrBusy, ptr.Deref(current.Spec.HolderIdentity, "unknown"), time.Since(current.Spec.AcquireTime.Time).Round(time.Second))
		}
		// The holder died without releasing: take over, guarded by resourceVersion.
		lease.ResourceVersion = current.ResourceVersion
		_, err = leases.Update(ctx, lease, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			return fmt.Errorf("%w: another command took the lock first; retry", ErrBusy)
		}
	}
	if err != nil {
		return fmt.Errorf("take node-pool operation lock: %w", err)
	}
	defer func() {
		_ = leases.Delete(context.WithoutCancel(ctx), lockName, metav1.DeleteOptions{})
	}()
	return op()
}

func (c *Cloud) whoOrDefault() string {
	if c.Who != "" {
		return c.Who
	}
	return "multislice"
}

func expired(l *coordinationv1.Lease) bool {
	if l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return true
	}
	return time.Since(l.Spec.RenewTime.Time) > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second
}

func indexOf(pools []fleet.Resolved, name string) int {
	for i, p := range pools {
		if p.Name == name {
			return i
		}
	}
	return -1
}

func notFound(name string) error {
	return fmt.Errorf("node pool %s not found: see `multislice nodepool list`", name)
}
