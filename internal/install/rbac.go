package install

import (
	"context"
	"fmt"
	"strings"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/multislice/multislice/config/agent"
	"github.com/multislice/multislice/config/rbac"
)

// Namespace is where the manager keeps its certificate Secret, Lease and
// Services (config/default installs there).
const Namespace = "multislice-system"

// rbacKinds are the kinds an RBAC manifest may hold, with their resources.
var rbacKinds = map[string]struct {
	gvr        schema.GroupVersionResource
	namespaced bool
}{
	"ServiceAccount":     {schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, true},
	"ClusterRole":        {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}, false},
	"ClusterRoleBinding": {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterrolebindings"}, false},
	"Role":               {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "roles"}, true},
	"RoleBinding":        {schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "rolebindings"}, true},
}

// ApplyRBAC applies, server-side, the RBAC objects in the YAML documents of
// data, the namespaced ones in ns, and grants every binding to users as
// well as to the subjects it names.
func ApplyRBAC(ctx context.Context, cfg *rest.Config, data []byte, ns string, users ...string) error {
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return eachObject(data, func(u *unstructured.Unstructured) error {
		kind, ok := rbacKinds[u.GetKind()]
		if !ok {
			return fmt.Errorf("%s %s: not an RBAC object", u.GetKind(), u.GetName())
		}
		if strings.HasSuffix(u.GetKind(), "Binding") {
			subjects, _, _ := unstructured.NestedSlice(u.Object, "subjects")
			for _, s := range subjects {
				if m, ok := s.(map[string]any); ok && m["kind"] == "ServiceAccount" && m["namespace"] == nil {
					m["namespace"] = ns
				}
			}
			for _, user := range users {
				subjects = append(subjects, map[string]any{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"})
			}
			if err := unstructured.SetNestedSlice(u.Object, subjects, "subjects"); err != nil {
				return err
			}
		}
		r := client.Resource(kind.gvr)
		var ri dynamic.ResourceInterface = r
		if kind.namespaced {
			u.SetNamespace(ns)
			ri = r.Namespace(ns)
		}
		if _, err := ri.Apply(ctx, u.GetName(), u, metav1.ApplyOptions{FieldManager: "multislice", Force: true}); err != nil {
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		return nil
	})
}

// ManagerRBAC grants the manager's shipped permissions (config/rbac) in
// namespace ns to its ServiceAccount and to users, and returns once the API
// server enforces them: the manager starts with exactly what a real cluster
// gives it, so every test on the local cluster proves the manifest.
func ManagerRBAC(ctx context.Context, cfg *rest.Config, ns string, users ...string) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	_, err = client.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	if err := ApplyRBAC(ctx, cfg, rbac.Manager, ns, users...); err != nil {
		return err
	}
	for _, user := range users {
		err := WaitAllowed(ctx, client, user,
			authorizationv1.ResourceAttributes{Verb: "create", Group: "batch", Resource: "jobs"},
			authorizationv1.ResourceAttributes{Verb: "create", Resource: "secrets", Namespace: ns})
		if err != nil {
			return err
		}
	}
	return nil
}

// AgentRBAC grants the in-place restart agent's shipped permissions
// (config/agent) in namespace ns: its ServiceAccount, multislice-agent, is
// what examples/in-place-restart.yaml's pods run as.
func AgentRBAC(ctx context.Context, cfg *rest.Config, ns string) error {
	if err := ApplyRBAC(ctx, cfg, agent.RBAC, ns); err != nil {
		return fmt.Errorf("grant the in-place restart agent's permissions in %s: %w", ns, err)
	}
	return nil
}

// WaitAllowed returns once the API server allows user every one of attrs
// (RBAC takes effect a moment after a binding is written), or fails after 30 s.
func WaitAllowed(ctx context.Context, client kubernetes.Interface, user string, attrs ...authorizationv1.ResourceAttributes) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, a := range attrs {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &a}}
			got, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			if !got.Status.Allowed {
				last = fmt.Sprintf("%s may not %s %s", user, a.Verb, a.Resource)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("permissions for %s not in force: %s", user, last)
	}
	return nil
}
