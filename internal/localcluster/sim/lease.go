package sim

import (
	"bytes"
	"fmt"
	"time"
)

// KubeletLease is the node lease of a real kubelet, which kwok renews,
// as a kubelet does, every quarter of it.
const KubeletLease = 40 * time.Second

// longLease is the lease of a fleet that starts with more than
// LongLeaseHosts hosts. At 5,120 simulated hosts renewing every 10 s, an
// idle cluster kept 1.8 of two cores busy (the API server 1.0, etcd and
// kwok 0.3 each); renewing every 25 s, 1.2. Under a placement round's load
// renewing every 25 s fell behind by up to 171 s (the API server answered
// a renewal in 0.27 s), so the controller-manager marked thousands of
// nodes NotReady and back in one round; their pods with them. Renewing
// every 52 s, with a grace as long as the lease (MonitorGrace), none did.
const (
	longLease      = 200 * time.Second
	LongLeaseHosts = 1024
)

// MonitorGrace is how long the controller-manager lets a node's lease go
// unrenewed before it marks the node NotReady: Kubernetes' default, 50 s
// (five of a kubelet's renewals), or in a fleet of long leases the lease
// itself (four renewals). A simulated host that fails (chaos fail-host) is
// marked NotReady at once either way; the grace is how long a real host
// whose kubelet stopped, or a host kwok no longer plays, stays Ready.
func MonitorGrace(lease time.Duration) time.Duration {
	return max(50*time.Second, lease)
}

// NodeLease is the lease kwok keeps for each simulated node of a fleet
// that starts with hosts hosts: a kubelet's, or a longer one in a fleet
// too large for this machine to renew that often.
func NodeLease(hosts int) time.Duration {
	if hosts > LongLeaseHosts {
		return longLease
	}
	return KubeletLease
}

// RenewedWithin is the longest kwok waits between two renewals of a
// lease: a quarter of it, plus kwok's jitter of up to 4%.
func RenewedWithin(lease time.Duration) time.Duration {
	return lease / 4 * 104 / 100
}

// KwokConfig is kwok's configuration (stages.yaml) with the simulated
// nodes' lease set to lease.
func KwokConfig(lease time.Duration) ([]byte, error) {
	const key = "nodeLeaseDurationSeconds: "
	old := []byte(key + fmt.Sprint(int(KubeletLease.Seconds())) + "\n")
	if bytes.Count(stages, old) != 1 {
		return nil, fmt.Errorf("stages.yaml must set %q once", old)
	}
	return bytes.Replace(stages, old, []byte(key+fmt.Sprint(int(lease.Seconds()))+"\n"), 1), nil
}
