package localcluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/multislice/multislice/internal/localcluster/sim/fleet"
)

// controlPlane are the components whose outage every client notices.
var controlPlane = []string{"etcd", "kube-apiserver"}

// InControlPlane says whether the named component is one whose outage
// every client notices (etcd, kube-apiserver).
func InControlPlane(component string) bool {
	return slices.Contains(controlPlane, component)
}

// backingOff are the components restarted after an outage of the control
// plane, because a client-go informer backs off after every break of its
// watch, not only after failures: each ListAndWatch that returns doubles
// its next wait (0.8 s, doubling to 30 s, with up to 100% jitter), and the
// doubling resets only 2 minutes after it began. Outages in a row compound:
// the manager saw its Jobs again 1.7, 2.6, 4.7, 7.8, 14.8, then 47 s after
// the API server returned, in six both-down outages 15 s apart; the garbage
// collector finished a foreground deletion 40 s late. Restarted, each takes
// 1-3 s. The manager, the repairer and the simulated agents rebuild their
// state from the cluster.
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
	restart := func(i int) error { // a dead process, or one restartInOrder stopped
		p := st.Processes[i]
		if p.Name == "kueue" {
			if err := h.writeKueueCerts(); err != nil {
				return err
			}
		}
		if err := waitPortsFree(p); err != nil {
			return err
		}
		began := time.Now()
		s, err := startEnv(p.Name, p.Binary, h.Log(p.Name), p.Args, p.Env, p.Ports)
		if err != nil {
			return err
		}
		st.Processes[i].PID = s.PID
		healed = append(healed, p.Name)
		if strings.HasPrefix(p.Name, KubeletName("")) {
			// As in up: the next kubelet would race this one for the
			// device-plugin socket.
			waitCreatedSince(kubeletSocket, began, 20*time.Second)
		}
		return h.writeState(st)
	}
	outage := false
	for i, p := range st.Processes {
		if InControlPlane(p.Name) && !p.alive() {
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
	var todo []int
	for i, p := range st.Processes {
		if !InControlPlane(p.Name) && (!p.alive() || outage && slices.Contains(backingOff, p.Name)) {
			todo = append(todo, i)
		}
	}
	return healed, h.restartInOrder(st.Processes, todo, restart)
}

// restartInOrder restarts the processes at todo, kwok first: kwok acts on
// a pod only on an event, and drops the events that arrive before it holds
// the pod's node (its lease), so a pod bound or deleted while kwok starts
// would stay Pending or Terminating for ever. Everything to restart stops
// first; kwok starts and takes every node over (a new kwok would wait for
// its predecessor's leases to expire, its identity is random, so they are
// released first); then the rest start and act on kwok's nodes. They stop
// together: one after another, each could take its 5 s grace on a busy
// machine.
func (h Home) restartInOrder(ps []Process, todo []int, restart func(int) error) error {
	var stopping sync.WaitGroup // each is only a client of the API server: none waits for another
	for _, i := range todo {
		stopping.Go(func() { ps[i].stop(5 * time.Second) })
	}
	stopping.Wait()
	kwok := slices.IndexFunc(todo, func(i int) bool { return ps[i].Name == "kwok" })
	if kwok >= 0 {
		client, nodes, err := h.simulatedNodes()
		if err != nil {
			return err
		}
		if err := releaseNodeLeases(client, nodes); err != nil {
			return err
		}
		if err := restart(todo[kwok]); err != nil {
			return err
		}
		if err := h.waitNodesHeld(client, nodes, perNode(nodes)); err != nil {
			return err
		}
		todo = slices.Delete(slices.Clone(todo), kwok, kwok+1)
	}
	for _, i := range todo {
		if err := restart(i); err != nil {
			return err
		}
	}
	return nil
}

// simulatedNodes are the names of kwok's nodes (real hosts have their own
// kubelet and lease), with the client that listed them.
func (h Home) simulatedNodes() (kubernetes.Interface, []string, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", h.Kubeconfig())
	if err != nil {
		return nil, nil, err
	}
	cfg.QPS, cfg.Burst = 500, 1000 // a lease per node to release: 5,120 at 5 per second took 17 minutes
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	list, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{LabelSelector: fleet.SimulatedLabel + "=true"})
	if err != nil {
		return nil, nil, fmt.Errorf("list the simulated nodes: %w", err)
	}
	names := make([]string, len(list.Items))
	for i, n := range list.Items {
		names[i] = n.Name
	}
	return client, names, nil
}

// releaseNodeLeases deletes the simulated nodes' Leases once kwok has
// stopped, so that the next kwok takes the nodes over at once instead of
// after their leases expire.
func releaseNodeLeases(client kubernetes.Interface, nodes []string) error {
	ctx, cancel := context.WithTimeout(context.Background(), perNode(nodes))
	defer cancel()
	for _, n := range nodes {
		err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).Delete(ctx, n, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("release the lease of node %s: %w", n, err)
		}
	}
	return nil
}

// perNode is how long a step may take that writes or waits for a lease of
// each of nodes: 30 s, and 20 ms more per node (a fleet of 5,120: 132 s).
func perNode(nodes []string) time.Duration {
	return 30*time.Second + time.Duration(len(nodes))*20*time.Millisecond
}

// kwokSettle is how long kwok takes to see in its own cache the leases it
// created; until then it still drops its nodes' pod events.
const kwokSettle = 500 * time.Millisecond

// waitNodesHeld waits until a restarted kwok holds every simulated node
// (a Lease for each: releaseNodeLeases removed the old ones).
func (h Home) waitNodesHeld(client kubernetes.Interface, nodes []string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	missing, why := []string{}, "its node leases are unreadable"
	err := wait.PollUntilContextCancel(ctx, 100*time.Millisecond, true, func(ctx context.Context) (bool, error) {
		leases, err := client.CoordinationV1().Leases(corev1.NamespaceNodeLease).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		held := map[string]bool{}
		for _, l := range leases.Items {
			held[l.Name] = true
		}
		missing = missing[:0]
		for _, n := range nodes {
			if !held[n] {
				missing = append(missing, n)
			}
		}
		if len(missing) > 0 {
			why = fmt.Sprintf("%d simulated nodes have no lease (%s first)", len(missing), missing[0])
		}
		return len(missing) == 0, nil
	})
	if err != nil {
		return fmt.Errorf("kwok, restarted, did not take its nodes over within %s: %s; read %s", timeout, why, h.Log("kwok"))
	}
	time.Sleep(kwokSettle)
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
