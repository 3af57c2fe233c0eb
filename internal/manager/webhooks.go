package manager

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/multislice/multislice/internal/webhook/tpu"
)

// Names of the webhook configurations the manager owns.
const (
	MutatingConfigName   = "multislice-mutating-webhook-configuration"
	ValidatingConfigName = "multislice-validating-webhook-configuration"
	WebhookServiceName   = "multislice-webhook-service"
)

// Endpoint says how the apiserver reaches the webhook server: through a
// Service in a real cluster, or a URL on the loopback for the local cluster.
type Endpoint struct {
	ServiceNamespace string
	// URLBase, when set, is e.g. https://127.0.0.1:9443.
	URLBase string
}

func (e Endpoint) clientConfig(path string, ca []byte) admissionv1.WebhookClientConfig {
	if e.URLBase != "" {
		return admissionv1.WebhookClientConfig{URL: ptr.To(e.URLBase + path), CABundle: ca}
	}
	return admissionv1.WebhookClientConfig{CABundle: ca, Service: &admissionv1.ServiceReference{
		Namespace: e.ServiceNamespace, Name: WebhookServiceName, Path: ptr.To(path), Port: ptr.To(int32(443)),
	}}
}

var (
	jobsetRule = func(ops ...admissionv1.OperationType) []admissionv1.RuleWithOperations {
		return []admissionv1.RuleWithOperations{{Operations: ops, Rule: admissionv1.Rule{
			APIGroups: []string{"jobset.x-k8s.io"}, APIVersions: []string{"v1alpha2"}, Resources: []string{"jobsets"},
		}}}
	}
	sideEffectsNone = ptr.To(admissionv1.SideEffectClassNone)
	jobCreate       = []admissionv1.RuleWithOperations{{Operations: []admissionv1.OperationType{admissionv1.Create}, Rule: admissionv1.Rule{
		APIGroups: []string{"batch"}, APIVersions: []string{"v1"}, Resources: []string{"jobs"},
	}}}
	onlyTPU = []admissionv1.MatchCondition{{Name: "requests-google-tpu", Expression: tpu.MatchTPU}}
)

// RenderWebhooks returns the manager's webhook configurations. Every webhook
// is scoped to our own workloads (JobSets, and Jobs that request TPUs,
// selected by a CEL matchCondition), so that failurePolicy Fail can never
// block anything else.
func RenderWebhooks(e Endpoint, ca []byte) (*admissionv1.MutatingWebhookConfiguration, *admissionv1.ValidatingWebhookConfiguration) {
	mutating := &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: MutatingConfigName},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:                    "mjobset.kb.io",
			ClientConfig:            e.clientConfig("/mutate-jobset-x-k8s-io-v1alpha2-jobset", ca),
			Rules:                   jobsetRule(admissionv1.Create),
			FailurePolicy:           ptr.To(admissionv1.Fail),
			SideEffects:             sideEffectsNone,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(10)),
		}, {
			Name:                    "mtpujob.multislice.dev",
			ClientConfig:            e.clientConfig("/mutate-batch-v1-job", ca),
			Rules:                   jobCreate,
			MatchConditions:         onlyTPU,
			FailurePolicy:           ptr.To(admissionv1.Fail),
			SideEffects:             sideEffectsNone,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(10)),
		}},
	}
	validating := &admissionv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: ValidatingConfigName},
		Webhooks: []admissionv1.ValidatingWebhook{{
			Name:                    "vjobset.kb.io",
			ClientConfig:            e.clientConfig("/validate-jobset-x-k8s-io-v1alpha2-jobset", ca),
			Rules:                   jobsetRule(admissionv1.Create, admissionv1.Update),
			FailurePolicy:           ptr.To(admissionv1.Fail),
			SideEffects:             sideEffectsNone,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(10)),
		}, {
			Name:                    "vtpujob.multislice.dev",
			ClientConfig:            e.clientConfig("/validate-batch-v1-job", ca),
			Rules:                   jobCreate,
			MatchConditions:         onlyTPU,
			FailurePolicy:           ptr.To(admissionv1.Fail),
			SideEffects:             sideEffectsNone,
			AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds:          ptr.To(int32(10)),
		}},
	}
	return mutating, validating
}

// InstallWebhooks creates or updates the configurations with the CA bundle.
func InstallWebhooks(ctx context.Context, client kubernetes.Interface, e Endpoint, ca []byte) error {
	m, v := RenderWebhooks(e, ca)
	api := client.AdmissionregistrationV1()
	if old, err := api.MutatingWebhookConfigurations().Get(ctx, m.Name, metav1.GetOptions{}); err == nil {
		m.ResourceVersion = old.ResourceVersion
		_, err = api.MutatingWebhookConfigurations().Update(ctx, m, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update %s: %w", m.Name, err)
		}
	} else if apierrors.IsNotFound(err) {
		if _, err := api.MutatingWebhookConfigurations().Create(ctx, m, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s: %w", m.Name, err)
		}
	} else {
		return err
	}
	if old, err := api.ValidatingWebhookConfigurations().Get(ctx, v.Name, metav1.GetOptions{}); err == nil {
		v.ResourceVersion = old.ResourceVersion
		_, err = api.ValidatingWebhookConfigurations().Update(ctx, v, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("update %s: %w", v.Name, err)
		}
	} else if apierrors.IsNotFound(err) {
		if _, err := api.ValidatingWebhookConfigurations().Create(ctx, v, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create %s: %w", v.Name, err)
		}
	} else {
		return err
	}
	return nil
}
