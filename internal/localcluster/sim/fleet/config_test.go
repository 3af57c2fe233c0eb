package fleet

import (
	"strconv"
	"strings"
	"testing"

	"github.com/multislice/multislice/internal/gke"
)

func TestDefaultFleetIsTheSeeds(t *testing.T) {
	c := Default()
	pools, err := c.Expand()
	if err != nil {
		t.Fatal(err)
	}
	groups, err := Groups(pools, c.Keys())
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 || groups[0].Name != "multislice-group-1" || groups[0].Size != 4 || len(groups[0].Pools) != 5 {
		t.Fatalf("groups = %+v, want multislice-group-1 of size 4 with 5 pools (one spare)", groups)
	}
	for _, p := range groups[0].Pools {
		if p.Nodes != 2 || p.MachineType != "ct4p-hightpu-4t" || p.Shape.AcceleratorType() != "v4-16" {
			t.Errorf("pool %s: %d nodes of %s (%s), want 2 nodes of ct4p-hightpu-4t (v4-16)", p.Name, p.Nodes, p.MachineType, p.Shape.AcceleratorType())
		}
	}
	if q := c.Quota(pools); q["tpu-v4-podslice"] != 14 {
		t.Errorf("quota = %v, want 14 v4 hosts (10 in pools + 4 spare)", q)
	}
}

func TestNodesCarryGKEMetadata(t *testing.T) {
	r, err := Resolve(Pool{Name: "np-0", Accelerator: "tpu-v4-podslice", Topology: "2x2x2",
		Labels: map[string]string{"MultisliceGroup": "g", "MultisliceGroupSize": "4"}})
	if err != nil {
		t.Fatal(err)
	}
	nodes := Nodes(r)
	if len(nodes) != 2 {
		t.Fatalf("got %d nodes, want 2", len(nodes))
	}
	n := nodes[1]
	want := map[string]string{
		gke.NodePoolLabel: "np-0", gke.AcceleratorLabel: "tpu-v4-podslice", gke.TopologyLabel: "2x2x2",
		gke.AcceleratorCountLabel: "4", gke.InstanceTypeLabel: "ct4p-hightpu-4t",
		"MultisliceGroup": "g", "MultisliceGroupSize": "4", "kubernetes.io/hostname": "gke-np-0-1",
	}
	for k, v := range want {
		if n.Labels[k] != v {
			t.Errorf("label %s = %q, want %q", k, n.Labels[k], v)
		}
	}
	if len(n.Spec.Taints) != 1 || n.Spec.Taints[0].Key != gke.TPUTaintKey || n.Spec.Taints[0].Value != gke.TPUTaintValue || n.Spec.Taints[0].Effect != "NoSchedule" {
		t.Errorf("taints = %v, want google.com/tpu=present:NoSchedule", n.Spec.Taints)
	}
	if q := n.Status.Capacity[gke.TPUResource]; q.Value() != 4 {
		t.Errorf("google.com/tpu capacity = %v, want 4", q.String())
	}
	if n.Annotations[KwokNodeAnnotation] != "fake" {
		t.Errorf("node is not handed to kwok: annotations %v", n.Annotations)
	}
}

// Each malformed fleet config gets a message that names the field and says
// what to do.
func TestParseRejects(t *testing.T) {
	const head = "apiVersion: multislice.dev/v1alpha1\nkind: Fleet\n"
	cases := map[string]struct{ yaml, want string }{
		"not yaml":         {"{", "not a valid fleet config"},
		"unknown field":    {head + "groups:\n- name: g\n  slcies: 4\n", `unknown field "slcies"`},
		"wrong kind":       {"apiVersion: multislice.dev/v1alpha1\nkind: Cluster\npools: [{name: a, machineType: e2, numNodes: 1}]\n", `kind: got "Cluster", want Fleet`},
		"wrong apiVersion": {"apiVersion: v1\nkind: Fleet\npools: [{name: a, machineType: e2, numNodes: 1}]\n", `apiVersion: got "v1"`},
		"empty":            {head, "the fleet is empty"},
		"group no name":    {head + "groups:\n- {accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2}\n", "groups[0].name: required"},
		"zero slices":      {head + "groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 0}\n", "groups[0].slices: must be at least 1"},
		"negative spares":  {head + "groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2, spares: -1}\n", "groups[0].spares: must not be negative"},
		"bad accelerator":  {head + "groups:\n- {name: g, accelerator: tpu-v9, topology: 2x2x2, slices: 2}\n", `groups[0]: accelerator/topology: unknown TPU accelerator "tpu-v9"`},
		"bad topology":     {head + "groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 3x3x3, slices: 2}\n", "groups[0]: accelerator/topology: v4 topology 3x3x3: each dimension must be 2 or a multiple of 4"},
		"single-host group": {head + "groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 2x2x1, slices: 2}\n",
			"cannot be made of single-host slices (tpu-v4-podslice 2x2x1 has 1 host): use a multi-host topology such as 2x2x2"},
		"machine mismatch": {head + "groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 2x2x2, machineType: ct6e-standard-4t, slices: 2}\n", `machine type "ct6e-standard-4t" is v6e`},
		"num nodes":        {head + "pools:\n- {name: p, accelerator: tpu-v4-podslice, topology: 2x2x2, numNodes: 3}\n", "pools[0]: numNodes: 3 disagrees with topology 2x2x2, which has 2 hosts of 4 chips: use 2"},
		"cpu no machine":   {head + "pools:\n- {name: p, numNodes: 1}\n", "pools[0]: machineType: a CPU pool needs a machine type"},
		"cpu no nodes":     {head + "pools:\n- {name: p, machineType: e2-standard-8}\n", "pools[0]: numNodes: a CPU pool needs at least 1 node"},
		"bad name":         {head + "pools:\n- {name: Pool_A, machineType: e2, numNodes: 1}\n", `pools[0]: name "Pool_A": must be a lowercase DNS label`},
		"duplicate name":   {head + "groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 1}\npools:\n- {name: g-np-0, machineType: e2, numNodes: 1}\n", `pools[0].name: "g-np-0" is already declared by groups[0]`},
		"bad label":        {head + "pools:\n- {name: p, machineType: e2, numNodes: 1, labels: {'a b': x}}\n", `pools[0]: labels: key "a b"`},
		"mixed group": {head + "groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2}\npools:\n- {name: p, accelerator: tpu-v4-podslice, topology: 2x2x4, labels: {MultisliceGroup: g, MultisliceGroupSize: '2'}}\n",
			"pool p: tpu-v4-podslice 2x2x4 differs from group g, which is tpu-v4-podslice 2x2x2"},
		"size mismatch": {head + "groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2}\npools:\n- {name: p, accelerator: tpu-v4-podslice, topology: 2x2x2, labels: {MultisliceGroup: g, MultisliceGroupSize: '3'}}\n",
			"pool p: MultisliceGroupSize=3, but group g has MultisliceGroupSize=2"},
		"half labels":          {head + "pools:\n- {name: p, accelerator: tpu-v4-podslice, topology: 2x2x2, labels: {MultisliceGroup: g}}\n", "pool p: set both MultisliceGroup and MultisliceGroupSize, or neither"},
		"bad size":             {head + "pools:\n- {name: p, accelerator: tpu-v4-podslice, topology: 2x2x2, labels: {MultisliceGroup: g, MultisliceGroupSize: four}}\n", `MultisliceGroupSize="four" must be a positive integer`},
		"cpu in group":         {head + "pools:\n- {name: p, machineType: e2, numNodes: 1, labels: {MultisliceGroup: g, MultisliceGroupSize: '2'}}\n", "pool p: only TPU pools can join multislice group g"},
		"capacity accelerator": {head + "pools:\n- {name: p, machineType: e2, numNodes: 1}\ncapacity: {tpu-v99: 2}\n", `capacity: unknown TPU accelerator "tpu-v99"`},
		"negative capacity":    {head + "pools:\n- {name: p, machineType: e2, numNodes: 1}\ncapacity: {tpu-v4-podslice: -2}\n", "capacity.tpu-v4-podslice: spare hosts must not be negative"},
		"huge cpu pool":        {head + "pools:\n- {name: p, machineType: e2, numNodes: 2000000000}\n", "pools[0].numNodes: 2000000000 is more than the limit of 5000 nodes: lower it, or raise limits.nodes"},
		"huge group":           {head + "groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2000000000}\n", "groups[0]: 2000000000 slices and 0 spares exceed the limit of 1000 pools"},
		"too many nodes":       {head + "groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 4x4x4, slices: 400}\n", "the fleet has 6400 nodes with its spare capacity, more than the limit of 5000"},
		"huge capacity":        {head + "pools:\n- {name: p, machineType: e2, numNodes: 1}\ncapacity: {tpu-v4-podslice: 99999999}\n", "capacity.tpu-v4-podslice: 99999999 spare hosts is more than the limit of 5000"},
		"negative limits":      {head + "pools:\n- {name: p, machineType: e2, numNodes: 1}\nlimits: {nodes: -1}\n", "limits: must not be negative"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(c.yaml))
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Parse() error = %v\nwant it to contain %q", err, c.want)
			}
		})
	}
}

func TestLimitsRaisedOnPurpose(t *testing.T) {
	const fleet = "apiVersion: multislice.dev/v1alpha1\nkind: Fleet\ngroups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 4x4x4, slices: 400}\nlimits: {nodes: 7000}\n"
	if _, err := Parse([]byte(fleet)); err != nil {
		t.Fatalf("a raised limit is refused: %v", err)
	}
}

func TestCustomGroupLabels(t *testing.T) {
	c, err := Parse([]byte("apiVersion: multislice.dev/v1alpha1\nkind: Fleet\ngroupLabels: {name: team/group, size: team/group-size}\n" +
		"groups:\n- {name: g, accelerator: tpu-v5-lite-podslice, topology: 4x4, slices: 2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	pools, _ := c.Expand()
	if pools[0].Labels["team/group"] != "g" || pools[0].Labels["team/group-size"] != "2" || pools[0].Nodes != 4 {
		t.Fatalf("pool = %+v, want custom group labels and 4 hosts", pools[0])
	}
}

func TestRealHostsAreBounded(t *testing.T) {
	fleet := func(limits string, cpuHosts int) string {
		return "apiVersion: multislice.dev/v1alpha1\nkind: Fleet\n" + limits +
			"groups:\n- {name: g, accelerator: tpu-v4-podslice, topology: 2x2x2, slices: 2, spares: 1, real: true}\n" +
			"pools:\n- {name: cpu, machineType: e2-standard-8, numNodes: " + strconv.Itoa(cpuHosts) + ", real: true}\n"
	}
	cases := []struct {
		name, yaml string
		err        string
	}{
		{"eight real hosts", fleet("", 2), ""},
		{"nine real hosts", fleet("", 3), "limits.realHosts: the fleet has 9 real hosts, more than the limit of 8"},
		{"raised on purpose", fleet("limits: {realHosts: 9}\n", 3), ""},
		{"negative limit", fleet("limits: {realHosts: -1}\n", 2), "must not be negative"},
	}
	for _, c := range cases {
		cfg, err := Parse([]byte(c.yaml))
		switch {
		case c.err == "" && err != nil:
			t.Errorf("%s: %v", c.name, err)
		case c.err != "" && (err == nil || !strings.Contains(err.Error(), c.err)):
			t.Errorf("%s: error %v, want one containing %q", c.name, err, c.err)
		case c.err == "":
			pools, _ := cfg.Expand()
			if RealHostCount(pools) < 8 || !pools[0].Real {
				t.Errorf("%s: %d real hosts, first pool real %v", c.name, RealHostCount(pools), pools[0].Real)
			}
		}
	}
}

func TestRealNodesAreTheKubeletsNotKwoks(t *testing.T) {
	r, err := Resolve(Pool{Name: "np-0", Accelerator: "tpu-v4-podslice", Topology: "2x2x2", Real: true})
	if err != nil {
		t.Fatal(err)
	}
	n := Nodes(r)[0]
	if n.Annotations[KwokNodeAnnotation] != "" || n.Labels[SimulatedLabel] != "" || n.Labels["type"] != "" || n.Labels[RealHostLabel] != "true" {
		t.Errorf("real node: annotations %v labels %v; want no kwok annotation or simulated labels, and %s=true", n.Annotations, n.Labels, RealHostLabel)
	}
	if q := n.Status.Capacity[gke.TPUResource]; q.Value() != 4 || len(n.Status.Capacity) != 1 {
		t.Errorf("real node capacity %v: want only its 4 TPU chips (the kubelet reports CPU and memory)", n.Status.Capacity)
	}
}

func TestBlocksAreSubBlockPools(t *testing.T) {
	c, err := Load("../../../../examples/fleet-dynamic.yaml")
	if err != nil {
		t.Fatal(err)
	}
	pools, err := c.Expand()
	if err != nil {
		t.Fatal(err)
	}
	if n := HostCount(pools); n != 97 {
		t.Errorf("hosts = %d, want 96 of the block and the CPU host", n)
	}
	sb := pools[5] // the sixth sub-block: x 0, y 1, z 2 in a 1x2x3 grid
	want := map[string]string{gke.TopologyBlockLabel: "block-1", gke.PartitionCubeLabel: "block-1-sb-5", "multislice.dev/partition-position": "0.1.2"}
	for k, v := range want {
		if sb.Labels[k] != v {
			t.Errorf("sub-block %s: label %s = %q, want %q", sb.Name, k, sb.Labels[k], v)
		}
	}
	if sb.Nodes != 16 || sb.Shape.Topology.String() != "4x4x4" || sb.Accelerator != "tpu7x" {
		t.Errorf("sub-block %s: %d nodes of %s %s, want 16 of tpu7x 4x4x4", sb.Name, sb.Nodes, sb.Accelerator, sb.Shape.Topology)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"blocks: [{name: b, subBlocks: 6, layout: 2x2x2}]", "layout 2x2x2 holds 8 sub-blocks, but subBlocks is 6"},
		{"blocks: [{name: b, subBlocks: 0}]", "subBlocks: must be at least 1"},
		{"blocks: [{name: b, subBlocks: 100000}]", "more than a tpu7x block's 144 sub-blocks"},
		{"blocks: [{name: B, subBlocks: 1}]", `name "B"`},
	} {
		_, err := Parse([]byte("apiVersion: multislice.dev/v1alpha1\nkind: Fleet\n" + tc.yaml))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to say %q", tc.yaml, err, tc.want)
		}
	}
}
