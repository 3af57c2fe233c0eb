package release

import (
	"strings"
	"testing"
)

func TestInstall(t *testing.T) {
	manifest, err := Install("../../config/default", "registry.example/multislice:v1")
	if err != nil {
		t.Fatal(err)
	}
	s := string(manifest)
	if !strings.Contains(s, "image: registry.example/multislice:v1") || strings.Contains(s, baseImage) {
		t.Error("the manager's image is not set")
	}
	var kinds []string
	for _, line := range strings.Split(s, "\n") {
		if k, ok := strings.CutPrefix(line, "kind: "); ok {
			kinds = append(kinds, k)
		}
	}
	if len(kinds) == 0 || kinds[0] != "Namespace" || kinds[len(kinds)-1] != "ValidatingWebhookConfiguration" {
		t.Errorf("order %v: want the Namespace first and the webhooks last", kinds)
	}
	for _, want := range []string{"CustomResourceDefinition", "Deployment", "PodDisruptionBudget", "ServiceAccount", "ClusterRoleBinding", "MutatingWebhookConfiguration"} {
		if !strings.Contains(s, "kind: "+want+"\n") {
			t.Errorf("install.yaml has no %s", want)
		}
	}
	if _, err := Install("../../config/default", ""); err == nil || !strings.Contains(err.Error(), "IMAGE=") {
		t.Errorf("no image: %v, want a refusal saying how to set it", err)
	}
}

// The binary's embedded tree renders the same install.yaml as the source's.
func TestInstallEmbeddedIsTheSource(t *testing.T) {
	fromSource, err := Install("../../config/default", "registry.example/multislice:v1")
	if err != nil {
		t.Fatal(err)
	}
	embedded, err := InstallEmbedded("registry.example/multislice:v1")
	if err != nil {
		t.Fatal(err)
	}
	if string(fromSource) != string(embedded) {
		t.Error("install.yaml from the embedded tree differs from config/default's: embed every file config/default includes (config/embed.go)")
	}
}
