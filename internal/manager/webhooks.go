package manager

import (
	"context"
	"fmt"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	jobsetwebhook "github.com/multislice/multislice/internal/webhook/jobset"
	"github.com/multislice/multislice/internal/webhook/tpu"
)

// Names of the webhook configurations the manager owns.
const (
	MutatingConfigName   = "multislice-mutating-webhook-configuration"
	ValidatingConfigName = "multislice-validating-webhook-configuration"
	WebhookServiceName   = "multislice-webhook-service"
	// CertSecretName keeps the webhooks' certificate (every replica's).
	CertSecretName = "multislice-webhook-server-cert"
	// LeaseName is the Lease the replicas elect their leader on.
	LeaseName = "multislice-manager.multislice.dev"
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
	// notGoing skips updates of a JobSet being deleted: only finalizers
	// change then, and the garbage collector's removal of its
	// foregroundDeletion finalizer must not wait for the manager.
	notGoing = []admissionv1.MatchCondition{{Name: "not-being-deleted",
		Expression: "request.operation != 'UPDATE' || !has(object.metadata.deletionTimestamp)"}}
)

// RenderWebhooks returns the manager's webhook configurations. Every webhook
// is scoped to our own workloads (JobSets, and Jobs that request TPUs,
// selected by a CEL matchCondition), so that failurePolicy Fail can never
// block anything else.
func RenderWebhooks(e Endpoint, ca []byte) (*admissionv1.MutatingWebhookConfiguration, *admissionv1.ValidatingWebhookConfiguration) {
	mutating := &admissionv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: MutatingConfigName},
		Webhooks: []admissionv1.MutatingWebhook{{
			Name:         "mjobset.multislice.dev",
			ClientConfig: e.clientConfig(jobsetwebhook.MutatePath, ca),
			// Defaulting on UPDATE too (upstream: CREATE only), so that a
			// re-applied manifest without the defaults equals the stored spec.
			Rules:                   jobsetRule(admissionv1.Create, admissionv1.Update),
			MatchConditions:         notGoing,
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
			Name:                    "vjobset.multislice.dev",
			ClientConfig:            e.clientConfig(jobsetwebhook.ValidatePath, ca),
			Rules:                   jobsetRule(admissionv1.Create, admissionv1.Update),
			MatchConditions:         notGoing,
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
	if err := upsert(ctx, api.MutatingWebhookConfigurations(), m); err != nil {
		return err
	}
	return upsert(ctx, api.ValidatingWebhookConfigurations(), v)
}

// webhookConfigs is what the two typed clients of webhook configurations share.
type webhookConfigs[T metav1.Object] interface {
	Get(context.Context, string, metav1.GetOptions) (T, error)
	Create(context.Context, T, metav1.CreateOptions) (T, error)
	Update(context.Context, T, metav1.UpdateOptions) (T, error)
}

// upsert creates obj, or replaces the existing object of its name.
func upsert[T metav1.Object](ctx context.Context, c webhookConfigs[T], obj T) error {
	old, err := c.Get(ctx, obj.GetName(), metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = c.Create(ctx, obj, metav1.CreateOptions{})
	case err == nil:
		obj.SetResourceVersion(old.GetResourceVersion())
		_, err = c.Update(ctx, obj, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("install webhook configuration %s: %w", obj.GetName(), err)
	}
	return nil
}
