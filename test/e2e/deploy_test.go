package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/multislice/multislice/test/framework"
)

// TestDeployManifests: dist/install.yaml (as `make release` renders it) is
// accepted by a real API server that has no Multislice yet, applying it a
// second time changes nothing and conflicts with nothing, and
// `kubectl diff` then finds no difference. Server-side apply, as for
// upstream JobSet: the CRD is too large for the client-side annotation.
func TestDeployManifests(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	kubectl := requireKubectl(t)
	c, _ := framework.StartCluster(t, "--no-manager")
	file := installYAML(t)
	run := func(args ...string) (string, error) { return kubectl(c, args...) }
	out, err := run("apply", "--server-side", "-f", file)
	if err != nil {
		t.Fatalf("kubectl apply --server-side -f install.yaml: %v\n%s", err, out)
	}
	for _, want := range []string{"customresourcedefinition.apiextensions.k8s.io/jobsets.jobset.x-k8s.io serverside-applied",
		"deployment.apps/multislice-manager serverside-applied", "poddisruptionbudget.policy/multislice-manager serverside-applied",
		"clusterrole.rbac.authorization.k8s.io/multislice-manager serverside-applied",
		"mutatingwebhookconfiguration.admissionregistration.k8s.io/multislice-mutating-webhook-configuration serverside-applied",
		"validatingwebhookconfiguration.admissionregistration.k8s.io/multislice-validating-webhook-configuration serverside-applied"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output lacks %s:\n%s", want, out)
		}
	}
	if out, err := run("apply", "--server-side", "-f", file); err != nil {
		t.Errorf("second apply: %v\n%s", err, out)
	}
	// kubectl diff reads each live object, then dry-runs the apply; a
	// controller's status write in between (the disruption controller
	// counting the manager's pods as they start) shows as a difference.
	// A difference the manifests make shows every time, so one clean diff
	// suffices.
	framework.Eventually(t, 20*time.Second, func(context.Context) (bool, string) {
		out, err := run("diff", "--server-side", "-f", file)
		return err == nil, fmt.Sprintf("kubectl diff after two applies (exit status 1 means a difference): %v\n%s", err, out)
	})
}
