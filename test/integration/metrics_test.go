package integration

import (
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"testing"

	authnv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/test/framework"
)

// TestMetricsNeedAuthorization: with --metrics-secure (the Deployment's
// default) /metrics answers only callers whose token may get it.
func TestMetricsNeedAuthorization(t *testing.T) {
	var addr string
	env := framework.StartEnvWith(t, func(o *manager.Options) { o.MetricsSecure, addr = true, o.MetricsAddr })
	ctx := context.Background()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	token := func(name string) string {
		if _, err := cs.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		tr, err := cs.CoreV1().ServiceAccounts("default").CreateToken(ctx, name, &authnv1.TokenRequest{}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return tr.Status.Token
	}
	reader, stranger := token("prometheus"), token("stranger")
	if _, err := cs.RbacV1().ClusterRoles().Create(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: "metrics-reader"},
		Rules: []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: "prometheus"},
		RoleRef:  rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "metrics-reader"},
		Subjects: []rbacv1.Subject{{Kind: "ServiceAccount", Name: "prometheus", Namespace: "default"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	get := func(token string) int {
		req, _ := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := client.Do(req)
		if err != nil {
			return 0 // not serving yet
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for _, tc := range []struct {
		who   string
		token string
		want  int
	}{{"no token", "", 401}, {"a bad token", "nope", 401}, {"a ServiceAccount without the role", stranger, 403}, {"Prometheus with the role", reader, 200}} {
		framework.Eventually(t, wait, func(context.Context) (bool, string) {
			got := get(tc.token)
			return got == tc.want, fmt.Sprintf("%s: %d, want %d", tc.who, got, tc.want)
		})
	}
}
