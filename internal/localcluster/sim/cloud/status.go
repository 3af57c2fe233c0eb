package cloud

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

// PoolStatus is a pool with the state of its nodes.
type PoolStatus struct {
	fleet.Resolved
	Present, Ready int
	// Problem says why the slice is unhealthy ("" when healthy).
	Problem string
}

// Healthy: every host of the slice exists, is Ready and in service.
func (p PoolStatus) Healthy() bool { return p.Problem == "" }

// GroupStatus is a multislice group with the health of its slices.
type GroupStatus struct {
	Name         string
	Size         int
	Pools        []PoolStatus
	HealthySlice int
}

// Complete: at least Size slices of the group are wholly Ready.
func (g GroupStatus) Complete() bool { return g.HealthySlice >= g.Size }

// Health says how many slices are healthy against the group's size, with
// the spares apart: "4 slices + 1 spare healthy", "3 of 4 slices healthy".
func (g GroupStatus) Health() string {
	if spare := g.HealthySlice - g.Size; spare > 0 {
		return fmt.Sprintf("%d slices + %d spare healthy", g.Size, spare)
	}
	return fmt.Sprintf("%d of %d slices healthy", g.HealthySlice, g.Size)
}

// Status joins the pool records with the live nodes.
func (c *Cloud) Status(ctx context.Context) ([]PoolStatus, []GroupStatus, error) {
	pools, err := c.Pools(ctx)
	if err != nil {
		return nil, nil, err
	}
	nodes, err := c.client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: gke.NodePoolLabel})
	if err != nil {
		return nil, nil, fmt.Errorf("list nodes: %w", err)
	}
	return Summarize(pools, nodes.Items, c.Settings.GroupLabels)
}

// Summarize is the pure part of Status.
func Summarize(pools []fleet.Resolved, nodes []corev1.Node, keys fleet.GroupLabels) ([]PoolStatus, []GroupStatus, error) {
	present, ready := map[string]int{}, map[string]int{}
	byPool := map[string][]corev1.Node{}
	for _, n := range nodes {
		pool := n.Labels[gke.NodePoolLabel]
		present[pool]++
		byPool[pool] = append(byPool[pool], n)
		if gke.NodeReady(&n) {
			ready[pool]++
		}
	}
	statuses := make([]PoolStatus, len(pools))
	byName := map[string]PoolStatus{}
	for i, p := range pools {
		problem := gke.SliceProblem(byPool[p.Name], p.Nodes, 0, time.Time{}) // a pool is repaired as soon as it is unfit
		statuses[i] = PoolStatus{Resolved: p, Present: present[p.Name], Ready: ready[p.Name], Problem: problem}
		byName[p.Name] = statuses[i]
	}
	groups, err := fleet.Groups(pools, keys)
	out := make([]GroupStatus, 0, len(groups))
	for _, g := range groups {
		gs := GroupStatus{Name: g.Name, Size: g.Size}
		for _, p := range g.Pools {
			ps := byName[p.Name]
			gs.Pools = append(gs.Pools, ps)
			if ps.Healthy() {
				gs.HealthySlice++
			}
		}
		out = append(out, gs)
	}
	return statuses, out, err
}
