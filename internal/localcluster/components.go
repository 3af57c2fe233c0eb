package localcluster

import (
	"fmt"
	"os"
	"strconv"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/multislice/multislice/internal/localcluster/sim"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
	"github.com/multislice/multislice/internal/podgroups"
)

const (
	serviceCIDR = "10.96.0.0/16"
	serviceIP   = "10.96.0.1" // the kubernetes Service: first address of serviceCIDR
	podCIDR     = "10.64.0.0/12"
)

// ports are the loopback ports of one cluster.
type ports struct {
	APIServer, EtcdClient, EtcdPeer, Scheduler, ControllerManager, Kwok int
	// Egress is the API server's way to nodes (its "cluster" egress proxy),
	// served by sim-agents: it ends at the simulated kubelets' log endpoint.
	Egress int
}

func (h Home) pki(name string) string { return h.path("pki", name) }

func (h Home) etcdArgs(p ports) []string {
	client := "https://127.0.0.1:" + strconv.Itoa(p.EtcdClient)
	peer := "https://127.0.0.1:" + strconv.Itoa(p.EtcdPeer)
	cert, key, ca := h.pki("etcd.crt"), h.pki("etcd.key"), h.pki("ca.crt")
	return []string{
		"--name=multislice", "--data-dir=" + h.path("etcd"),
		"--listen-client-urls=" + client, "--advertise-client-urls=" + client,
		"--listen-peer-urls=" + peer, "--initial-advertise-peer-urls=" + peer,
		"--initial-cluster=multislice=" + peer,
		// TLS with client certificates on both ports: only the apiserver reads etcd.
		"--cert-file=" + cert, "--key-file=" + key, "--client-cert-auth", "--trusted-ca-file=" + ca,
		"--peer-cert-file=" + cert, "--peer-key-file=" + key, "--peer-client-cert-auth", "--peer-trusted-ca-file=" + ca,
		// A throw-away local cluster trades durability for speed.
		"--unsafe-no-fsync", "--log-level=warn",
	}
}

func (h Home) apiServerArgs(p ports) []string {
	return []string{
		"--etcd-servers=https://127.0.0.1:" + strconv.Itoa(p.EtcdClient),
		"--etcd-cafile=" + h.pki("ca.crt"),
		"--etcd-certfile=" + h.pki("apiserver-etcd-client.crt"), "--etcd-keyfile=" + h.pki("apiserver-etcd-client.key"),
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(p.APIServer),
		"--tls-cert-file=" + h.pki("apiserver.crt"), "--tls-private-key-file=" + h.pki("apiserver.key"),
		"--client-ca-file=" + h.pki("ca.crt"),
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + h.pki("sa.key"), "--service-account-signing-key-file=" + h.pki("sa.key"),
		"--service-cluster-ip-range=" + serviceCIDR,
		"--authorization-mode=Node,RBAC",
		// GKE enables ExtendedResourceToleration: pods requesting google.com/tpu
		// tolerate the google.com/tpu taint without saying so (the seed relies on it).
		"--enable-admission-plugins=ExtendedResourceToleration",
		// The seed's pods run privileged.
		"--allow-privileged=true",
		"--max-requests-inflight=1000", "--max-mutating-requests-inflight=500",
		// The kubernetes Service cannot point at a loopback address; nothing
		// in the simulated fleet dials it anyway.
		"--endpoint-reconciler-type=none",
		"--profiling=false",
		// Pod logs: the API server dials the node's kubelet through its
		// "cluster" egress proxy, as through konnectivity on GKE.
		"--egress-selector-config-file=" + h.path("egress.yaml"),
		"--kubelet-preferred-address-types=InternalIP,Hostname",
		"--kubelet-client-certificate=" + h.pki("apiserver-kubelet-client.crt"),
		"--kubelet-client-key=" + h.pki("apiserver-kubelet-client.key"),
		// spec.scheduling's Workload and PodGroups, and gang scheduling.
		"--runtime-config=" + podgroups.RuntimeConfig, "--feature-gates=" + podgroups.KubernetesGates,
	}
}

// controllerManagerArgs: lease is the simulated nodes' (sim.NodeLease).
func (h Home) controllerManagerArgs(p ports, lease time.Duration) []string {
	kc := h.pki("kube-controller-manager.kubeconfig")
	return []string{
		"--kubeconfig=" + kc, "--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(p.ControllerManager),
		"--leader-elect=false",
		"--service-account-private-key-file=" + h.pki("sa.key"), "--root-ca-file=" + h.pki("ca.crt"),
		"--use-service-account-credentials=true",
		"--kube-api-qps=500", "--kube-api-burst=1000", "--concurrent-job-syncs=20",
		// A JobSet's headless Service selects every pod of the JobSet; by
		// default each pod change rewrites its Endpoints (up to 1,000
		// addresses) and EndpointSlices. Batching them per second halves
		// the controller-manager's CPU while 1,024 pods start.
		"--endpoint-updates-batch-period=1s", "--endpointslice-updates-batch-period=1s",
		"--profiling=false",
		"--node-monitor-grace-period=" + sim.MonitorGrace(lease).String(),
		// Its PodGroup protection lets a deleted PodGroup go once its pods have.
		"--feature-gates=" + podgroups.KubernetesGates,
	}
}

func (h Home) schedulerArgs(p ports) []string {
	kc := h.pki("kube-scheduler.kubeconfig")
	return []string{
		"--config=" + h.path("kube-scheduler.yaml"),
		"--authentication-kubeconfig=" + kc, "--authorization-kubeconfig=" + kc,
		"--bind-address=127.0.0.1", "--secure-port=" + strconv.Itoa(p.Scheduler),
		"--profiling=false", "--feature-gates=" + podgroups.KubernetesGates,
	}
}

func (h Home) kwokArgs(p ports) []string {
	return []string{
		"--kubeconfig=" + h.pki("kwok.kubeconfig"), "--config=" + h.path("kwok.yaml"),
		"--manage-nodes-with-annotation-selector=" + fleet.KwokNodeAnnotation + "=fake",
		"--server-address=127.0.0.1:" + strconv.Itoa(p.Kwok),
		"--cidr=" + podCIDR,
	}
}

// writeConfigs writes the kubeconfigs and component config files, kwok's
// with the simulated nodes' lease; it runs after writePKI.
func (h Home) writeConfigs(p ports, lease time.Duration) error {
	server := fmt.Sprintf("https://127.0.0.1:%d", p.APIServer)
	for _, id := range identities {
		path := h.pki(id.name + ".kubeconfig")
		if id.name == "admin" {
			path = h.Kubeconfig()
		}
		if err := h.writeKubeconfig(path, server, id.name); err != nil {
			return err
		}
	}
	scheduler := fmt.Sprintf(`apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection:
  kubeconfig: %s
  qps: 500
  burst: 1000
leaderElection:
  leaderElect: false
`, h.pki("kube-scheduler.kubeconfig"))
	if err := os.WriteFile(h.path("kube-scheduler.yaml"), []byte(scheduler), 0o600); err != nil {
		return err
	}
	egress := fmt.Sprintf(`apiVersion: apiserver.k8s.io/v1beta1
kind: EgressSelectorConfiguration
egressSelections:
- name: cluster
  connection:
    proxyProtocol: HTTPConnect
    transport:
      tcp:
        url: https://127.0.0.1:%d
        tlsConfig:
          caBundle: %s
          clientCert: %s
          clientKey: %s
`, p.Egress, h.pki("ca.crt"), h.pki("apiserver-kubelet-client.crt"), h.pki("apiserver-kubelet-client.key"))
	if err := os.WriteFile(h.path("egress.yaml"), []byte(egress), 0o600); err != nil {
		return err
	}
	kwok, err := sim.KwokConfig(lease)
	if err != nil {
		return err
	}
	return os.WriteFile(h.path("kwok.yaml"), kwok, 0o600)
}

// writeKubeconfig embeds the credentials, so the file works from anywhere.
func (h Home) writeKubeconfig(path, server, user string) error {
	read := func(name string) ([]byte, error) { return os.ReadFile(h.pki(name)) }
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	cert, err := read(user + ".crt")
	if err != nil {
		return err
	}
	key, err := read(user + ".key")
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["multislice"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: ca}
	cfg.AuthInfos[user] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts["multislice"] = &clientcmdapi.Context{Cluster: "multislice", AuthInfo: user}
	cfg.CurrentContext = "multislice"
	return clientcmd.WriteToFile(*cfg, path)
}
