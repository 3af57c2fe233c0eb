package localcluster

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/sim/fleet"
	"github.com/multislice/multislice/internal/sim/realhost"
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
	return &RealHostsInfo{Bridge: st.Network.Bridge, Network: st.Network.Subnet.String(),
		DNS: st.Network.Gateway.String() + ":53", Registry: st.Registry}, nil
}

// ContainerdName is the component name of a real host's containerd.
func ContainerdName(node string) string { return "containerd-" + node }

func (h Home) realHostsFile() string { return h.path("realhosts.json") }
func (h Home) sysctlsFile() string   { return h.path("sysctls.json") }
func (h Home) layout() realhost.Layout {
	return realhost.NewLayout(string(h))
}

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
	l := r.Home.layout()
	for _, p := range o.Pools {
		if !p.Real {
			continue
		}
		for _, n := range fleet.Nodes(p) {
			h := l.Host(n.Name, len(hosts))
			h.Labels, h.Taints, h.Extended = n.Labels, n.Spec.Taints, n.Status.Capacity
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
		if err := r.startHost(c, tools, h); err != nil {
			return fmt.Errorf("real host %s: %w", h.Name, err)
		}
	}
	return nil
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
	r.say("pushing busybox and the pod sandbox image to the local registry %s", addr)
	return realhost.Push(ctx, addr, images)
}

// startDNS runs CoreDNS on the pod network's gateway with its own
// least-privilege identity.
func (r *Running) startDNS(ctx context.Context, b Binaries, c realhost.Cluster) error {
	if err := install.ApplyRBAC(ctx, r.Config, realhost.CoreDNSRBAC, "", coreDNSUser); err != nil {
		return fmt.Errorf("grant the cluster DNS its permissions: %w", err)
	}
	health, err := freePort()
	if err != nil {
		return err
	}
	ready, err := freePort()
	if err != nil {
		return err
	}
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

// startHost writes one host's configuration and starts its containerd and
// kubelet.
func (r *Running) startHost(c realhost.Cluster, t realhost.Tools, h realhost.Host) error {
	for _, dir := range []string{h.Dir, h.Run, h.CNIConfDir()} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
	}
	if err := realhost.MakeCgroups(h.CgroupRoot(c.Layout)); err != nil {
		return err
	}
	kubeletPort, err := freePort()
	if err != nil {
		return err
	}
	healthz, err := freePort()
	if err != nil {
		return err
	}
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
	return r.launch(KubeletName(h.Name), t.Kubelet, c.KubeletArgs(h), kubeletPort, healthz)
}

// KubeletName is the component name of a real host's kubelet.
func KubeletName(node string) string { return "kubelet-" + node }

// cleanRealHosts undoes on this machine what real hosts of the cluster in
// h did, whether they stopped in order or were killed: processes, mounts,
// cgroups, directories (realhost.Sweep), the pod bridge and the sysctls.
func (h Home) cleanRealHosts() error {
	var errs []error
	errs = append(errs, realhost.Sweep(h.layout()))
	var st realHostsState
	if data, err := os.ReadFile(h.realHostsFile()); err == nil {
		if err := json.Unmarshal(data, &st); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", h.realHostsFile(), err))
		}
	}
	errs = append(errs, st.Network.Delete(), realhost.RestoreSysctls(h.sysctlsFile()))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return removeIfExists(h.realHostsFile())
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}
