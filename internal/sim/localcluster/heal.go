package localcluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// controlPlane are the components whose outage every client notices.
var controlPlane = []string{"etcd", "kube-apiserver"}

// backingOff are the components restarted after an outage of the control
// plane, because a client-go informer backs off after every break of its
// watch, not only after failures: each ListAndWatch that returns doubles
// its next wait (0.8 s, doubling to 30 s, with up to 100% jitter), and the
// doubling resets only 2 minutes after it began. Outages in a row compound:
// the manager saw its Jobs again 1.7, 2.6, 4.7, 7.8, 14.8, then 47 s after
// the API server returned, in six both-down outages 15 s apart (the cause
// of TestControlPlaneOutage's "6 of 8 pods Running" for 90 s); the garbage
// collector finished a foreground deletion 40 s late. Restarted, each takes
// 1-3 s. kwok finalizes deleted pods; a new kwok would wait for its
// predecessor's node leases to expire (its identity is random), so Heal
// releases them first. The manager, the repairer and the simulated agents
// rebuild their state from the cluster.
var backingOff = []string{"kube-controller-manager", "kube-scheduler", "kwok", "multislice-manager", "cloud-repair", "sim-agents"}

// Heal restarts, with their recorded binary, arguments and ports, the
// components of a running cluster in h that have died (e.g. a manager
// killed with SIGKILL), and returns their names. The cluster's state lives
// in etcd and the API, so a restarted component picks up where the dead one
// stopped. When etcd or the API server was down, Heal waits until the API
// answers and restarts the components that would otherwise back off.
// A cluster with nothing alive is not healed: `up` starts afresh.
func Heal(h Home) ([]string, error) {
	st, err := h.ReadState()
	if err != nil || st == nil || !anyAlive(st.Processes) {
		return nil, err
	}
	var healed []string
	restart := func(i int) error {
		p := st.Processes[i]
		p.stop(5 * time.Second)
		if p.Name == "kwok" { // a new kwok would wait for the old one's node leases to expire
			if err := h.releaseNodeLeases(); err != nil {
				return err
			}
		}
		if p.Name == "kueue" {
			if err := h.writeKueueCerts(); err != nil {
				return err
			}
		}
		if err := waitPortsFree(p); err != nil {
			return err
		}
		s, err := startEnv(p.Name, p.Binary, h.Log(p.Name), p.Args, p.Env, p.Ports)
		if err != nil {
			return err
		}
		st.Processes[i].PID = s.PID
		healed = append(healed, p.Name)
		return h.writeState(st)
	}
	outage := false
	for i, p := range st.Processes {
		if slices.Contains(controlPlane, p.Name) && !p.alive() {
			outage = true
			if err := restart(i); err != nil {
				return healed, err
			}
		}
	}
	if outage {
		if err := h.WaitServing(60 * time.Second); err != nil {
			return healed, err
		}
	}
	for i, p := range st.Processes {
		if slices.Contains(controlPlane, p.Name) || (p.alive() && !(outage && slices.Contains(backingOff, p.Name))) {
			continue
		}
		if err := restart(i); err != nil {
			return healed, err
		}
	}
	return healed, nil
}

// releaseNodeLeases deletes every node Lease (every node of the local
// cluster is kwok's) once kwok has stopped, so that the next kwok takes the
// nodes over at once instead of after their leases expire.
func (h Home) releaseNodeLeases() error {
	cfg, err := clientcmd.BuildConfigFromFlags("", h.Kubeconfig())
	if err != nil {
		return err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	leases, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("release the simulated nodes' leases: %w", err)
	}
	for _, l := range leases.Items {
		err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, l.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("release the lease of node %s: %w", l.Name, err)
		}
	}
	return nil
}

// waitPortsFree gives a process killed a moment ago a few seconds to
// release its sockets while its last threads exit.
func waitPortsFree(p Process) error {
	for _, port := range p.Ports {
		deadline := time.Now().Add(10 * time.Second)
		for !portFree(port) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !portFree(port) {
			return fmt.Errorf("cannot restart %s: its port %d is taken by another process; stop the cluster with `multislice down` and start it again", p.Name, port)
		}
	}
	return nil
}

// WaitServing waits until the API server answers /readyz (which needs etcd
// too), so that `up` returns a cluster that answers.
func (h Home) WaitServing(timeout time.Duration) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", h.Kubeconfig())
	if err != nil {
		return err
	}
	tlsCfg, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return err
	}
	ready, last := httpOK(cfg.Host+"/readyz", tlsCfg), error(nil)
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		ok, err := ready(ctx)
		last = err
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("the API server did not answer within %s after its restart (last error: %v); read %s", timeout, last, h.Log("kube-apiserver"))
	}
	return nil
}
