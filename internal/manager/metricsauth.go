package manager

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/go-logr/logr"
	authnv1 "k8s.io/api/authentication/v1"
	authzv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// authorizedMetrics guards /metrics as upstream's manager does, without
// pulling in k8s.io/apiserver: the caller's bearer token is checked with a
// TokenReview, and a SubjectAccessReview asks whether that user may "get"
// the non-resource URL (the metrics-reader ClusterRole grants it).
func authorizedMetrics(cfg *rest.Config, httpClient *http.Client) (metricsserver.Filter, error) {
	client, err := kubernetes.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return nil, err
	}
	return func(log logr.Logger, next http.Handler) (http.Handler, error) {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			token, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
			if !ok || token == "" {
				http.Error(w, "Unauthorized: send a bearer token of an identity allowed to get /metrics", http.StatusUnauthorized)
				return
			}
			ctx, cancel := context.WithTimeout(r.Context(), 10*time.Second)
			defer cancel()
			review, err := client.AuthenticationV1().TokenReviews().Create(ctx,
				&authnv1.TokenReview{Spec: authnv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
			if err != nil || !review.Status.Authenticated {
				if err != nil {
					log.Error(err, "metrics: token review")
				}
				http.Error(w, "Unauthorized", http.StatusUnauthorized)
				return
			}
			u := review.Status.User
			extra := map[string]authzv1.ExtraValue{}
			for k, v := range u.Extra {
				extra[k] = authzv1.ExtraValue(v)
			}
			sar, err := client.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authzv1.SubjectAccessReview{Spec: authzv1.SubjectAccessReviewSpec{
				User: u.Username, UID: u.UID, Groups: u.Groups, Extra: extra,
				NonResourceAttributes: &authzv1.NonResourceAttributes{Path: r.URL.Path, Verb: "get"},
			}}, metav1.CreateOptions{})
			if err != nil || !sar.Status.Allowed {
				if err != nil {
					log.Error(err, "metrics: subject access review")
				}
				http.Error(w, "Forbidden: "+u.Username+" may not get "+r.URL.Path, http.StatusForbidden)
				return
			}
			next.ServeHTTP(w, r)
		}), nil
	}, nil
}
