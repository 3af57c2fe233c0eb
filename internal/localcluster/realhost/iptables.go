package realhost

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
)

// kubeletFirewall is the filter chain a kubelet owns and kube-proxy creates
// too ("a duplicate of kubelet's"), with jumps from INPUT and OUTPUT, and
// that `kube-proxy --cleanup` leaves for the kubelet to remove. Real hosts'
// kubelets make no iptables chains, so it is kube-proxy's here.
const kubeletFirewall = "KUBE-FIREWALL"

// RemoveFirewallChain removes KUBE-FIREWALL and its jumps, for IPv4 and
// IPv6, when the chain holds no rule: an empty chain is the one kube-proxy
// made; one with rules belongs to a kubelet of another cluster here.
func RemoveFirewallChain() error {
	var errs []error
	for _, ipt := range []string{"iptables", "ip6tables"} {
		out, err := exec.Command(ipt, "-w", "-t", "filter", "-S", kubeletFirewall).Output()
		if err != nil {
			continue // no such chain (or no such tool): nothing to remove
		}
		if strings.TrimSpace(string(out)) != "-N "+kubeletFirewall {
			continue // it has rules: not ours
		}
		for _, from := range []string{"INPUT", "OUTPUT"} {
			for exec.Command(ipt, "-w", "-t", "filter", "-D", from, "-j", kubeletFirewall).Run() == nil {
			}
		}
		if out, err := exec.Command(ipt, "-w", "-t", "filter", "-X", kubeletFirewall).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s -X %s: %v: %s", ipt, kubeletFirewall, err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}
