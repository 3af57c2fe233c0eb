// Package realhost runs a local cluster's real hosts: one kubelet and one
// containerd per host, real containers through runc, pod networking through
// the CNI bridge plugin, all on this machine. It renders each component's
// configuration, owns the machine-wide pieces the hosts share (the pod
// bridge, the sysctls the kubelet changes) and removes everything a host
// leaves behind: containers, shims, mounts, network namespaces, cgroups.
//
// Every host of one cluster shares the machine's kernel, so what is one per
// node on a real cluster is one per machine here: one bridge and one pod
// network (each host takes its own range of it), one DNS server.
package realhost

import (
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// Host is one real host of a local cluster.
type Host struct {
	// Name is the node name (and hostname) the kubelet registers.
	Name string
	// Index numbers the cluster's hosts from 0; it picks the pod range.
	Index int
	// Dir holds the host's configuration, kubelet root and containerd
	// root; Run its sockets and containerd's state (a short path: a unix
	// socket's path is limited to 107 bytes).
	Dir, Run string
	// Labels and Taints are what the fleet says the node has; the kubelet
	// registers them. Its TPU chips (google.com/tpu, from the
	// accelerator-count label) are advertised by sim-agents.
	Labels map[string]string
	Taints []corev1.Taint
}

// Layout names the directories of one cluster's real hosts.
type Layout struct {
	// Home is the cluster's home ($MULTISLICE_HOME); hosts live under
	// Home/hosts/<name>.
	Home string
	// ID is short and unique per home: it names the cluster's runtime
	// directory, cgroups and bridge, which live outside the home.
	ID string
}

// NewLayout derives a cluster's ID from its home directory.
func NewLayout(home string) Layout {
	sum := sha256.Sum256([]byte(home))
	return Layout{Home: home, ID: hex.EncodeToString(sum[:4])}
}

// HostsDir holds every host's directory.
func (l Layout) HostsDir() string { return filepath.Join(l.Home, "hosts") }

// RunDir holds the sockets and runtime state of every host.
func (l Layout) RunDir() string { return "/run/multislice-" + l.ID }

// CgroupParent is the cgroup (in every v1 hierarchy) under which each
// host's kubelet puts its pods: /multislice-<id>/<host>.
func (l Layout) CgroupParent() string { return "/multislice-" + l.ID }

// Host returns host i named name.
func (l Layout) Host(name string, i int) Host {
	return Host{Name: name, Index: i, Dir: filepath.Join(l.HostsDir(), name), Run: filepath.Join(l.RunDir(), name)}
}

// Paths of one host's files.
func (h Host) ContainerdConfig() string { return filepath.Join(h.Dir, "containerd.toml") }
func (h Host) ContainerdSocket() string { return filepath.Join(h.Run, "containerd.sock") }
func (h Host) KubeletConfig() string    { return filepath.Join(h.Dir, "kubelet.yaml") }
func (h Host) Kubeconfig() string       { return filepath.Join(h.Dir, "kubelet.kubeconfig") }
func (h Host) KubeletRoot() string      { return filepath.Join(h.Dir, "kubelet") }
func (h Host) PodLogs() string          { return filepath.Join(h.Dir, "pods") }
func (h Host) CNIConfDir() string       { return filepath.Join(h.Dir, "cni") }
func (h Host) registryConfigDir() string {
	return filepath.Join(h.Dir, "registries")
}

// CgroupRoot is the host's own cgroup under the cluster's.
func (h Host) CgroupRoot(l Layout) string { return l.CgroupParent() + "/" + h.Name }

// Tools are the binaries a real host runs.
type Tools struct {
	Kubelet, Containerd, Shim, Runc string
	// CNIBin holds the CNI plugins (bridge, host-local, loopback).
	CNIBin string
}

// Cluster is what every host of one cluster shares.
type Cluster struct {
	Layout  Layout
	Network Network
	// Registry is the local registry's host:port; images of docker.io,
	// registry.k8s.io and ghcr.io are pulled from it.
	Registry string
	// CA is the cluster CA's file: the kubelet accepts clients it signed.
	CA string
	// DNS is the cluster DNS server's address, given to every pod.
	DNS string
}

// Mirrored are the registries whose images the local registry serves
// under the same names: pods say `image: busybox` as on any cluster.
var Mirrored = []string{"docker.io", "registry.k8s.io", "ghcr.io"}

// SandboxImage is the pod sandbox ("pause") image every host runs.
func (c Cluster) SandboxImage() string { return c.Registry + "/" + PauseRepo + ":" + PauseTag }

// ContainerdTOML is the host's containerd configuration: its own root,
// state and socket, runc with its own state directory, images from the
// local registry, pod networks from the host's CNI directory. The pause
// container's oom_score_adj of -998 needs CAP_SYS_RESOURCE, which this
// machine does not grant: restrict_oom_score_adj keeps scores at or
// above containerd's own.
func (c Cluster) ContainerdTOML(h Host, t Tools) string {
	q := func(s string) string { return fmt.Sprintf("%q", s) }
	return strings.Join([]string{
		`version = 3`,
		`root = ` + q(filepath.Join(h.Dir, "containerd")),
		`state = ` + q(filepath.Join(h.Run, "containerd")),
		`disabled_plugins = ["io.containerd.internal.v1.opt", "io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.blockfile", "io.containerd.snapshotter.v1.erofs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing", "io.containerd.nri.v1.nri"]`,
		``,
		`[grpc]`,
		`  address = ` + q(h.ContainerdSocket()),
		`[ttrpc]`,
		`  address = ` + q(filepath.Join(h.Run, "containerd-ttrpc.sock")),
		`[debug]`,
		`  address = ""`,
		`[metrics]`,
		`  address = ""`,
		``,
		`[plugins."io.containerd.grpc.v1.cri"]`,
		`  disable_tcp_service = true`,
		`  stream_server_address = "127.0.0.1"`,
		`  stream_server_port = "0"`,
		`[plugins."io.containerd.cri.v1.images"]`,
		`  snapshotter = "overlayfs"`,
		`  [plugins."io.containerd.cri.v1.images".pinned_images]`,
		`    sandbox = ` + q(c.SandboxImage()),
		`  [plugins."io.containerd.cri.v1.images".registry]`,
		`    config_path = ` + q(h.registryConfigDir()),
		`[plugins."io.containerd.cri.v1.runtime"]`,
		`  restrict_oom_score_adj = true`,
		`  netns_mounts_under_state_dir = true`,
		`  enable_selinux = false`,
		`  [plugins."io.containerd.cri.v1.runtime".cni]`,
		`    bin_dirs = [` + q(t.CNIBin) + `]`,
		`    conf_dir = ` + q(h.CNIConfDir()),
		`    max_conf_num = 1`,
		`  [plugins."io.containerd.cri.v1.runtime".containerd]`,
		`    default_runtime_name = "runc"`,
		`    [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc]`,
		`      runtime_type = "io.containerd.runc.v2"`,
		`      [plugins."io.containerd.cri.v1.runtime".containerd.runtimes.runc.options]`,
		`        BinaryName = ` + q(t.Runc),
		`        Root = ` + q(filepath.Join(h.Run, "runc")),
		`        SystemdCgroup = false`,
		``,
	}, "\n")
}

// RegistryHosts are containerd's per-registry files (config_path): each
// mirrored registry and the local one itself are pulled from the local
// registry over plain HTTP. Keys are paths relative to the host's
// registry directory.
func (c Cluster) RegistryHosts(h Host) map[string]string {
	local := "http://" + c.Registry
	entry := fmt.Sprintf("[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n  skip_verify = true\n", local)
	files := map[string]string{
		filepath.Join(h.registryConfigDir(), c.Registry, "hosts.toml"): fmt.Sprintf("server = %q\n\n%s", local, entry),
	}
	for _, r := range Mirrored {
		files[filepath.Join(h.registryConfigDir(), r, "hosts.toml")] = fmt.Sprintf("server = %q\n\n%s", "https://"+r, entry)
	}
	return files
}

// CNIConflist is the host's pod network: a veth per pod on the cluster's
// bridge, an address from the host's own range of the pod network.
func (c Cluster) CNIConflist(h Host) string {
	first, last := c.Network.HostRange(h.Index)
	return fmt.Sprintf(`{
  "cniVersion": "1.0.0",
  "name": "multislice",
  "plugins": [
    {
      "type": "bridge",
      "bridge": %q,
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "ranges": [[{"subnet": %q, "rangeStart": %q, "rangeEnd": %q, "gateway": %q}]],
        "routes": [{"dst": "0.0.0.0/0"}],
        "dataDir": %q
      }
    },
    {"type": "loopback"}
  ]
}
`, c.Network.Bridge, c.Network.Subnet.String(), first, last, c.Network.Gateway, filepath.Join(h.Run, "ipam"))
}

// KubeletYAML is the host's KubeletConfiguration. The kubelet serves on
// the bridge's address (the API server reaches it there through its
// egress proxy), each host on its own port. Settings this machine needs:
// cgroup v1 is accepted (failCgroupV1), cgroups through cgroupfs under the
// host's own root, no swap check, eviction only when the machine is nearly
// full (every host sees the whole machine's memory and disk), no iptables
// chains of its own (KUBE-FIREWALL and canaries are for other components,
// and would outlive it).
func (c Cluster) KubeletYAML(h Host, port, healthzPort int) string {
	return fmt.Sprintf(`apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
address: %s
port: %d
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: %d
authentication:
  anonymous:
    enabled: false
  webhook:
    enabled: true
  x509:
    clientCAFile: %s
authorization:
  mode: Webhook
containerRuntimeEndpoint: unix://%s
cgroupDriver: cgroupfs
cgroupRoot: %s
cgroupsPerQOS: true
failCgroupV1: false
failSwapOn: false
oomScoreAdj: 0
clusterDomain: cluster.local
clusterDNS: [%s]
resolvConf: /etc/resolv.conf
podLogsDir: %s
registerNode: true
serializeImagePulls: false
evictionHard:
  memory.available: 100Mi
  nodefs.available: 1%%
  imagefs.available: 1%%
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
nodeStatusReportFrequency: 10s
nodeStatusUpdateFrequency: 5s
syncFrequency: 10s
fileCheckFrequency: 0s
httpCheckFrequency: 0s
maxPods: 110
makeIPTablesUtilChains: false
`, c.Network.Gateway, port, healthzPort, c.CA, h.ContainerdSocket(), h.CgroupRoot(c.Layout), c.DNS, h.PodLogs())
}

// KubeletArgs are the kubelet's flags beside its configuration file.
func (c Cluster) KubeletArgs(h Host) []string {
	args := []string{
		"--config=" + h.KubeletConfig(),
		"--kubeconfig=" + h.Kubeconfig(),
		"--root-dir=" + h.KubeletRoot(),
		"--cert-dir=" + filepath.Join(h.Dir, "pki"),
		"--hostname-override=" + h.Name,
		"--node-ip=" + c.Network.Gateway.String(),
		"--v=1",
	}
	if labels := registeredLabels(h.Labels); labels != "" {
		args = append(args, "--node-labels="+labels)
	}
	if len(h.Taints) > 0 {
		var ts []string
		for _, t := range h.Taints {
			ts = append(ts, t.Key+"="+t.Value+":"+string(t.Effect))
		}
		args = append(args, "--register-with-taints="+strings.Join(ts, ","))
	}
	return args
}

// kubeletSets are labels the kubelet sets itself; passing them again is
// refused (they are in the kubernetes.io namespace).
var kubeletSets = []string{"kubernetes.io/hostname", "kubernetes.io/os", "kubernetes.io/arch"}

// registeredLabels is the --node-labels value: the fleet's labels but
// those the kubelet sets itself, sorted.
func registeredLabels(labels map[string]string) string {
	var out []string
	for k, v := range labels {
		if !slices.Contains(kubeletSets, k) {
			out = append(out, k+"="+v)
		}
	}
	slices.Sort(out)
	return strings.Join(out, ",")
}

// CoreDNSRBAC lets the cluster DNS read Services, pods and EndpointSlices;
// KubeletAPIRBAC lets the API server use the real kubelets' API.
var (
	//go:embed rbac.yaml
	CoreDNSRBAC []byte
	//go:embed kubelet-api-rbac.yaml
	KubeletAPIRBAC []byte
)

// Corefile is the cluster DNS's configuration: names of Services and pods
// from the API (kubeconfig), everything else from this machine's resolver,
// served on the pod network's gateway; health and readiness on loopback.
func (c Cluster) Corefile(kubeconfig string, healthPort, readyPort int) string {
	return fmt.Sprintf(`.:53 {
    bind %s
    errors
    health 127.0.0.1:%d
    ready 127.0.0.1:%d
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig %s multislice
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
        ttl 5
    }
    forward . /etc/resolv.conf
    cache 5
    loop
}
`, c.Network.Gateway, healthPort, readyPort, kubeconfig)
}

// KubeProxyYAML is kube-proxy's configuration: Services' ClusterIPs as
// iptables rules, for the pods of every real host and for this machine
// (one kube-proxy serves them all: they share the machine's kernel). It
// leaves the machine's conntrack settings alone and makes no NodePort on
// loopback (which would set route_localnet).
func (c Cluster) KubeProxyYAML(kubeconfig, hostname string, healthzPort, metricsPort int) string {
	return fmt.Sprintf(`apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: %s
hostnameOverride: %s
bindAddress: %s
healthzBindAddress: 127.0.0.1:%d
metricsBindAddress: 127.0.0.1:%d
mode: iptables
clusterCIDR: %s
nodePortAddresses: [%s/32]
iptables:
  localhostNodePorts: false
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
`, kubeconfig, hostname, c.Network.Gateway, healthzPort, metricsPort, c.Network.Subnet, c.Network.Gateway)
}
