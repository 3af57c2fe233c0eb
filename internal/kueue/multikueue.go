package kueue

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/clientcmd"
)

// MultiKueueController is the admission check controller of MultiKueue.
const MultiKueueController = Group + "/multikueue"

// ManagedByMultiKueue is the spec.managedBy Kueue gives a JobSet that
// MultiKueue dispatches: the manager cluster's controller leaves it alone.
const ManagedByMultiKueue = MultiKueueController

// Connection makes one cluster a MultiKueue manager of a worker cluster.
type Connection struct {
	// Worker names the worker cluster (the MultiKueueCluster).
	Worker string
	// Kubeconfig reaches the worker; it must carry its credentials and CA
	// inline (Kueue refuses file paths and insecure TLS).
	Kubeconfig []byte
	// ClusterQueue is the manager's ClusterQueue whose workloads go to the
	// worker.
	ClusterQueue string
}

// Validate checks what Kueue would refuse later, naming the flag to fix.
func (c Connection) Validate() error {
	if errs := validation.IsDNS1123Subdomain(c.Worker); len(errs) > 0 {
		return fmt.Errorf("--worker-name %q: %s", c.Worker, errs[0])
	}
	if errs := validation.IsDNS1123Subdomain(c.ClusterQueue); len(errs) > 0 {
		return fmt.Errorf("--cluster-queue %q: %s", c.ClusterQueue, errs[0])
	}
	cfg, err := clientcmd.Load(c.Kubeconfig)
	if err != nil {
		return fmt.Errorf("--worker-kubeconfig: %w", err)
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return fmt.Errorf("--worker-kubeconfig: no current context")
	}
	cluster, user := cfg.Clusters[ctx.Cluster], cfg.AuthInfos[ctx.AuthInfo]
	switch {
	case cluster == nil || cluster.Server == "":
		return fmt.Errorf("--worker-kubeconfig: the current context has no server")
	case cluster.InsecureSkipTLSVerify:
		return fmt.Errorf("--worker-kubeconfig: insecure-skip-tls-verify is refused by MultiKueue; give the cluster's CA")
	case cluster.CertificateAuthority != "":
		return fmt.Errorf("--worker-kubeconfig: certificate-authority %s is a file path, which MultiKueue refuses; inline it as certificate-authority-data", cluster.CertificateAuthority)
	case user != nil && (user.ClientCertificate != "" || user.ClientKey != "" || user.TokenFile != ""):
		return fmt.Errorf("--worker-kubeconfig: the user's credentials are file paths, which MultiKueue cannot read; inline them (client-certificate-data, client-key-data, token)")
	}
	return nil
}

// Objects are what Kueue needs for the connection: the Secret holding the
// worker's kubeconfig, the MultiKueueCluster, a MultiKueueConfig and an
// AdmissionCheck of the same name, and the ClusterQueue's reference to it
// (applied as a patch: the rest of the ClusterQueue is left as it is).
func (c Connection) Objects() []*unstructured.Unstructured {
	secret := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "Secret",
		"metadata":   map[string]any{"name": c.secretName(), "namespace": Namespace},
		"stringData": map[string]any{"kubeconfig": string(c.Kubeconfig)},
	}}
	cluster := object("MultiKueueCluster", c.Worker, "", map[string]any{
		"clusterSource": map[string]any{"kubeConfig": map[string]any{"locationType": "Secret", "location": c.secretName()}},
	})
	config := object("MultiKueueConfig", c.Worker, "", map[string]any{"clusters": []any{c.Worker}})
	check := object("AdmissionCheck", c.Worker, "", map[string]any{
		"controllerName": MultiKueueController,
		"parameters":     map[string]any{"apiGroup": Group, "kind": "MultiKueueConfig", "name": c.Worker},
	})
	queue := object("ClusterQueue", c.ClusterQueue, "", map[string]any{
		"admissionChecksStrategy": map[string]any{"admissionChecks": []any{map[string]any{"name": c.Worker}}},
	})
	return []*unstructured.Unstructured{secret, cluster, config, check, queue}
}

func (c Connection) secretName() string { return "multikueue-" + c.Worker }
