package kueue

import (
	"context"
	"fmt"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/multislice/multislice/internal/kueue"
)

var (
	localQueues    = schema.GroupVersionResource{Group: kueue.Group, Version: "v1beta2", Resource: "localqueues"}
	clusterQueues  = schema.GroupVersionResource{Group: kueue.Group, Version: "v1beta2", Resource: "clusterqueues"}
	admissionCheck = schema.GroupVersionResource{Group: kueue.Group, Version: "v1beta2", Resource: "admissionchecks"}
)

// queueRef is a LocalQueue and the ClusterQueue it feeds.
type queueRef struct{ Namespace, Name, ClusterQueue string }

// dispatchProblems says why a JobSet in one of mine (the manager's
// LocalQueues of the connected ClusterQueue) could not run on the worker:
// MultiKueue creates its Workload there in a LocalQueue of the same
// namespace and name, which must feed a ClusterQueue that exists and is
// active there.
func dispatchProblems(mine []queueRef, theirs map[string]queueRef, active map[string]bool, cq string) []string {
	var out []string
	if len(mine) == 0 {
		out = append(out, fmt.Sprintf("no LocalQueue here feeds ClusterQueue %s: nothing submitted can reach it (kubectl create a LocalQueue with spec.clusterQueue: %s)", cq, cq))
	}
	for _, q := range mine {
		w, ok := theirs[q.Namespace+"/"+q.Name]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("the worker has no LocalQueue %s/%s: MultiKueue puts the JobSets of this one there; create it on the worker (multislice kueue init there, or the same queues by hand)", q.Namespace, q.Name))
		case !active[w.ClusterQueue]:
			out = append(out, fmt.Sprintf("the worker's LocalQueue %s/%s feeds ClusterQueue %q, which does not exist or is not active there", q.Namespace, q.Name, w.ClusterQueue))
		}
	}
	sort.Strings(out)
	return out
}

// readyToDispatch waits until the AdmissionCheck and the ClusterQueue
// are active here (a JobSet submitted before that runs here, not on the
// worker: Kueue decides at admission), then checks the worker's queues.
func readyToDispatch(ctx context.Context, here dynamic.Interface, workerConfig []byte, check, cq string, timeout time.Duration) error {
	var why string
	err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		for _, o := range []struct {
			gvr  schema.GroupVersionResource
			name string
		}{{admissionCheck, check}, {clusterQueues, cq}} {
			u, err := here.Resource(o.gvr).Get(ctx, o.name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if active, msg := condition(u, "Active"); !active {
				why = fmt.Sprintf("%s %s is not active: %s", u.GetKind(), o.name, msg)
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("not ready to dispatch within --wait: %s", why)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(workerConfig)
	if err != nil {
		return fmt.Errorf("--worker-kubeconfig: %w", err)
	}
	worker, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return err
	}
	mine, err := queues(ctx, here, cq)
	if err != nil {
		return err
	}
	theirs, err := queues(ctx, worker, "")
	if err != nil {
		return fmt.Errorf("the worker's LocalQueues: %w", err)
	}
	byName := map[string]queueRef{}
	for _, q := range theirs {
		byName[q.Namespace+"/"+q.Name] = q
	}
	active := map[string]bool{}
	list, err := worker.Resource(clusterQueues).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("the worker's ClusterQueues: %w", err)
	}
	for i := range list.Items {
		active[list.Items[i].GetName()], _ = condition(&list.Items[i], "Active")
	}
	if problems := dispatchProblems(mine, byName, active, cq); len(problems) > 0 {
		msg := "connected, but ClusterQueue " + cq + " cannot dispatch:"
		for _, p := range problems {
			msg += "\n  - " + p
		}
		return fmt.Errorf("%s", msg)
	}
	return nil
}

// queues lists the LocalQueues (of ClusterQueue cq, or all when "").
func queues(ctx context.Context, c dynamic.Interface, cq string) ([]queueRef, error) {
	list, err := c.Resource(localQueues).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []queueRef
	for i := range list.Items {
		u := &list.Items[i]
		name, _, _ := unstructured.NestedString(u.Object, "spec", "clusterQueue")
		if cq == "" || name == cq {
			out = append(out, queueRef{Namespace: u.GetNamespace(), Name: u.GetName(), ClusterQueue: name})
		}
	}
	return out, nil
}
