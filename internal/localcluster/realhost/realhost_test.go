package realhost

import (
	"context"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	corev1 "k8s.io/api/core/v1"

	"github.com/multislice/multislice/internal/gke"
)

func testNetwork() Network {
	return Network{Bridge: "ms-test", Subnet: netip.MustParsePrefix("10.245.0.0/16"), Gateway: netip.MustParseAddr("10.245.0.1")}
}

func TestHostRanges(t *testing.T) {
	n := testNetwork()
	for i, want := range []string{"10.245.1.2-10.245.1.254 10.245.1.0/24", "10.245.2.2-10.245.2.254 10.245.2.0/24"} {
		first, last := n.HostRange(i)
		if got := first.String() + "-" + last.String() + " " + n.HostCIDR(i).String(); got != want {
			t.Errorf("host %d: %s, want %s", i, got, want)
		}
	}
	first, last := n.HostRange(MaxHosts - 1)
	if !n.Subnet.Contains(first) || !n.Subnet.Contains(last) {
		t.Errorf("host %d's range %s-%s leaves %s", MaxHosts-1, first, last, n.Subnet)
	}
}

func TestOverlaps(t *testing.T) {
	used := []netip.Prefix{netip.MustParsePrefix("10.244.5.0/24"), netip.MustParsePrefix("192.0.2.0/24")}
	if !overlapsAny(netip.MustParsePrefix("10.244.0.0/16"), used) {
		t.Error("10.244.0.0/16 overlaps 10.244.5.0/24")
	}
	if overlapsAny(netip.MustParsePrefix("10.245.0.0/16"), used) {
		t.Error("10.245.0.0/16 overlaps nothing")
	}
}

func TestKubeletFlags(t *testing.T) {
	c := Cluster{Layout: NewLayout("/home/u/.multislice"), Network: testNetwork()}
	h := c.Layout.Host("gke-np-0-0", 0)
	h.Labels = map[string]string{"kubernetes.io/hostname": "gke-np-0-0", "kubernetes.io/os": "linux", gke.NodePoolLabel: "np-0", gke.MultisliceGroupLabel: "g"}
	h.Taints = []corev1.Taint{{Key: gke.TPUTaintKey, Value: gke.TPUTaintValue, Effect: corev1.TaintEffectNoSchedule}}
	args := strings.Join(c.KubeletArgs(h), " ")
	for _, want := range []string{
		"--node-labels=MultisliceGroup=g,cloud.google.com/gke-nodepool=np-0 ",
		"--register-with-taints=google.com/tpu=present:NoSchedule",
		"--node-ip=10.245.0.1", "--hostname-override=gke-np-0-0",
	} {
		if !strings.Contains(args+" ", want) {
			t.Errorf("kubelet args %q lack %q", args, want)
		}
	}
	if strings.Contains(args, "kubernetes.io/hostname") {
		t.Errorf("kubelet args %q pass a label the kubelet sets itself (it refuses them)", args)
	}
	cfg := c.KubeletYAML(h, 10250, 10248)
	for _, want := range []string{"failCgroupV1: false", "cgroupRoot: /multislice-" + c.Layout.ID + "/gke-np-0-0", "clusterDNS: [", "address: 10.245.0.1"} {
		if !strings.Contains(cfg, want) {
			t.Errorf("kubelet config lacks %q:\n%s", want, cfg)
		}
	}
}

func TestContainerdConfig(t *testing.T) {
	c := Cluster{Layout: NewLayout("/home/u/.multislice"), Network: testNetwork(), Registry: "127.0.0.1:5000"}
	h := c.Layout.Host("gke-np-0-0", 0)
	toml := c.ContainerdTOML(h, Tools{Runc: "/usr/sbin/runc", CNIBin: "/bin/cni"})
	for _, want := range []string{"restrict_oom_score_adj = true", `sandbox = "127.0.0.1:5000/multislice/pause:busybox"`, `address = "` + h.ContainerdSocket() + `"`} {
		if !strings.Contains(toml, want) {
			t.Errorf("containerd config lacks %q", want)
		}
	}
	if len(h.ContainerdSocket()) > 107 {
		t.Errorf("socket path %s is longer than a unix socket allows", h.ContainerdSocket())
	}
	hosts := c.RegistryHosts(h)
	if len(hosts) != len(Mirrored)+1 || !strings.Contains(hosts[filepath.Join(h.Dir, "registries", "docker.io", "hosts.toml")], `[host."http://127.0.0.1:5000"]`) {
		t.Errorf("registry hosts: %v", hosts)
	}
}

func TestNamesAny(t *testing.T) {
	dirs := []string{"/run/multislice-ab", "/h/hosts"}
	for arg, want := range map[string]bool{
		"/run/multislice-ab/n/containerd.sock": true, "--config=/h/hosts/n/kubelet.yaml": true, "/h/hosts": true,
		"/run/multislice-abc/x": false, "--v=1": false, "/h/hostsX": false,
	} {
		if got := namesAny(arg, dirs); got != want {
			t.Errorf("namesAny(%q) = %v, want %v", arg, got, want)
		}
	}
}

func TestMountsUnderDeepestFirst(t *testing.T) {
	dir := t.TempDir()
	procFS = dir
	defer func() { procFS = "/proc" }()
	info := `22 1 0:21 / /h/hosts/n/kubelet rw shared:1 - ext4 /dev/vda rw
23 22 0:22 / /h/hosts/n/kubelet/pods/u/volumes/kubernetes.io~projected/x rw - tmpfs tmpfs rw
24 1 0:23 / /run/multislice-ab/n/containerd/io.containerd.runtime.v2.task/k8s.io/abc/rootfs rw - overlay overlay rw
25 1 0:24 / /h/other\040dir rw - tmpfs tmpfs rw
`
	if err := os.MkdirAll(filepath.Join(dir, "self"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "self", "mountinfo"), []byte(info), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := mountsUnder([]string{"/h/hosts", "/run/multislice-ab"})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[len(got)-1] != "/h/hosts/n/kubelet" || !strings.Contains(got[0], "projected") {
		t.Errorf("mounts = %v, want the three under the dirs, deepest first", got)
	}
	if unescapeMount(`/h/other\040dir`) != "/h/other dir" {
		t.Errorf("unescape: %q", unescapeMount(`/h/other\040dir`))
	}
}

func TestSysctlsSavedOnceAndRestored(t *testing.T) {
	dir := t.TempDir()
	procSys = dir
	defer func() { procSys = "/proc/sys" }()
	set := func(key, v string) {
		_ = os.MkdirAll(filepath.Dir(filepath.Join(dir, key)), 0o755)
		if err := os.WriteFile(filepath.Join(dir, key), []byte(v+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	get := func(key string) string {
		b, _ := os.ReadFile(filepath.Join(dir, key))
		return strings.TrimSpace(string(b))
	}
	set("vm/overcommit_memory", "0")
	set("net/ipv4/ip_forward", "0")
	set("net/bridge/bridge-nf-call-iptables", "1")
	set("fs/inotify/max_user_instances", "128")
	file := filepath.Join(t.TempDir(), "sysctls.json")
	if err := SaveSysctls(file); err != nil {
		t.Fatal(err)
	}
	if get("net/ipv4/ip_forward") != "1" || get("fs/inotify/max_user_instances") != "1024" {
		t.Error("real hosts need ip_forward=1 and 1024 inotify instances")
	}
	set("vm/overcommit_memory", "1")          // the kubelet's
	if err := SaveSysctls(file); err != nil { // a restart after a crash
		t.Fatal(err)
	}
	if err := RestoreSysctls(file); err != nil {
		t.Fatal(err)
	}
	if get("vm/overcommit_memory") != "0" || get("net/ipv4/ip_forward") != "0" || get("fs/inotify/max_user_instances") != "128" {
		t.Errorf("restored overcommit_memory=%s ip_forward=%s inotify=%s, want 0, 0 and 128 as before", get("vm/overcommit_memory"), get("net/ipv4/ip_forward"), get("fs/inotify/max_user_instances"))
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Error("the saved values are kept after restoring them")
	}
	if err := RestoreSysctls(file); err != nil {
		t.Errorf("restoring again: %v", err)
	}
	set("fs/inotify/max_user_instances", "8192")
	if err := SaveSysctls(file); err != nil {
		t.Fatal(err)
	}
	if get("fs/inotify/max_user_instances") != "8192" {
		t.Error("a higher inotify limit already set is lowered")
	}
}

// The registry serves what was pushed to it before it restarted.
func TestRegistryKeepsImagesAcrossRestarts(t *testing.T) {
	if _, err := os.Stat(Busybox); err != nil {
		t.Skipf("%s: %v (make packages installs busybox-static)", Busybox, err)
	}
	dir := t.TempDir()
	serve := func() (string, context.CancelFunc) {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { _ = (&Registry{Dir: dir}).Serve(ctx, l); close(done) }()
		return l.Addr().String(), func() { cancel(); <-done }
	}
	addr, stop := serve()
	images, err := LocalImages()
	if err != nil {
		t.Fatal(err)
	}
	if err := Push(context.Background(), addr, images); err != nil {
		t.Fatal(err)
	}
	stop()
	addr, stop = serve()
	defer stop()
	for ref, img := range images {
		tag, _ := name.NewTag(addr+"/"+ref, name.Insecure)
		got, err := remote.Image(tag)
		if err != nil {
			t.Fatalf("%s after a restart: %v", ref, err)
		}
		want, _ := img.Digest()
		if d, _ := got.Digest(); d != want {
			t.Errorf("%s: digest %s, want %s", ref, d, want)
		}
	}
}

func TestLocalName(t *testing.T) {
	for ref, want := range map[string]string{
		"busybox":                        "library/busybox:latest",
		"docker.io/library/busybox:1.36": "library/busybox:1.36",
		"ghcr.io/multislice/trainer:dev": "multislice/trainer:dev",
		"registry.k8s.io/pause:3.10":     "pause:3.10",
		"quay.io/someone/thing:v1":       "",
	} {
		got, err := LocalName(ref)
		if got != want || (want == "") != (err != nil) {
			t.Errorf("LocalName(%q) = %q, %v; want %q", ref, got, err, want)
		}
	}
}
