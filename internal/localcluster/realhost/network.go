package realhost

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"os/exec"
	"strings"
)

// Network is a cluster's pod network: one bridge on this machine that every
// real host's pods attach to, a /16 of which host i takes 10.x.(i+1).0/24,
// and the bridge's own address, .0.1, which is the pods' gateway and the
// address every kubelet and the DNS server listen on. The bridge has no
// uplink: nothing outside this machine reaches it.
type Network struct {
	Bridge  string       `json:"bridge"`
	Subnet  netip.Prefix `json:"subnet"`
	Gateway netip.Addr   `json:"gateway"`
}

// MaxHosts is how many hosts a Network has ranges for.
const MaxHosts = 250

// HostRange is the first and last pod address of host i.
func (n Network) HostRange(i int) (first, last netip.Addr) {
	b := n.Subnet.Addr().As4()
	b[2], b[3] = byte(i+1), 2
	first = netip.AddrFrom4(b)
	b[3] = 254
	return first, netip.AddrFrom4(b)
}

// HostCIDR is host i's pod range as a node's spec.podCIDR.
func (n Network) HostCIDR(i int) netip.Prefix {
	first, _ := n.HostRange(i)
	return netip.PrefixFrom(first, 24).Masked()
}

// candidates are the /16s a cluster may take, in order: 10.244.0.0/16
// (what kubeadm clusters use for pods) and the ten after it.
func candidates() []netip.Prefix {
	var out []netip.Prefix
	for x := 244; x <= 254; x++ {
		out = append(out, netip.PrefixFrom(netip.AddrFrom4([4]byte{10, byte(x), 0, 0}), 16))
	}
	return out
}

// PickNetwork chooses the first candidate /16 that no address or route on
// this machine overlaps, so that two local clusters (or a VPN) never share
// one. The bridge is named after the cluster.
func PickNetwork(l Layout) (Network, error) {
	used, err := usedPrefixes()
	if err != nil {
		return Network{}, err
	}
	for _, c := range candidates() {
		if !overlapsAny(c, used) {
			gw := c.Addr().As4()
			gw[3] = 1
			return Network{Bridge: "ms-" + l.ID, Subnet: c, Gateway: netip.AddrFrom4(gw)}, nil
		}
	}
	return Network{}, fmt.Errorf("every pod network 10.244.0.0/16 to 10.254.0.0/16 overlaps an address or route of this machine: stop another local cluster (multislice down) or free one")
}

func overlapsAny(p netip.Prefix, used []netip.Prefix) bool {
	for _, u := range used {
		if u.Overlaps(p) && u.Bits() > 0 {
			return true
		}
	}
	return false
}

// usedPrefixes are this machine's IPv4 routes (connected ones included):
// `ip -j route show table all`.
func usedPrefixes() ([]netip.Prefix, error) {
	out, err := exec.Command("ip", "-j", "-4", "route", "show", "table", "all").Output()
	if err != nil {
		return nil, fmt.Errorf("ip route: %w", err)
	}
	var routes []struct {
		Dst string `json:"dst"`
	}
	if err := json.Unmarshal(out, &routes); err != nil {
		return nil, fmt.Errorf("ip route: %w", err)
	}
	var used []netip.Prefix
	for _, r := range routes {
		if r.Dst == "default" || r.Dst == "" {
			continue
		}
		if !strings.Contains(r.Dst, "/") {
			r.Dst += "/32"
		}
		if p, err := netip.ParsePrefix(r.Dst); err == nil {
			used = append(used, p)
		}
	}
	return used, nil
}

// Create makes the bridge with the gateway address (the CNI bridge plugin
// adopts it), so the kubelets can listen on it before the first pod.
// It is idempotent.
func (n Network) Create() error {
	if !n.exists() {
		if err := ip("link", "add", n.Bridge, "type", "bridge"); err != nil {
			return err
		}
	}
	addr := netip.PrefixFrom(n.Gateway, n.Subnet.Bits()).String()
	if err := ip("addr", "replace", addr, "dev", n.Bridge); err != nil {
		return err
	}
	return ip("link", "set", n.Bridge, "up")
}

// Delete removes the bridge (its veths went with their pods' namespaces).
func (n Network) Delete() error {
	if n.Bridge == "" || !n.exists() {
		return nil
	}
	return ip("link", "delete", n.Bridge)
}

func (n Network) exists() bool {
	return exec.Command("ip", "link", "show", "dev", n.Bridge).Run() == nil
}

func ip(args ...string) error {
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
