package root

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/multislice/multislice/internal/cli"
	"github.com/multislice/multislice/internal/cli/program"
)

// TestCommands runs every command as the binary would, with no cluster:
// data on stdout, errors on stderr naming the flag and the fix, and the
// exit code. Commands that need a cluster are exercised end to end in
// test/e2e; here each refuses bad input before touching one, or says that
// there is no cluster.
func TestCommands(t *testing.T) {
	t.Setenv("KUBECONFIG", "")
	for _, tc := range []struct {
		args        []string
		code        int
		stdout      string // substring of stdout ("" : anything)
		stderr      string // substring of stderr ("" : must be empty)
		stdoutEmpty bool
	}{
		// The tree: help and version on stdout; unknown commands refused.
		{args: []string{"--version"}, stdout: "multislice version"},
		{args: []string{"--help"}, stdout: "multislice up"},
		{args: []string{"nodepool"}, stdout: "Available Commands"},
		{args: []string{"frobnicate"}, code: 1, stderr: `unknown command "frobnicate"`, stdoutEmpty: true},
		{args: []string{"workload", "creat", "x"}, code: 1, stderr: `unknown command "creat" for "multislice workload"`, stdoutEmpty: true},
		{args: []string{"chaos", "explode"}, code: 1, stderr: `unknown command "explode"`, stdoutEmpty: true},
		{args: []string{"nodepool", "lst"}, code: 1, stderr: `unknown command "lst"`, stdoutEmpty: true},

		// No cluster: said on stderr, exit 1.
		{args: []string{"status"}, code: 1, stderr: "no cluster in", stdoutEmpty: true},
		{args: []string{"status", "-o", "xml"}, code: 1, stderr: `-o "xml": use table, wide, json, yaml, name, jsonpath=TEMPLATE, go-template=TEMPLATE, custom-columns=NAME:.path,...`, stdoutEmpty: true},
		{args: []string{"nodepool", "status", "-o", "table"}, code: 1, stderr: `-o "table": use json or yaml`, stdoutEmpty: true},
		{args: []string{"status", "-w"}, code: 1, stderr: "--watch follows one JobSet: name it", stdoutEmpty: true},
		{args: []string{"status", "-o", "go-template={{.x"}, code: 1, stderr: "bad go-template", stdoutEmpty: true},
		{args: []string{"status", "-A", "--no-headers"}, code: 1, stderr: "no cluster in", stdoutEmpty: true},
		{args: []string{"workload", "list", "-A", "--no-headers"}, code: 1, stderr: "no local cluster", stdoutEmpty: true},
		// kubectl's client flags name a cluster with no kubeconfig at all.
		{args: []string{"workload", "list", "--server=https://127.0.0.1:1", "--token=t", "--insecure-skip-tls-verify"}, code: 1, stderr: "127.0.0.1:1", stdoutEmpty: true},
		{args: []string{"status", "js"}, code: 1, stderr: "start one with `multislice up`", stdoutEmpty: true},
		{args: []string{"workload", "list"}, code: 1, stderr: "no local cluster", stdoutEmpty: true},
		{args: []string{"nodepool", "list"}, code: 1, stderr: "no local cluster", stdoutEmpty: true},
		{args: []string{"logs", "js"}, code: 1, stderr: "no local cluster", stdoutEmpty: true},
		{args: []string{"dashboard"}, code: 1, stderr: "no local cluster", stdoutEmpty: true},

		// workload create: xpk's language, refusals naming the flag.
		{args: []string{"workload", "create", "w", "--tpu-type=v4-16", "--num-slices=2", "--command=python train.py", "--dry-run"},
			stdout: "kind: JobSet"},
		{args: []string{"workload", "create", "--workload=w", "--tpu-type=v4-16", "--command=x", "--docker-image=img:1",
			"--kueue-queue=q", "--env", "XLA_FLAGS=--a=1,--b=2", "--dry-run", "-o", "json"}, stdout: `"value": "--a=1,--b=2"`},
		{args: []string{"workload", "create", "w", "--tpu-type=v4-16", "--command=x", "--kueue-queue=team-a", "--dry-run"},
			stdout: "kueue.x-k8s.io/queue-name: team-a"},
		{args: []string{"workload", "create", "w", "--command=x", "--dry-run"}, code: 1, stderr: `"tpu-type" not set`, stdoutEmpty: true},
		{args: []string{"workload", "create", "w", "--tpu-type=v9-8", "--command=x", "--dry-run"}, code: 1, stderr: "v9-8", stdoutEmpty: true},
		{args: []string{"workload", "create", "w", "--tpu-type=v4-16", "--num-slices=0", "--command=x", "--dry-run"}, code: 1, stderr: "num-slices", stdoutEmpty: true},
		{args: []string{"workload", "create", "w", "--tpu-type=v4-16", "--command=x", "--env", "NOVALUE", "--dry-run"}, code: 1, stderr: "--env", stdoutEmpty: true},
		{args: []string{"workload", "create", "w", "--tpu-type=v4-16", "--command=x", "--dry-run", "-o", "xml"}, code: 1, stderr: `-o "xml"`, stdoutEmpty: true},

		// kueue: the worker's kubeconfig checked before any cluster is.
		{args: []string{"kueue", "init"}, code: 1, stderr: "no local cluster", stdoutEmpty: true},
		{args: []string{"kueue", "connect"}, code: 1, stderr: `"worker-kubeconfig" not set`, stdoutEmpty: true},
		{args: []string{"kueue", "connect", "--worker-kubeconfig", "/nonexistent"}, code: 1, stderr: "--worker-kubeconfig: open /nonexistent", stdoutEmpty: true},
		{args: []string{"kueue", "connect", "--worker-kubeconfig", "/nonexistent", "--wait", "100h"}, code: 1, stderr: "--wait=100h0m0s: want 0 (do not wait) to 1h", stdoutEmpty: true},
		{args: []string{"workload", "create", "w", "--tpu-type=v4-16", "--command=x", "--kueue-queue=q", "--priority=high", "--dry-run"},
			stdout: "kueue.x-k8s.io/priority-class: high"},

		// logs and dashboard: flags checked before the cluster.
		{args: []string{"logs"}, code: 1, stderr: "accepts 1 arg(s)", stdoutEmpty: true},
		{args: []string{"logs", "js", "--slice", "-2"}, code: 1, stderr: "--slice -2", stdoutEmpty: true},
		{args: []string{"logs", "js", "-p", "-f"}, code: 1, stderr: "--previous with --follow", stdoutEmpty: true},
		{args: []string{"logs", "js", "-p", "--attempt", "1"}, code: 1, stderr: "--previous with --attempt", stdoutEmpty: true},
		{args: []string{"dashboard", "--port", "70000"}, code: 1, stderr: "--port 70000", stdoutEmpty: true},

		// chaos and nodepool: required flags named.
		{args: []string{"chaos", "preempt"}, code: 1, stderr: "nodepool", stdoutEmpty: true},
		{args: []string{"nodepool", "create", "np"}, code: 1, stderr: "machine-type", stdoutEmpty: true},
		{args: []string{"down", "extra"}, code: 1, stderr: "unknown command", stdoutEmpty: true},

		// up, the manager and the hidden components refuse bad sizes and switches before starting anything.
		{args: []string{"up", "--repair-delay=-1s"}, code: 1, stderr: "--repair-delay=-1s: want 0s to 1h0m0s", stdoutEmpty: true},
		{args: []string{"up", "--timeout=0s"}, code: 1, stderr: "--timeout=0s: want 1s to 1h", stdoutEmpty: true},
		{args: []string{"up", "--apiserver-port=70000"}, code: 1, stderr: "--apiserver-port 70000", stdoutEmpty: true},
		{args: []string{"up", "--feature-gates=NoSuchGate=true"}, code: 1, stderr: "NoSuchGate", stdoutEmpty: true},
		{args: []string{"up", "--fleet=/nonexistent/fleet.yaml"}, code: 1, stderr: "/nonexistent/fleet.yaml", stdoutEmpty: true},
		{args: []string{"up", "--print-default-fleet"}, stdout: "kind: Fleet"},
		{args: []string{"cloud-repair", "--delay=2h"}, code: 1, stderr: "--delay=2h0m0s: want 0s to 1h0m0s", stdoutEmpty: true},
		{args: []string{"manager", "--controllers=none", "--webhooks=none"}, code: 1, stderr: "leave nothing to run", stdoutEmpty: true},
		{args: []string{"manager", "--webhooks=some"}, code: 1, stderr: `--webhooks="some": want all or none`, stdoutEmpty: true},
		{args: []string{"manager", "--in-place-restart-timeout=2h"}, code: 1, stderr: "--in-place-restart-timeout=2h0m0s: want 1s to 1h", stdoutEmpty: true},
		{args: []string{"manager", "--feature-gates=InPlaceRestart=maybe"}, code: 1, stderr: "InPlaceRestart", stdoutEmpty: true},
		{args: []string{"manager", "--help"}, stdout: "--feature-gates"},
		{args: []string{"agent", "extra"}, code: 1, stderr: "unknown command", stdoutEmpty: true},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			var out, errOut bytes.Buffer
			f := &cli.Factory{Streams: program.Streams{Out: &out, Err: &errOut}, HomeDir: t.TempDir()}
			code := Main(context.Background(), f, tc.args)
			if code != tc.code {
				t.Errorf("exit code %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, out.String(), errOut.String())
			}
			if !strings.Contains(out.String(), tc.stdout) || (tc.stdoutEmpty && out.Len() > 0) {
				t.Errorf("stdout %q, want it to contain %q (empty: %v)", out.String(), tc.stdout, tc.stdoutEmpty)
			}
			if (tc.stderr == "" && errOut.Len() > 0) || !strings.Contains(errOut.String(), tc.stderr) {
				t.Errorf("stderr %q, want %q", errOut.String(), tc.stderr)
			}
		})
	}
}
