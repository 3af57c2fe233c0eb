package kueue

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	"github.com/multislice/multislice/internal/gke"
)

func node(name string, labels map[string]string, cpu, mem, chips string) corev1.Node {
	alloc := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse(mem)}
	if chips != "" {
		alloc[gke.TPUResource] = resource.MustParse(chips)
	}
	return corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Status: corev1.NodeStatus{Allocatable: alloc}}
}

func tpuLabels(acc, topo, group string) map[string]string {
	l := map[string]string{gke.AcceleratorLabel: acc, gke.TopologyLabel: topo}
	if group != "" {
		l[gke.MultisliceGroupLabel] = group
	}
	return l
}

func TestFlavors(t *testing.T) {
	nodes := []corev1.Node{
		node("g1-a", tpuLabels("tpu-v4-podslice", "2x2x2", "Group-1"), "240", "400Gi", "4"),
		node("g1-b", tpuLabels("tpu-v4-podslice", "2x2x2", "Group-1"), "240", "400Gi", "4"),
		node("cpu-a", nil, "8", "32Gi", ""),
		node("lone", tpuLabels("tpu-v5-lite-podslice", "4x4", ""), "112", "192Gi", "4"),
		node("g2-a", tpuLabels("tpu-v4-podslice", "2x2x2", "g2"), "240", "400Gi", "4"),
	}
	got := Flavors(nodes, gke.MultisliceGroupLabel)
	want := []struct {
		name, chips, cpu string
		labels           int
	}{
		{CPUFlavor, "0", "8", 0},                    // first: a pod without chips never takes a TPU flavor
		{"g2", "4", "240", 3},                       // a group is a flavor
		{"group-1", "8", "480", 3},                  // names made valid
		{"tpu-v5-lite-podslice-4x4", "4", "112", 2}, // outside groups: accelerator and topology
	}
	if len(got) != len(want) {
		t.Fatalf("got %d flavors %+v, want %d", len(got), got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Name != w.name || g.Chips.String() != w.chips || g.CPU.String() != w.cpu || len(g.NodeLabels) != w.labels {
			t.Errorf("flavor %d = %s chips %s cpu %s labels %v, want %+v", i, g.Name, g.Chips.String(), g.CPU.String(), g.NodeLabels, w)
		}
	}
	if got[2].NodeLabels[gke.MultisliceGroupLabel] != "Group-1" {
		t.Errorf("the flavor selects the group's label value as it is: %v", got[2].NodeLabels)
	}
}

func TestQueues(t *testing.T) {
	if _, err := Queues(nil, QueueOptions{Namespace: "default"}); err == nil || !strings.Contains(err.Error(), "no nodes") {
		t.Errorf("no flavors: got %v", err)
	}
	flavors := Flavors([]corev1.Node{node("a", tpuLabels("tpu-v4-podslice", "2x2x2", "g"), "2", "4Gi", "4")}, gke.MultisliceGroupLabel)
	objs, err := Queues(flavors, QueueOptions{Namespace: "team"})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetAPIVersion() != APIVersion {
			t.Errorf("%s in %s", o.GetKind(), o.GetAPIVersion())
		}
		kinds[o.GetKind()+"/"+o.GetName()] = o
	}
	cq := kinds["ClusterQueue/"+ClusterQueueName]
	if cq == nil || kinds["ResourceFlavor/g"] == nil || kinds["WorkloadPriorityClass/very-high"] == nil {
		t.Fatalf("objects: %v", kinds)
	}
	if lq := kinds["LocalQueue/"+LocalQueueName]; lq == nil || lq.GetNamespace() != "team" {
		t.Errorf("LocalQueue: %v", lq)
	}
	groups, _, _ := unstructured.NestedSlice(cq.Object, "spec", "resourceGroups")
	flavorsOut, _, _ := unstructured.NestedSlice(groups[0].(map[string]any), "flavors")
	res := flavorsOut[0].(map[string]any)["resources"].([]any)
	if q := res[2].(map[string]any); q["name"] != gke.TPUResource || q["nominalQuota"] != "4" {
		t.Errorf("tpu quota %v", q)
	}
	if v, _, _ := unstructured.NestedString(cq.Object, "spec", "preemption", "withinClusterQueue"); v != "LowerPriority" {
		t.Errorf("preemption %q", v)
	}
}

// TestQueuesForSubBlocks: a fleet with tpu7x sub-blocks gets a flavor
// per block scheduled by xpk's super-slice Topology, that Topology, the
// slice AdmissionCheck, and a ClusterQueue that asks it on those flavors
// alone.
func TestQueuesForSubBlocks(t *testing.T) {
	cube := func(name, block, partition string) corev1.Node {
		l := tpuLabels("tpu7x", "4x4x4", "")
		l[gke.TopologyBlockLabel], l[gke.PartitionCubeLabel] = block, partition
		return node(name, l, "200", "400Gi", "4")
	}
	nodes := []corev1.Node{cube("a0", "block-1", "block-1-sb-0"), cube("a1", "block-1", "block-1-sb-1"), cube("b0", "block-2", "block-2-sb-0"),
		node("g", tpuLabels("tpu-v4-podslice", "2x2x2", "g"), "2", "4Gi", "4"), node("cpu", nil, "8", "32Gi", "")}
	flavors := Flavors(nodes, gke.MultisliceGroupLabel)
	objs, err := Queues(flavors, QueueOptions{Namespace: "default"})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		kinds[o.GetKind()+"/"+o.GetName()] = o
	}
	f := kinds["ResourceFlavor/tpu7x-block-1"]
	if f == nil {
		t.Fatalf("no flavor for block-1: %v", kinds)
	}
	if topo, _, _ := unstructured.NestedString(f.Object, "spec", "topologyName"); topo != SuperSliceTopology {
		t.Errorf("block-1's flavor has topology %q", topo)
	}
	if labels, _, _ := unstructured.NestedStringMap(f.Object, "spec", "nodeLabels"); len(labels) != 2 || labels[gke.TopologyBlockLabel] != "block-1" {
		t.Errorf("block-1's flavor selects %v, want the accelerator and the block, no topology", labels)
	}
	if topo, _, _ := unstructured.NestedString(kinds["ResourceFlavor/g"].Object, "spec", "topologyName"); topo != "" {
		t.Errorf("a node-pool group's flavor has topology %q", topo)
	}
	levels, _, _ := unstructured.NestedSlice(kinds["Topology/"+SuperSliceTopology].Object, "spec", "levels")
	if len(levels) != 5 || levels[1].(map[string]any)["nodeLabel"] != gke.PartitionCubeLabel || levels[4].(map[string]any)["nodeLabel"] != gke.HostnameLabel {
		t.Errorf("topology levels %v", levels)
	}
	if c, _, _ := unstructured.NestedString(kinds["AdmissionCheck/"+SliceCheck].Object, "spec", "controllerName"); c != "accelerator.gke.io/slice" {
		t.Errorf("admission check controller %q", c)
	}
	checks, _, _ := unstructured.NestedSlice(kinds["ClusterQueue/"+ClusterQueueName].Object, "spec", "admissionChecksStrategy", "admissionChecks")
	if len(checks) != 1 || checks[0].(map[string]any)["name"] != SliceCheck {
		t.Fatalf("ClusterQueue admission checks %v", checks)
	}
	if on := checks[0].(map[string]any)["onFlavors"].([]any); len(on) != 2 || on[0] != "tpu7x-block-1" || on[1] != "tpu7x-block-2" {
		t.Errorf("the check applies on %v, want the two blocks' flavors", on)
	}
}

func TestServeAt(t *testing.T) {
	rule := func(group string) []admissionregistrationv1.RuleWithOperations {
		return []admissionregistrationv1.RuleWithOperations{{Rule: admissionregistrationv1.Rule{APIGroups: []string{group}}}}
	}
	svc := func(path string) admissionregistrationv1.WebhookClientConfig {
		return admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Name: "webhook-service", Path: ptr.To(path)}}
	}
	m := &Manifests{
		Mutating: &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "mutating-webhook-configuration"},
			Webhooks: []admissionregistrationv1.MutatingWebhook{
				{Name: "mjobset", Rules: rule("jobset.x-k8s.io"), ClientConfig: svc("/mutate-jobset")},
				{Name: "mpod", Rules: rule(""), ClientConfig: svc("/mutate--v1-pod")},
			}},
		Validating: &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "validating-webhook-configuration"},
			Webhooks: []admissionregistrationv1.ValidatingWebhook{
				{Name: "vcq", Rules: rule(Group), ClientConfig: svc("/validate-cq")},
				{Name: "vray", Rules: rule("ray.io"), ClientConfig: svc("/validate-ray")},
			}},
		CRDs: []*apiextensionsv1.CustomResourceDefinition{
			{ObjectMeta: metav1.ObjectMeta{Name: "workloads." + Group}},
			{ObjectMeta: metav1.ObjectMeta{Name: "resourceflavors." + Group}},
		},
		Converted: map[string]bool{"workloads." + Group: true},
	}
	m.ServeAt("https://127.0.0.1:9443", []byte("CA"))
	if len(m.Mutating.Webhooks) != 1 || *m.Mutating.Webhooks[0].ClientConfig.URL != "https://127.0.0.1:9443/mutate-jobset" || m.Mutating.Webhooks[0].ClientConfig.Service != nil {
		t.Errorf("mutating: %+v (want only JobSet's, by URL: no pod waits on Kueue)", m.Mutating.Webhooks)
	}
	if len(m.Validating.Webhooks) != 1 || m.Validating.Webhooks[0].Name != "vcq" || string(m.Validating.Webhooks[0].ClientConfig.CABundle) != "CA" {
		t.Errorf("validating: %+v", m.Validating.Webhooks)
	}
	if m.Mutating.Name != "kueue-mutating-webhook-configuration" {
		t.Errorf("name %s", m.Mutating.Name)
	}
	if c := m.CRDs[0].Spec.Conversion; c == nil || *c.Webhook.ClientConfig.URL != "https://127.0.0.1:9443/convert" {
		t.Errorf("workloads conversion %+v", c)
	}
	if m.CRDs[1].Spec.Conversion != nil {
		t.Errorf("resourceflavors is not converted by Kueue, got %+v", m.CRDs[1].Spec.Conversion)
	}
}

func TestConvertedAndRBAC(t *testing.T) {
	dir := t.TempDir()
	k := filepath.Join(dir, "k.yaml")
	_ = os.WriteFile(k, []byte("resources: [a.yaml]\npatches:\n- path: patches/webhook_in_workloads.yaml\n#- path: patches/webhook_in_resourceflavors.yaml\n"), 0o644)
	got, err := converted(k)
	if err != nil || len(got) != 1 || !got["workloads."+Group] {
		t.Errorf("converted = %v, %v", got, err)
	}
	out, err := renameRBAC([]byte("kind: RoleBinding\nmetadata: {name: manager-secrets-rolebinding, namespace: system}\nroleRef: {kind: Role, name: manager-secrets-role}\n"))
	if err != nil {
		t.Fatal(err)
	}
	var u map[string]any
	_ = yaml.Unmarshal(out, &u)
	md, ref := u["metadata"].(map[string]any), u["roleRef"].(map[string]any)
	if md["name"] != "kueue-manager-secrets-rolebinding" || md["namespace"] != Namespace || ref["name"] != "kueue-manager-secrets-role" {
		t.Errorf("renamed: %s", out)
	}
}

func TestConnectionValidate(t *testing.T) {
	kubeconfig := func(edit func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
		c := &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443", CertificateAuthorityData: []byte("CA")}
		u := &clientcmdapi.AuthInfo{ClientCertificateData: []byte("C"), ClientKeyData: []byte("K")}
		edit(c, u)
		cfg := clientcmdapi.NewConfig()
		cfg.Clusters["w"], cfg.AuthInfos["w"] = c, u
		cfg.Contexts["w"] = &clientcmdapi.Context{Cluster: "w", AuthInfo: "w"}
		cfg.CurrentContext = "w"
		data, _ := clientcmd.Write(*cfg)
		return data
	}
	for _, tc := range []struct {
		name string
		conn Connection
		want string
	}{
		{"ok", Connection{Worker: "worker", ClusterQueue: "cq", Kubeconfig: kubeconfig(func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {})}, ""},
		{"bad worker name", Connection{Worker: "Worker_1", ClusterQueue: "cq", Kubeconfig: kubeconfig(func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {})}, "--worker-name"},
		{"insecure", Connection{Worker: "w", ClusterQueue: "cq", Kubeconfig: kubeconfig(func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.InsecureSkipTLSVerify, c.CertificateAuthorityData = true, nil
		})}, "insecure-skip-tls-verify"},
		{"ca file", Connection{Worker: "w", ClusterQueue: "cq", Kubeconfig: kubeconfig(func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.CertificateAuthority, c.CertificateAuthorityData = "/ca.crt", nil
		})}, "certificate-authority-data"},
		{"cert file", Connection{Worker: "w", ClusterQueue: "cq", Kubeconfig: kubeconfig(func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.ClientCertificate = "/c.crt"
		})}, "client-certificate-data"},
		{"not a kubeconfig", Connection{Worker: "w", ClusterQueue: "cq", Kubeconfig: []byte("{")}, "--worker-kubeconfig"},
	} {
		err := tc.conn.Validate()
		if (tc.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.want)) {
			t.Errorf("%s: got %v, want %q", tc.name, err, tc.want)
		}
	}
	objs := Connection{Worker: "w", ClusterQueue: "cq", Kubeconfig: []byte("x")}.Objects()
	if len(objs) != 5 || objs[0].GetNamespace() != Namespace || objs[4].GetKind() != "ClusterQueue" {
		t.Errorf("objects %v", objs)
	}
}
