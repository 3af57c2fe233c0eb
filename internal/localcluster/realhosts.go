package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	goruntime "runtime"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/multislice/multislice/internal/image"
	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/localcluster/realhost"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
	"github.com/multislice/multislice/internal/versions"
)

// coreDNSUser is the cluster DNS's user, granted realhost.CoreDNSRBAC.
const coreDNSUser = "multislice-coredns"

// realHostsState is what `down` needs to undo on the machine beyond the
// hosts' directories (the pod bridge), and what `status` shows.
type realHostsState struct {
	Network  realhost.Network `json:"network"`
	Registry string           `json:"registry"`
}

// RealHostsInfo is the machine-wide part of a cluster's real hosts.
type RealHostsInfo struct {
	Bridge   string `json:"bridge"`
	Network  string `json:"podNetwork"`
	DNS      string `json:"dns"`
	Registry string `json:"registry"`
}

// RealHosts describes the cluster's real hosts' shared parts; nil when it
// has none.
func (h Home) RealHosts() (*RealHostsInfo, error) {
	st, err := h.readRealHosts()
	if st == nil || err != nil {
		return nil, err
	}
	return &RealHostsInfo{Bridge: st.Network.Bridge, Network: st.Network.Subnet.String(),
		DNS: st.Network.Gateway.String() + ":53", Registry: st.Registry}, nil
}

// ContainerdName is the component name of a real host's containerd.
func ContainerdName(node string) string { return "containerd-" + node }

func (h Home) realHostsFile() string { return h.path("realhosts.json") }

// readRealHosts is the recorded real hosts' state; nil when there is none.
func (h Home) readRealHosts() (*realHostsState, error) {
	data, err := os.ReadFile(h.realHostsFile())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st realHostsState
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("%s: %w", h.realHostsFile(), err)
	}
	return &st, nil
}
func (h Home) sysctlsFile() string { return h.path("sysctls.json") }

// RealHostsLayout names where the cluster's real hosts keep their state
// and cgroups on this machine.
func (h Home) RealHostsLayout() realhost.Layout { return realhost.NewLayout(string(h)) }

// RealHostNames are the node names of the fleet's real hosts, in order.
func RealHostNames(pools []fleet.Resolved) []string {
	var names []string
	for _, p := range pools {
		if p.Real {
			for i := range p.Nodes {
				names = append(names, fleet.NodeName(p.Name, i))
			}
		}
	}
	return names
}

// startRealHosts starts what the fleet's real hosts need, in order: the
// pod bridge, the local registry (with busybox and the pod sandbox pushed
// to it), the cluster DNS, then a containerd and a kubelet per host. The
// kubelets register their nodes; provision waits for them to be Ready.
func (r *Running) startRealHosts(ctx context.Context, o UpOptions) error {
	var hosts []realhost.Host
	l := r.Home.RealHostsLayout()
	for _, p := range o.Pools {
		if !p.Real {
			continue
		}
		for _, n := range fleet.Nodes(p) {
			h := l.Host(n.Name, len(hosts))
			h.Labels, h.Taints = n.Labels, n.Spec.Taints
			hosts = append(hosts, h)
		}
	}
	if len(hosts) == 0 {
		return nil
	}
	if len(hosts) > realhost.MaxHosts {
		return fmt.Errorf("%d real hosts: a pod network has ranges for %d", len(hosts), realhost.MaxHosts)
	}
	network, err := realhost.PickNetwork(l)
	if err != nil {
		return err
	}
	regPort, err := freePort()
	if err != nil {
		return err
	}
	st := realHostsState{Network: network, Registry: "127.0.0.1:" + strconv.Itoa(regPort)}
	if err := writeJSON(r.Home.realHostsFile(), st); err != nil {
		return err
	}
	r.say("creating the pod network %s on bridge %s", network.Subnet, network.Bridge)
	if err := realhost.SaveSysctls(r.Home.sysctlsFile()); err != nil {
		return err
	}
	if err := network.Create(); err != nil {
		return err
	}
	r.registry = st.Registry
	if err := r.startRegistry(ctx, o.Exe, regPort); err != nil {
		return err
	}
	c := realhost.Cluster{Layout: l, Network: network, Registry: st.Registry, CA: r.Home.pki("ca.crt"), DNS: network.Gateway.String()}
	if err := r.startDNS(ctx, o.Binaries, c); err != nil {
		return err
	}
	if err := install.ApplyRBAC(ctx, r.Config, realhost.KubeletAPIRBAC, "", "kube-apiserver-kubelet-client"); err != nil {
		return fmt.Errorf("let the API server use the kubelets' API: %w", err)
	}
	tools := realhost.Tools{Kubelet: o.Binaries.Kubelet(), Containerd: o.Binaries.Containerd(), Shim: o.Binaries.Shim(), Runc: Runc, CNIBin: o.Binaries.CNIBin()}
	for _, h := range hosts {
		if err := r.startHost(ctx, c, tools, h); err != nil {
			return fmt.Errorf("real host %s: %w", h.Name, err)
		}
	}
	// kube-proxy serves once its node is registered: WaitRealHosts waits.
	return r.startKubeProxy(ctx, o.Binaries, c, hosts[0].Name)
}

// startRegistry runs `multislice registry` and pushes the local images.
func (r *Running) startRegistry(ctx context.Context, exe string, port int) error {
	addr := "127.0.0.1:" + strconv.Itoa(port)
	if err := r.launch("registry", exe, []string{"registry", "--addr=" + addr, "--dir=" + r.Home.path("registry")}, port); err != nil {
		return err
	}
	if err := r.WaitFor(ctx, "registry", 30*time.Second, httpOK("http://"+addr+"/v2/", nil)); err != nil {
		return err
	}
	images, err := realhost.LocalImages()
	if err != nil {
		return err
	}
	// This binary's image: the in-cluster manager runs it, and in-place
	// restart agents (examples/trainer-in-place-jobset.yaml) use :latest.
	own, err := image.ForBinary(exe, "linux", goruntime.GOARCH, image.Labels{Version: versions.Multislice, Created: time.Unix(0, 0).UTC()})
	if err != nil {
		return err
	}
	images[managerRepo+":"+versions.Multislice], images[managerRepo+":latest"] = own, own
	r.say("pushing busybox, the pod sandbox and the multislice image to the local registry %s", addr)
	return realhost.Push(ctx, addr, images)
}

// startDNS runs CoreDNS on the pod network's gateway with its own
// least-privilege identity.
func (r *Running) startDNS(ctx context.Context, b Binaries, c realhost.Cluster) error {
	if err := install.ApplyRBAC(ctx, r.Config, realhost.CoreDNSRBAC, "", coreDNSUser); err != nil {
		return fmt.Errorf("grant the cluster DNS its permissions: %w", err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	health, ready := ports[0], ports[1]
	dir := r.Home.path("coredns")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	corefile := filepath.Join(dir, "Corefile")
	if err := os.WriteFile(corefile, []byte(c.Corefile(r.Home.pki("coredns.kubeconfig"), health, ready)), 0o600); err != nil {
		return err
	}
	if err := r.launch("coredns", b.CoreDNS(), []string{"-conf", corefile}, health, ready); err != nil {
		return err
	}
	return r.WaitFor(ctx, "coredns", 30*time.Second, httpOK("http://127.0.0.1:"+strconv.Itoa(ready)+"/ready", nil))
}

// startKubeProxy points the kubernetes Service at the API server's relay on
// the pod network (its endpoint reconciler is off: the API server listens on
// loopback), and runs one kube-proxy for the machine.
func (r *Running) startKubeProxy(ctx context.Context, b Binaries, c realhost.Cluster, hostname string) error {
	u, err := url.Parse(r.Config.Host)
	if err != nil {
		return err
	}
	port, err := strconv.Atoi(u.Port())
	if err != nil {
		return err
	}
	r.apiRelay = net.JoinHostPort(c.Network.Gateway.String(), u.Port())
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Name: "kubernetes", Namespace: corev1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: "kubernetes", discoveryv1.LabelManagedBy: "multislice-up"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{c.Network.Gateway.String()}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("https"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if _, err := r.Client.DiscoveryV1().EndpointSlices(corev1.NamespaceDefault).Create(ctx, slice, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("point the kubernetes Service at the API server: %w", err)
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	healthz, metrics := ports[0], ports[1]
	config := r.Home.path("kube-proxy.yaml")
	if err := os.WriteFile(config, []byte(c.KubeProxyYAML(r.Home.pki("kube-proxy.kubeconfig"), hostname, healthz, metrics)), 0o600); err != nil {
		return err
	}
	r.kubeProxyHealth = "http://127.0.0.1:" + strconv.Itoa(healthz) + "/healthz"
	return r.launch("kube-proxy", b.KubeProxy(), []string{"--config=" + config}, healthz, metrics)
}

// waitServices waits until kube-proxy has written the Services' rules, once
// the nodes are Ready.
func (r *Running) waitServices(ctx context.Context) error {
	if r.kubeProxyHealth == "" {
		return nil
	}
	return r.WaitFor(ctx, "kube-proxy", 60*time.Second, httpOK(r.kubeProxyHealth, nil))
}

// startHost writes one host's configuration and starts its containerd and
// kubelet.
func (r *Running) startHost(ctx context.Context, c realhost.Cluster, t realhost.Tools, h realhost.Host) error {
	for _, dir := range []string{h.Dir, h.Run, h.CNIConfDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	if err := realhost.MakeCgroups(h.CgroupRoot(c.Layout)); err != nil {
		return err
	}
	ports, err := freePorts(2)
	if err != nil {
		return err
	}
	kubeletPort, healthz := ports[0], ports[1]
	files := c.RegistryHosts(h)
	files[h.ContainerdConfig()] = c.ContainerdTOML(h, t)
	files[filepath.Join(h.CNIConfDir(), "10-multislice.conflist")] = c.CNIConflist(h)
	files[h.KubeletConfig()] = c.KubeletYAML(h, kubeletPort, healthz)
	for path, content := range files {
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return err
		}
		if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
			return err
		}
	}
	if err := r.Home.writeKubeconfig(h.Kubeconfig(), r.Config.Host, "node-"+h.Name); err != nil {
		return err
	}
	// containerd finds its shim on PATH.
	if err := os.Symlink(t.Shim, filepath.Join(h.Run, filepath.Base(t.Shim))); err != nil && !errors.Is(err, os.ErrExist) {
		return err
	}
	if err := r.launchEnv(ContainerdName(h.Name), t.Containerd, []string{"--config", h.ContainerdConfig()},
		[]string{"PATH=" + h.Run + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}); err != nil {
		return err
	}
	// The kubelet checks the runtime once as it starts and exits if the
	// socket is not there yet, which a loaded machine makes likely.
	if err := r.WaitFor(ctx, ContainerdName(h.Name), 60*time.Second, unixListening(h.ContainerdSocket())); err != nil {
		return err
	}
	began := time.Now()
	if err := r.launch(KubeletName(h.Name), t.Kubelet, c.KubeletArgs(h), kubeletPort, healthz); err != nil {
		return err
	}
	waitCreatedSince(kubeletSocket, began, 20*time.Second)
	return nil
}

// kubeletSocket is the device-plugin registration socket every kubelet of
// this machine binds at the same path (the kubelet has no flag for it):
// two kubelets starting at once race for it, and one exits ("bind:
// address already in use"). Each real host's kubelet starts once the one
// before it has bound the socket.
const kubeletSocket = "/var/lib/kubelet/device-plugins/kubelet.sock"

// waitCreatedSince waits, at most timeout, until path was made at since
// or later; a kubelet that is slower than that is left to `up`'s
// readiness wait.
func waitCreatedSince(path string, since time.Time, timeout time.Duration) {
	for deadline := time.Now().Add(timeout); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		if fi, err := os.Stat(path); err == nil && !fi.ModTime().Before(since) {
			return
		}
	}
}

// KubeletName is the component name of a real host's kubelet.
func KubeletName(node string) string { return "kubelet-" + node }

// cleanRealHosts undoes on this machine what real hosts of the cluster in
// h did, whether they stopped in order or were killed: processes, mounts,
// cgroups, directories (realhost.Sweep), the pod bridge and the sysctls.
func (h Home) cleanRealHosts() error {
	var errs []error
	errs = append(errs, realhost.Sweep(h.RealHostsLayout()))
	st, err := h.readRealHosts()
	errs = append(errs, err)
	if st != nil {
		errs = append(errs, cleanupKubeProxy(h), st.Network.Delete())
	}
	errs = append(errs, realhost.RestoreSysctls(h.sysctlsFile()))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return removeIfExists(h.realHostsFile())
}

// cleanupKubeProxy removes kube-proxy's iptables rules (`kube-proxy
// --cleanup`, with the binary that made them, then the chain it leaves).
func cleanupKubeProxy(h Home) error {
	st, err := h.ReadState()
	if err != nil || st == nil {
		return err
	}
	for _, p := range st.Processes {
		if p.Name == "kube-proxy" {
			if out, err := exec.Command(p.Binary, "--cleanup").CombinedOutput(); err != nil {
				return fmt.Errorf("kube-proxy --cleanup: %v: %s", err, strings.TrimSpace(string(out)))
			}
			return realhost.RemoveFirewallChain()
		}
	}
	return nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
