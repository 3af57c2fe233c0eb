// Package kueue makes Kueue a peer of Multislice: its shipped manifests
// pointed at a Kueue that runs beside a local cluster, queues built from
// the fleet's nodes, and MultiKueue connections between clusters.
package kueue

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// Namespace is where Kueue keeps its Secrets (MultiKueue's kubeconfigs).
const Namespace = "kueue-system"

// Group is Kueue's API group.
const Group = "kueue.x-k8s.io"

// Framework is the one Kueue integration a Multislice cluster turns on.
var Framework = api.GroupVersion.Group + "/jobset"

// servedGroups are the API groups whose admission webhooks are registered:
// Kueue's own and JobSet's. Those of pods, Deployments and the other
// frameworks are left out, so no pod's creation waits on Kueue.
var servedGroups = []string{Group, api.GroupVersion.Group}

// namePrefix is what Kueue's kustomization prefixes every name with.
const namePrefix = "kueue-"

// Manifests are the parts of Kueue's shipped configuration a cluster
// needs besides the binary: CRDs, admission webhooks and RBAC.
type Manifests struct {
	CRDs []*apiextensionsv1.CustomResourceDefinition
	// Converted are the CRDs whose versions Kueue's webhook converts (the
	// others' versions are the same schema and need no conversion).
	Converted  map[string]bool
	Mutating   *admissionregistrationv1.MutatingWebhookConfiguration
	Validating *admissionregistrationv1.ValidatingWebhookConfiguration
	// RBAC is Kueue's ClusterRole, Role and their bindings, renamed and
	// placed in Namespace as its kustomization does.
	RBAC []byte
}

// Load reads the manifests hack/build-controlplane.sh copies next to the
// kueue binary: the CRDs (*.x-k8s.io_*.yaml), manifests.yaml (webhooks)
// and rbac-*.yaml.
func Load(dir string) (*Manifests, error) {
	m := &Manifests{}
	crds, err := filepath.Glob(filepath.Join(dir, Group+"_*.yaml"))
	if err != nil || len(crds) == 0 {
		return nil, fmt.Errorf("no Kueue CRDs in %s: build Kueue with `make binaries`", dir)
	}
	for _, path := range crds {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := readYAML(path, crd); err != nil {
			return nil, err
		}
		m.CRDs = append(m.CRDs, crd)
	}
	if m.Converted, err = converted(filepath.Join(dir, "crd-kustomization.yaml")); err != nil {
		return nil, err
	}
	err = eachDocument(filepath.Join(dir, "manifests.yaml"), func(doc []byte, kind string) error {
		switch kind {
		case "MutatingWebhookConfiguration":
			m.Mutating = &admissionregistrationv1.MutatingWebhookConfiguration{}
			return yaml.UnmarshalStrict(doc, m.Mutating)
		case "ValidatingWebhookConfiguration":
			m.Validating = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			return yaml.UnmarshalStrict(doc, m.Validating)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if m.Mutating == nil || m.Validating == nil {
		return nil, fmt.Errorf("%s: want a mutating and a validating webhook configuration", filepath.Join(dir, "manifests.yaml"))
	}
	rbac, err := filepath.Glob(filepath.Join(dir, "rbac-*.yaml"))
	if err != nil || len(rbac) == 0 {
		return nil, fmt.Errorf("no Kueue RBAC (rbac-*.yaml) in %s", dir)
	}
	slices.Sort(rbac)
	var out bytes.Buffer
	for _, path := range rbac {
		err := eachDocument(path, func(doc []byte, _ string) error {
			renamed, err := renameRBAC(doc)
			if err != nil {
				return fmt.Errorf("%s: %w", path, err)
			}
			out.WriteString("---\n")
			out.Write(renamed)
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	m.RBAC = out.Bytes()
	return m, nil
}

// converted reads which CRDs Kueue's kustomization patches with its
// conversion webhook (patches/webhook_in_<plural>.yaml).
func converted(kustomization string) (map[string]bool, error) {
	var k struct {
		Patches []struct{ Path string }
	}
	if err := readYAML(kustomization, &k); err != nil {
		return nil, err
	}
	out := map[string]bool{}
	for _, p := range k.Patches {
		base := filepath.Base(p.Path)
		if plural, ok := strings.CutPrefix(strings.TrimSuffix(base, ".yaml"), "webhook_in_"); ok {
			out[plural+"."+Group] = true
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s names no conversion webhook patch (patches/webhook_in_<plural>.yaml)", kustomization)
	}
	return out, nil
}

// renameRBAC prefixes an RBAC object's name and its roleRef's, and moves
// what is namespaced into Namespace.
func renameRBAC(doc []byte) ([]byte, error) {
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(doc, &u.Object); err != nil {
		return nil, err
	}
	u.SetName(namePrefix + u.GetName())
	if u.GetNamespace() != "" {
		u.SetNamespace(Namespace)
	}
	if ref, ok, _ := unstructured.NestedString(u.Object, "roleRef", "name"); ok {
		_ = unstructured.SetNestedField(u.Object, namePrefix+ref, "roleRef", "name")
	}
	return yaml.Marshal(u.Object)
}

// ServeAt points every admission webhook, and the CRDs' conversion, at
// base (e.g. https://127.0.0.1:9443), trusting caBundle, and keeps only
// the webhooks of servedGroups. Names get Kueue's prefix.
func (m *Manifests) ServeAt(base string, caBundle []byte) {
	config := func(cc *admissionregistrationv1.WebhookClientConfig) {
		path := ""
		if cc.Service != nil {
			path = ptr.Deref(cc.Service.Path, "")
		}
		*cc = admissionregistrationv1.WebhookClientConfig{URL: ptr.To(base + path), CABundle: caBundle}
	}
	m.Mutating.Name = namePrefix + m.Mutating.Name
	m.Mutating.Webhooks = slices.DeleteFunc(m.Mutating.Webhooks, func(w admissionregistrationv1.MutatingWebhook) bool {
		return !served(w.Rules)
	})
	for i := range m.Mutating.Webhooks {
		config(&m.Mutating.Webhooks[i].ClientConfig)
	}
	m.Validating.Name = namePrefix + m.Validating.Name
	m.Validating.Webhooks = slices.DeleteFunc(m.Validating.Webhooks, func(w admissionregistrationv1.ValidatingWebhook) bool {
		return !served(w.Rules)
	})
	for i := range m.Validating.Webhooks {
		config(&m.Validating.Webhooks[i].ClientConfig)
	}
	for _, crd := range m.CRDs {
		if !m.Converted[crd.Name] {
			continue
		}
		crd.Spec.Conversion = &apiextensionsv1.CustomResourceConversion{
			Strategy: apiextensionsv1.WebhookConverter,
			Webhook: &apiextensionsv1.WebhookConversion{
				ClientConfig:             &apiextensionsv1.WebhookClientConfig{URL: ptr.To(base + "/convert"), CABundle: caBundle},
				ConversionReviewVersions: []string{"v1"},
			},
		}
	}
}

// served: every rule is for one of servedGroups.
func served(rules []admissionregistrationv1.RuleWithOperations) bool {
	for _, r := range rules {
		for _, g := range r.APIGroups {
			if !slices.Contains(servedGroups, g) {
				return false
			}
		}
	}
	return len(rules) > 0
}

func readYAML(path string, into any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := yaml.Unmarshal(data, into); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// eachDocument calls fn with each non-empty YAML document of the file at
// path and its kind.
func eachDocument(path string, fn func(doc []byte, kind string) error) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		var meta struct{ Kind string }
		if err := yaml.Unmarshal(doc, &meta); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if strings.TrimSpace(string(doc)) == "" || meta.Kind == "" {
			continue
		}
		if err := fn(doc, meta.Kind); err != nil {
			return err
		}
	}
}
