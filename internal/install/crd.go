// Package install puts Multislice's API into a cluster: the JobSet CRD
// (and, for dynamic slicing, GKE's Slice CRD), applied and waited for
// until the apiserver serves it.
package install

import (
	"context"
	"fmt"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensions "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	"github.com/multislice/multislice/config/crd"
)

// CRD creates or updates the JobSet CRD and waits until it is Established.
func CRD(ctx context.Context, cfg *rest.Config) error { return apply(ctx, cfg, crd.JobSet) }

// SliceCRD does the same for GKE's Slice CRD (dynamic slicing), for a
// cluster where GKE's slice controller does not serve it.
func SliceCRD(ctx context.Context, cfg *rest.Config) error { return apply(ctx, cfg, crd.Slice) }

func apply(ctx context.Context, cfg *rest.Config, manifest []byte) error {
	var want apiextensionsv1.CustomResourceDefinition
	if err := yaml.Unmarshal(manifest, &want); err != nil {
		return fmt.Errorf("embedded CRD: %w", err)
	}
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	old, err := crds.Get(ctx, want.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err = crds.Create(ctx, &want, metav1.CreateOptions{})
	case err == nil:
		want.ResourceVersion = old.ResourceVersion
		_, err = crds.Update(ctx, &want, metav1.UpdateOptions{})
	}
	if err != nil {
		return fmt.Errorf("install CRD %s: %w", want.Name, err)
	}
	return WaitServed(ctx, cfg, &want)
}

// WaitServed waits until every CRD is Established and discovery serves its
// group. Established is not enough: discovery serves the new group a
// moment later, and a client that looks in between fails ("no matches").
func WaitServed(ctx context.Context, cfg *rest.Config, want ...*apiextensionsv1.CustomResourceDefinition) error {
	client, err := apiextensions.NewForConfig(cfg)
	if err != nil {
		return err
	}
	crds := client.ApiextensionsV1().CustomResourceDefinitions()
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		for _, w := range want {
			got, err := crds.Get(ctx, w.Name, metav1.GetOptions{})
			if err != nil || !established(got) {
				return false, nil
			}
			gv := w.Spec.Group + "/" + w.Spec.Versions[0].Name
			list, err := dc.ServerResourcesForGroupVersion(gv)
			if err != nil || len(list.APIResources) == 0 {
				return false, nil
			}
		}
		return true, nil
	})
}

func established(crd *apiextensionsv1.CustomResourceDefinition) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
			return true
		}
	}
	return false
}
