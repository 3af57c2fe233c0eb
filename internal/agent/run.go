package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	api "github.com/multislice/multislice/api/jobset/v1alpha2"
)

// Options are one agent's settings (upstream's environment variables).
type Options struct {
	Namespace, JobSetName, PodName string
	// WorkerCommand, when set, is run by the agent at the barrier's lift
	// (main-container mode); otherwise the agent is a sidecar whose startup
	// probe (ProbePath on ProbePort) passes at the lift.
	WorkerCommand        string
	ProbePath, ProbePort string
	// ProbeHost is the probe's listen address (empty: every address, as
	// the kubelet probes the pod IP; tests use 127.0.0.1).
	ProbeHost string
	ExitCode  int
	Log       io.Writer
}

// Check names the first missing or bad setting and its fix.
func (o Options) Check() error {
	switch {
	case o.Namespace == "":
		return fmt.Errorf("no namespace: mount the service account token (automountServiceAccountToken) or set %s", EnvNamespace)
	case o.JobSetName == "":
		return fmt.Errorf("%s is empty: set it from the pod's annotation jobset.sigs.k8s.io/jobset-name (downward API)", EnvJobSetName)
	case o.PodName == "":
		return fmt.Errorf("%s is empty: set it from metadata.name (downward API)", EnvPodName)
	case o.ExitCode < 1 || o.ExitCode > 255:
		return fmt.Errorf("%s=%d: want 1..255, the code the pod's RestartAllContainers rule acts on", EnvExitCode, o.ExitCode)
	case o.WorkerCommand != "" && (o.ProbePath != "" || o.ProbePort != ""):
		return fmt.Errorf("%s cannot be set with %s or %s: run as a sidecar (probe) or as the main container (command), not both", EnvWorkerCommand, EnvProbePath, EnvProbePort)
	}
	return nil
}

// Run is one agent process for one pod: it returns the exit code the
// process must exit with (the restart code, or the worker's own).
func Run(ctx context.Context, cfg *rest.Config, o Options) (int, error) {
	if err := o.Check(); err != nil {
		return 1, err
	}
	if o.WorkerCommand == "" {
		o.ProbePath, o.ProbePort = or(o.ProbePath, DefaultProbePath), or(o.ProbePort, DefaultProbePort)
	}
	scheme := runtime.NewScheme()
	_ = api.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: scheme})
	if err != nil {
		return 1, err
	}
	a := &runner{o: o, c: c, done: make(chan int, 1)}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go a.watch(ctx)
	select {
	case code := <-a.done:
		return code, nil
	case <-ctx.Done():
		return 0, ctx.Err()
	}
}

type runner struct {
	o     Options
	c     client.WithWatch
	state State
	done  chan int
}

// watch follows this pod's JobSet only (a field selector: the API server
// sends nothing else), listing again after a broken watch.
func (a *runner) watch(ctx context.Context) {
	sel := client.MatchingFieldsSelector{Selector: fields.OneTermEqualSelector("metadata.name", a.o.JobSetName)}
	for ctx.Err() == nil {
		var list api.JobSetList
		if err := a.c.List(ctx, &list, client.InNamespace(a.o.Namespace), sel); err != nil {
			a.logf("list jobset: %v", err)
			sleep(ctx, time.Second)
			continue
		}
		for i := range list.Items {
			a.step(ctx, &list.Items[i])
		}
		w, err := a.c.Watch(ctx, &api.JobSetList{}, client.InNamespace(a.o.Namespace), sel,
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.ResourceVersion}})
		if err != nil {
			a.logf("watch jobset: %v", err)
			sleep(ctx, time.Second)
			continue
		}
		for ev := range w.ResultChan() {
			if js, ok := ev.Object.(*api.JobSet); ok && (ev.Type == watch.Added || ev.Type == watch.Modified) {
				a.step(ctx, js)
			}
		}
		w.Stop()
	}
}

// step acts until the protocol says wait.
func (a *runner) step(ctx context.Context, js *api.JobSet) {
	for {
		action, n := a.state.Next(js)
		switch action {
		case Wait:
			return
		case Annotate:
			pod := &corev1.Pod{}
			pod.Namespace, pod.Name = a.o.Namespace, a.o.PodName
			if err := a.c.Patch(ctx, pod, client.RawPatch(types.MergePatchType, AttemptPatch(n))); err != nil {
				a.logf("write attempt %d to pod %s: %v", n, a.o.PodName, err)
				return // the next JobSet event (or relist) tries again
			}
			a.state.Attempt = &n
			a.logf("pod %s is at attempt %d", a.o.PodName, n)
		case Restart:
			a.logf("attempt %d is previous: exiting %d to restart pod %s in place", *a.state.Attempt, a.o.ExitCode, a.o.PodName)
			a.finish(a.o.ExitCode)
			return
		case Release:
			a.state.Released = true
			a.logf("barrier lifted")
			if a.o.WorkerCommand != "" {
				go a.work(ctx)
			} else {
				go a.probe(ctx)
			}
		}
	}
}

func (a *runner) finish(code int) {
	select {
	case a.done <- code:
	default:
	}
}

// probe answers the startup probe: the kubelet then starts the workers.
func (a *runner) probe(ctx context.Context) {
	mux := http.NewServeMux()
	mux.HandleFunc(a.o.ProbePath, func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	srv := &http.Server{Addr: net.JoinHostPort(a.o.ProbeHost, a.o.ProbePort), Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() { <-ctx.Done(); _ = srv.Close() }()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.logf("startup probe server: %v", err)
		a.finish(1)
	}
}

// work runs the worker in main-container mode; its exit code is the agent's.
func (a *runner) work(ctx context.Context) {
	shell := os.Getenv("SHELL")
	if shell == "" {
		shell = "/bin/sh"
	}
	cmd := exec.CommandContext(ctx, shell, "-c", a.o.WorkerCommand)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	err := cmd.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		a.finish(0)
	case errors.As(err, &exit) && exit.ExitCode() > 0:
		a.finish(exit.ExitCode())
	default:
		a.logf("worker command: %v", err)
		a.finish(1)
	}
}

func (a *runner) logf(format string, args ...any) {
	if a.o.Log != nil {
		fmt.Fprintf(a.o.Log, time.Now().Format("15:04:05.000 ")+format+"\n", args...)
	}
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
