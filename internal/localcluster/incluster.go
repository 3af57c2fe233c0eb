package localcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
	"github.com/multislice/multislice/internal/gke"
	"github.com/multislice/multislice/internal/install"
	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
	"github.com/multislice/multislice/internal/objcache"
	"github.com/multislice/multislice/internal/release"
	"github.com/multislice/multislice/internal/versions"
)

// Where `up` runs the Multislice manager.
const (
	// ManagerOnHost is a process of this machine, as every other component.
	ManagerOnHost = "host"
	// ManagerInCluster is install.yaml applied to the cluster: two
	// replicas in pods on real hosts, from the image of this binary.
	ManagerInCluster = "in-cluster"
)

// managerRepo is the image's repository on ghcr.io, as `make release`
// names it; the local registry serves it under the same name.
const managerRepo = "multislice/multislice"

// managerDeployment is the manager's Deployment in install.yaml.
const managerDeployment = "multislice-manager"

// CheckManager refuses a manager placement the fleet cannot host.
func CheckManager(where string, pools []fleet.Resolved) error {
	switch where {
	case ManagerOnHost:
		return nil
	case ManagerInCluster:
		for _, p := range pools {
			if p.Real && p.Shape == nil {
				return nil
			}
		}
		return errors.New("--manager=in-cluster runs the manager in pods on real CPU hosts, and the fleet has none: add a pool with real: true and no accelerator (examples/fleet-real.yaml has one)")
	}
	return fmt.Errorf("--manager=%q: want %s (a process of this machine) or %s (pods on real hosts)", where, ManagerOnHost, ManagerInCluster)
}

// deployManager runs the manager as a real cluster does: the image of this
// binary (startRegistry pushed it under its ghcr.io name), install.yaml
// rendered for it from the binary's own config tree and applied, the
// Deployment's pods kept to real hosts. It
// returns once both replicas are Ready and the webhooks admit JobSets.
func (r *Running) deployManager(ctx context.Context, exe string, groups fleet.GroupLabels, featureGates string, timeout time.Duration) error {
	ref := "ghcr.io/" + managerRepo + ":" + versions.Multislice // pushed with the local images
	manifest, err := release.InstallEmbedded(ref)
	if err != nil {
		return err
	}
	r.say("applying install.yaml: the manager's Deployment (2 replicas), Service, webhooks, permissions")
	if err := install.Manifest(ctx, r.Config, manifest, forRealHosts(groups, featureGates)); err != nil {
		return err
	}
	deployments := r.Client.AppsV1().Deployments(install.Namespace)
	err = r.WaitFor(ctx, "manager pods", timeout, func(ctx context.Context) (bool, error) {
		d, err := deployments.Get(ctx, managerDeployment, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		return d.Status.ObservedGeneration >= d.Generation && d.Status.UpdatedReplicas == want && d.Status.AvailableReplicas == want,
			fmt.Errorf("%d of %d manager pods available", d.Status.AvailableReplicas, want)
	})
	if err != nil {
		return err
	}
	return r.waitWebhooks(ctx, timeout)
}

// forRealHosts edits install.yaml's manager Deployment for the local
// cluster: its pods on real hosts (a simulated node runs no container),
// with the fleet's group labels and the feature gates `up` was given.
func forRealHosts(groups fleet.GroupLabels, featureGates string) func(*unstructured.Unstructured) error {
	return func(u *unstructured.Unstructured) error {
		if u.GetKind() != "Deployment" || u.GetName() != managerDeployment {
			return nil
		}
		var d appsv1.Deployment
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &d); err != nil {
			return err
		}
		pod := &d.Spec.Template.Spec
		if pod.NodeSelector == nil {
			pod.NodeSelector = map[string]string{}
		}
		pod.NodeSelector[fleet.RealHostLabel] = "true"
		c := &pod.Containers[0]
		if groups.Name != gke.MultisliceGroupLabel || groups.Size != gke.MultisliceGroupSizeLabel {
			c.Args = append(c.Args, "--group-label="+groups.Name, "--group-size-label="+groups.Size)
		}
		c.Args = append(c.Args, "--feature-gates="+withLocalGates(featureGates))
		obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&d)
		if err != nil {
			return err
		}
		u.Object = obj
		return nil
	}
}

// waitWebhooks waits until the API server admits a JobSet (dry run): the
// manager has put its certificate in the webhooks' caBundle and the
// webhook Service reaches a pod.
func (r *Running) waitWebhooks(ctx context.Context, timeout time.Duration) error {
	c, err := client.New(r.Config, client.Options{Scheme: objcache.Scheme()})
	if err != nil {
		return err
	}
	return r.WaitFor(ctx, "manager webhooks", timeout, func(ctx context.Context) (bool, error) {
		js := &api.JobSet{ObjectMeta: metav1.ObjectMeta{Name: "webhook-probe", Namespace: "default"}}
		err := c.Create(ctx, js, client.DryRunAll)
		return err == nil, err
	})
}
