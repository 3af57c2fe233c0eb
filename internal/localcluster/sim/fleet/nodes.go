package fleet

import (
	"fmt"
	"hash/fnv"
	"maps"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	slicev1beta1 "github.com/multislice/multislice/api/accelerator/v1beta1"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/slicing"
)

const (
	// KwokNodeAnnotation hands a node to kwok, which plays its kubelet.
	KwokNodeAnnotation = "kwok.x-k8s.io/node"
	// SimulatedLabel marks every node of the simulated fleet.
	SimulatedLabel = "multislice.dev/simulated"
	// RealHostLabel marks the nodes of real pools: a real kubelet runs them.
	RealHostLabel = "multislice.dev/real-host"
)

// NodeName is the name of host i of a pool, stable across repairs so that a
// repaired slice comes back as the same hosts, as on GKE.
func NodeName(pool string, i int) string { return fmt.Sprintf("gke-%s-%d", pool, i) }

// Nodes renders the Node objects of a pool with GKE's labels, taint and
// capacity. Status conditions are left to kwok, which reports them Ready.
// A real pool's nodes are what its kubelets register: the labels, the
// taint and the TPU chips, not kwok's annotation or made-up CPU figures.
func Nodes(p Resolved) []*corev1.Node {
	nodes := make([]*corev1.Node, p.Nodes)
	for i := range nodes {
		nodes[i] = node(p, i)
	}
	return nodes
}

// NodeIP is a stable address for a simulated host, derived from its name
// within 10.128.0.0/10, so that host-network pods have an IP.
func NodeIP(name string) string {
	h := fnv.New32a()
	h.Write([]byte(name))
	v := h.Sum32()
	return fmt.Sprintf("10.%d.%d.%d", 128+(v>>16)&63, (v>>8)&255, 1+v&127)
}

func node(p Resolved, i int) *corev1.Node {
	name := NodeName(p.Name, i)
	labels := map[string]string{
		"kubernetes.io/hostname": name,
		"kubernetes.io/os":       "linux",
		"kubernetes.io/arch":     "amd64",
		"type":                   "kwok",
		SimulatedLabel:           "true",
		gke.NodePoolLabel:        p.Name,
		gke.InstanceTypeLabel:    p.MachineType,
	}
	for k, v := range p.Labels {
		labels[k] = v
	}
	if cube, subBlock := p.Labels[gke.PartitionCubeLabel]; subBlock {
		labels[slicev1beta1.HostPositionLabel] = slicing.HostPos(i).String() // a sub-slice is a box of them
		maps.Copy(labels, slicing.SubPartitions(cube, i))
	}
	cpu, memGi := cpuMachine(p.MachineType)
	capacity := corev1.ResourceList{
		corev1.ResourceCPU:    *resource.NewQuantity(int64(cpu), resource.DecimalSI),
		corev1.ResourceMemory: resource.MustParse(strconv.Itoa(memGi) + "Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
	var taints []corev1.Taint
	if s := p.Shape; s != nil {
		labels[gke.AcceleratorLabel] = p.Accelerator
		labels[gke.TopologyLabel] = s.Topology.String()
		labels[gke.AcceleratorCountLabel] = strconv.Itoa(s.ChipsPerHost)
		capacity[corev1.ResourceCPU] = resource.MustParse("200")
		capacity[corev1.ResourceMemory] = resource.MustParse("400Gi")
		capacity[gke.TPUResource] = *resource.NewQuantity(int64(s.ChipsPerHost), resource.DecimalSI)
		taints = append(taints, corev1.Taint{Key: gke.TPUTaintKey, Value: gke.TPUTaintValue, Effect: corev1.TaintEffectNoSchedule})
	}
	annotations := map[string]string{KwokNodeAnnotation: "fake", "node.alpha.kubernetes.io/ttl": "0"}
	if p.Real {
		delete(labels, "type")
		delete(labels, SimulatedLabel)
		labels[RealHostLabel] = "true"
		annotations = nil
		capacity = corev1.ResourceList{}
		if p.Shape != nil {
			capacity[gke.TPUResource] = *resource.NewQuantity(int64(p.Shape.ChipsPerHost), resource.DecimalSI)
		}
	}
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      labels,
			Annotations: annotations,
		},
		Spec: corev1.NodeSpec{Taints: taints},
		Status: corev1.NodeStatus{
			Capacity:    capacity,
			Allocatable: capacity.DeepCopy(),
			Addresses: []corev1.NodeAddress{
				{Type: corev1.NodeInternalIP, Address: NodeIP(name)},
				{Type: corev1.NodeHostName, Address: name},
			},
		},
	}
}

// cpuMachine is a CPU machine type's vCPUs and memory (GiB) from its name,
// as GCE names them (<series>-<standard|highmem|highcpu>-<vCPUs>: 4, 8 or
// 1 GiB per vCPU), so that xpk's Pathways head (24 CPUs, 132 GB) fits
// cpu-np of n2-standard-64 as on GKE. Other names get 8 vCPUs and 32 GiB.
func cpuMachine(machineType string) (cpu, memGi int) {
	parts := strings.Split(machineType, "-")
	if len(parts) == 3 {
		n, err := strconv.Atoi(parts[2])
		perCPU := map[string]int{"standard": 4, "highmem": 8, "highcpu": 1}[parts[1]]
		if err == nil && n > 0 && n <= 416 && perCPU > 0 {
			return n, n * perCPU
		}
	}
	return 8, 32
}
