package e2e

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/multislice/multislice/test/framework"
)

// TestDeployManifests: config/default (namespace, CRD, RBAC, webhook
// configurations, Deployment) is accepted by a real apiserver. The cluster
// runs without our manager, as a real cluster would before installation.
// Server-side apply, as for upstream JobSet: the CRD is too large for the
// client-side last-applied annotation.
func TestDeployManifests(t *testing.T) {
	framework.RequireE2E(t)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl is not installed")
	}
	c, _ := framework.StartCluster(t, "--no-manager")
	cmd := exec.Command(kubectl, "apply", "--server-side", "--dry-run=server", "-k", "../../config/default")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+filepath.Join(c.Home, "kubeconfig"))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply --server-side --dry-run=server -k config/default: %v\n%s", err, out)
	}
	for _, want := range []string{"customresourcedefinition.apiextensions.k8s.io/jobsets.jobset.x-k8s.io", "deployment.apps/multislice-manager",
		"clusterrole.rbac.authorization.k8s.io/multislice-manager", "mutatingwebhookconfiguration.admissionregistration.k8s.io/multislice-mutating-webhook-configuration",
		"validatingwebhookconfiguration.admissionregistration.k8s.io/multislice-validating-webhook-configuration"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("dry run output lacks %s:\n%s", want, out)
		}
	}
}
