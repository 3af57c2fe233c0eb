package manager

import (
	"bytes"
	"os"
	"testing"

	"sigs.k8s.io/yaml"
)

// config/webhook/webhooks.yaml is what RenderWebhooks produces for a
// Service endpoint: one source of truth. UPDATE_GOLDEN=1 rewrites the file.
func TestWebhookManifestMatchesRenderer(t *testing.T) {
	m, v := RenderWebhooks(Endpoint{ServiceNamespace: "multislice-system"}, nil)
	m.APIVersion, m.Kind = "admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"
	v.APIVersion, v.Kind = "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"
	var want bytes.Buffer
	want.WriteString("# Generated from internal/manager/webhooks.go (TestWebhookManifestMatchesRenderer).\n")
	want.WriteString("# The manager fills in caBundle with the certificate it manages.\n")
	for i, obj := range []any{m, v} {
		data, err := yaml.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		if i > 0 {
			want.WriteString("---\n")
		}
		want.Write(data)
	}
	const path = "../../config/webhook/webhooks.yaml"
	if os.Getenv("UPDATE_GOLDEN") == "1" {
		if err := os.WriteFile(path, want.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, want.Bytes()) {
		t.Fatalf("%s is stale (%v): run UPDATE_GOLDEN=1 go test ./internal/manager", path, err)
	}
}
