package kueue

import (
	"cmp"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/workload"
)

// APIVersion is the Kueue API version the objects here are written in.
const APIVersion = Group + "/v1beta2"

// Names of the queues built from the fleet: xpk's, so its workloads
// (and `workload create --kueue-queue multislice-queue`) find them.
const (
	ClusterQueueName = "cluster-queue"
	LocalQueueName   = "multislice-queue"
	// CPUFlavor holds the nodes that have no TPU.
	CPUFlavor = "cpu"
	// SuperSliceTopology is xpk's Topology for dynamic slicing (tpu7x):
	// block, then 4x4x4 sub-block, (ours: its 2x4x4 and 2x2x4 partitions,)
	// then host; the flavors of sub-blocks are scheduled by it (Kueue's
	// topology-aware scheduling).
	SuperSliceTopology = "super-slice-topology"
	// SliceCheck is xpk's AdmissionCheck of GKE's slice controller
	// (controllerName accelerator.gke.io/slice, the manager's here): on
	// the sub-blocks' flavors a Workload is admitted once its Slices are
	// formed and Ready.
	SliceCheck = "ss-kueue-operator"
)

// QueueOptions say where the queues go.
type QueueOptions struct {
	// Namespace is the LocalQueue's.
	Namespace string
}

// Flavor is one ResourceFlavor: the nodes with the same accelerator,
// topology and group, and their capacity.
type Flavor struct {
	Name       string
	NodeLabels map[string]string
	CPU        resource.Quantity
	Memory     resource.Quantity
	Chips      resource.Quantity
	// Topology names the Kueue Topology that schedules it (sub-blocks of
	// dynamic slicing), "" for none.
	Topology string
}

// Flavors groups nodes into flavors: one per TPU group (the node label
// groupLabel names it), so that Kueue's quota matches what one JobSet can
// use (placement keeps a JobSet in one group); outside groups, one per
// accelerator and topology; and one for nodes with no TPU, first, so that
// a workload without chips never takes a TPU flavor's node selector.
func Flavors(nodes []corev1.Node, groupLabel string) []Flavor {
	byName := map[string]*Flavor{}
	for i := range nodes {
		n := &nodes[i]
		f := flavorOf(n, groupLabel)
		have, ok := byName[f.Name]
		if !ok {
			byName[f.Name] = &f
			have = &f
		}
		alloc := n.Status.Allocatable
		have.CPU.Add(alloc[corev1.ResourceCPU])
		have.Memory.Add(alloc[corev1.ResourceMemory])
		have.Chips.Add(alloc[gke.TPUResource])
	}
	out := make([]Flavor, 0, len(byName))
	for _, f := range byName {
		out = append(out, *f)
	}
	slices.SortFunc(out, func(a, b Flavor) int {
		if (a.Name == CPUFlavor) != (b.Name == CPUFlavor) {
			if a.Name == CPUFlavor {
				return -1
			}
			return 1
		}
		return cmp.Compare(a.Name, b.Name)
	})
	return out
}

func flavorOf(n *corev1.Node, groupLabel string) Flavor {
	acc, topo := n.Labels[gke.AcceleratorLabel], n.Labels[gke.TopologyLabel]
	// A sub-block's hosts: one flavor per block, no topology selector
	// (the pods ask for their slice's shape by annotation), scheduled by
	// the block -> sub-block -> host topology.
	if block := n.Labels[gke.TopologyBlockLabel]; block != "" && n.Labels[gke.PartitionCubeLabel] != "" {
		return Flavor{Name: dnsName(acc + "-" + block), NodeLabels: map[string]string{gke.AcceleratorLabel: acc, gke.TopologyBlockLabel: block}, Topology: SuperSliceTopology}
	}
	if acc == "" || topo == "" {
		return Flavor{Name: CPUFlavor}
	}
	labels := map[string]string{gke.AcceleratorLabel: acc, gke.TopologyLabel: topo}
	name := acc + "-" + topo
	if g := n.Labels[groupLabel]; groupLabel != "" && g != "" {
		labels[groupLabel] = g
		name = g
	}
	return Flavor{Name: dnsName(name), NodeLabels: labels}
}

var notDNS = regexp.MustCompile(`[^a-z0-9-]+`)

// dnsName makes s a valid object name: lower case, other characters dashes.
func dnsName(s string) string {
	return strings.Trim(notDNS.ReplaceAllString(strings.ToLower(s), "-"), "-")
}

// Queues are the objects that let JobSets run through Kueue on this fleet:
// a ResourceFlavor per flavor, one ClusterQueue whose quotas are the
// flavors' chips, CPU and memory (preempting lower priorities within it),
// a LocalQueue and the WorkloadPriorityClasses.
func Queues(flavors []Flavor, o QueueOptions) ([]*unstructured.Unstructured, error) {
	if len(flavors) == 0 {
		return nil, fmt.Errorf("the cluster has no nodes: create node pools first")
	}
	var objs []*unstructured.Unstructured
	var quotas, checked []any
	for _, f := range flavors {
		spec := map[string]any{}
		if len(f.NodeLabels) > 0 {
			labels := map[string]any{}
			for k, v := range f.NodeLabels {
				labels[k] = v
			}
			spec["nodeLabels"] = labels
		}
		if f.Topology != "" {
			spec["topologyName"] = f.Topology
			checked = append(checked, f.Name)
		}
		objs = append(objs, object("ResourceFlavor", f.Name, "", spec))
		quotas = append(quotas, map[string]any{"name": f.Name, "resources": []any{
			quota(corev1.ResourceCPU, f.CPU), quota(corev1.ResourceMemory, f.Memory), quota(gke.TPUResource, f.Chips),
		}})
	}
	cq := map[string]any{
		"namespaceSelector": map[string]any{},
		"queueingStrategy":  "BestEffortFIFO",
		"preemption":        map[string]any{"withinClusterQueue": "LowerPriority"},
		"resourceGroups": []any{map[string]any{
			"coveredResources": []any{string(corev1.ResourceCPU), string(corev1.ResourceMemory), gke.TPUResource},
			"flavors":          quotas,
		}},
	}
	if len(checked) > 0 {
		objs = append(objs, dynamicSlicing()...)
		cq["admissionChecksStrategy"] = map[string]any{"admissionChecks": []any{map[string]any{"name": SliceCheck, "onFlavors": checked}}}
	}
	objs = append(objs, object("ClusterQueue", ClusterQueueName, "", cq))
	objs = append(objs, object("LocalQueue", LocalQueueName, o.Namespace, map[string]any{"clusterQueue": ClusterQueueName}))
	// xpk's priorities, as WorkloadPriorityClasses too: a JobSet labelled
	// kueue.x-k8s.io/priority-class=high preempts lower ones in its queue.
	for _, name := range slices.Sorted(maps.Keys(workload.Priorities)) {
		u := object("WorkloadPriorityClass", name, "", nil)
		u.Object["value"] = int64(workload.Priorities[name])
		u.Object["description"] = "xpk's " + name + " priority"
		objs = append(objs, u)
	}
	return objs, nil
}

// dynamicSlicing are xpk's Topology for sub-blocks (block, cube, host),
// with the sub-slice partitions of a cube (GKE's per-shape partition
// labels) between cube and host, and the slice AdmissionCheck, which the
// manager runs.
func dynamicSlicing() []*unstructured.Unstructured {
	var levels []any
	for _, l := range []string{gke.TopologyBlockLabel, gke.PartitionCubeLabel, gke.PartitionHalfLabel, gke.PartitionQuarterLabel, gke.HostnameLabel} {
		levels = append(levels, map[string]any{"nodeLabel": l})
	}
	return []*unstructured.Unstructured{
		object("Topology", SuperSliceTopology, "", map[string]any{"levels": levels}),
		object("AdmissionCheck", SliceCheck, "", map[string]any{"controllerName": slicev1beta1.AdmissionCheckControllerName}),
	}
}

func quota(name corev1.ResourceName, q resource.Quantity) map[string]any {
	return map[string]any{"name": string(name), "nominalQuota": q.String()}
}

// object is a Kueue object of kind; spec nil leaves it without one.
func object(kind, name, namespace string, spec map[string]any) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{}}
	u.SetAPIVersion(APIVersion)
	u.SetKind(kind)
	u.SetName(name)
	u.SetNamespace(namespace)
	if spec != nil {
		u.Object["spec"] = spec
	}
	return u
}
