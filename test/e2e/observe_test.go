package e2e

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/multislice/multislice/test/framework"
)

// TestLogsAndDashboard runs the seed and reads it as a person would:
// `multislice logs` by slice and worker (also following a worker across a
// restart), and `multislice dashboard` in a real browser (headless
// Chromium), before and after a preemption. Screenshots go to
// $MULTISLICE_ARTIFACTS (default _artifacts/ at the repository root).
func TestLogsAndDashboard(t *testing.T) {
	framework.RequireE2E(t)
	t.Parallel()
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Fatal("chromium is missing: run hack/install-chromium.sh (make test does)")
	}
	// Its Debian wrapper script prints shell errors of its own on stderr.
	if version, err := exec.Command(chromium, "--version").Output(); err == nil {
		t.Logf("browser: %s", strings.TrimSpace(string(version)))
	}
	c, _ := framework.StartCluster(t)
	ctx := context.Background()
	if err := c.Objects.Create(ctx, seedCopy(t, "multislice-job", "")); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, ctx, c, 0, anyName)

	// One worker's lines, and only its.
	pods, err := c.Client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{
		LabelSelector: "jobset.sigs.k8s.io/job-index=1,batch.kubernetes.io/job-completion-index=0"})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("slice 1 worker 0: %v (%d pods)", err, len(pods.Items))
	}
	out := c.MustRun("logs", "multislice-job", "--slice", "1", "--worker", "0")
	checkWorkerLines(t, out, "[slice-1/worker-0 attempt-0] ", pods.Items[0].Name, "TPU_WORKER_ID=0", "MEGASCALE_SLICE_ID=1", "JOBSET_RESTART_ATTEMPT=0")
	all := c.MustRun("logs", "multislice-job")
	for s := range 4 {
		for w := range 2 {
			if !strings.Contains(all, fmt.Sprintf("[slice-%d/worker-%d attempt-0] TPU environment:", s, w)) {
				t.Errorf("logs of the whole JobSet lack slice %d worker %d:\n%s", s, w, all)
			}
		}
	}
	if out, err := c.Run("logs", "multislice-job", "--slice", "4"); err == nil || !strings.Contains(out, "--slice 4: JobSet multislice-job has slices 0..3") {
		t.Errorf("logs --slice 4: err %v, output %q; want a refusal naming the slices", err, out)
	}

	follow := startCLI(t, c, "logs", "multislice-job", "--slice", "1", "--worker", "0", "-f")
	dash := startCLI(t, c, "dashboard")
	url := dash.waitLine(t, "dashboard: ")
	url = strings.TrimPrefix(url, "dashboard: ")

	browser := newBrowser(t, chromium)
	if _, err := chromedp.Run(browser, chromedp.Navigate(url)); err != nil {
		t.Fatal(err)
	}
	const jobset = `document.querySelector('[data-jobset="default/multislice-job"]')`
	// 8 workers Running, on 4 pools held by the JobSet; the fifth is spare.
	waitPage(t, browser, "8 workers Running on 4 pools, 1 spare", fmt.Sprintf(`(() => {
		const js = %s;
		if (!js) return "no JobSet on the page";
		const running = js.querySelectorAll('td.worker[data-phase="Running"]').length;
		const held = document.querySelectorAll('.pool[data-holder="default/multislice-job"]').length;
		const spare = document.querySelectorAll('.pool[data-state="spare"]').length;
		return (running === 8 && held === 4 && spare === 1) ? "" : "running " + running + ", held " + held + ", spare " + spare;
	})()`, jobset))
	screenshot(t, browser, "dashboard-seed-running.png")

	pool := poolOfSlice(t, ctx, c, 2)
	c.MustRun("chaos", "preempt", "--nodepool", pool)
	waitRunning(t, ctx, c, 1, anyName)
	allRunning := time.Now()
	// The timeline says what happened: the fault (slice health), the
	// restart, and the recovery; all 8 workers Running at attempt 1.
	waitPage(t, browser, "the preemption and the recovery in the timeline, 8 workers Running at attempt 1", fmt.Sprintf(`(() => {
		const js = %s;
		if (!js) return "no JobSet on the page";
		const kinds = [...js.querySelectorAll('.timeline .entry')].map(e => e.dataset.kind);
		const running = js.querySelectorAll('td.worker[data-phase="Running"]').length;
		const attempt1 = [...js.querySelectorAll('tr[data-slice] th small')].filter(e => e.textContent.includes("attempt 1")).length;
		return (kinds.includes("fault") && kinds.includes("restart") && kinds.includes("recovered") && running === 8 && attempt1 === 4) ? "" :
			"timeline " + kinds.join(",") + "; running " + running + "; slices at attempt 1: " + attempt1;
	})()`, jobset))
	t.Logf("the page showed the recovery %s after the API did", time.Since(allRunning).Round(10*time.Millisecond))
	if timeline, err := chromedp.Run(browser, chromedp.Evaluate[string](jobset+`.querySelector('.timeline').innerText`)); err == nil {
		t.Logf("timeline on the page:\n%s", timeline)
		if !strings.Contains(timeline, pool) {
			t.Errorf("the timeline does not name the preempted pool %s", pool)
		}
	}
	screenshot(t, browser, "dashboard-after-preempt.png")

	// The follower went on to the worker's next attempt, and printed only it.
	framework.Eventually(t, 30*time.Second, func(context.Context) (bool, string) {
		got := follow.output()
		return strings.Contains(got, "[slice-1/worker-0 attempt-1] TPU environment:"), got
	})
	checkWorkerLines(t, follow.output(), "[slice-1/worker-0 attempt-", "JOBSET_RESTART_ATTEMPT=0", "JOBSET_RESTART_ATTEMPT=1")
}

// checkWorkerLines: every line has the prefix, and the output contains each want.
func checkWorkerLines(t *testing.T, out, prefix string, want ...string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) < 2 {
		t.Errorf("want at least 2 lines, got:\n%s", out)
	}
	for _, l := range lines {
		if !strings.HasPrefix(l, prefix) {
			t.Errorf("line %q lacks the prefix %q", l, prefix)
		}
	}
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("the logs lack %q:\n%s", w, out)
		}
	}
}

// cliProcess is a long-running multislice command (logs -f, dashboard).
type cliProcess struct {
	mu  sync.Mutex
	out strings.Builder
	cmd *exec.Cmd
}

func startCLI(t *testing.T, c *framework.Cluster, args ...string) *cliProcess {
	t.Helper()
	p := &cliProcess{cmd: exec.Command(filepath.Join(framework.BinDir(t), "multislice"), args...)}
	p.cmd.Env = append(os.Environ(), "MULTISLICE_HOME="+c.Home)
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.cmd.Stdout
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		sc.Buffer(make([]byte, 64*1024), 1024*1024)
		for sc.Scan() {
			p.mu.Lock()
			p.out.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		_ = p.cmd.Wait()
	})
	return p
}

func (p *cliProcess) output() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.out.String()
}

// waitLine waits for a line starting with prefix and returns it.
func (p *cliProcess) waitLine(t *testing.T, prefix string) string {
	t.Helper()
	var line string
	framework.Eventually(t, 30*time.Second, func(context.Context) (bool, string) {
		for _, l := range strings.Split(p.output(), "\n") {
			if strings.HasPrefix(l, prefix) {
				line = l
				return true, ""
			}
		}
		return false, p.output()
	})
	return line
}

// newBrowser starts headless Chromium with the flags that keep it off
// the network, and closes it at the end of the test. Its temporary files
// (the singleton socket it leaves in $TMPDIR when it is killed) go to the
// test's own directory, removed with it.
func newBrowser(t *testing.T, path string) context.Context {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.UserDataDir(t.TempDir()), chromedp.Env("TMPDIR="+t.TempDir()),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.WindowSize(1280, 1000))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	browser, cancel := chromedp.NewContext(allocCtx)
	t.Cleanup(func() { cancel(); cancelAlloc() })
	return browser
}

// waitPage evaluates check (a JavaScript expression that returns "" when
// the page shows what it should, else what it shows) until it passes.
func waitPage(t *testing.T, browser context.Context, what, check string) {
	t.Helper()
	framework.Eventually(t, 60*time.Second, func(context.Context) (bool, string) {
		got, err := chromedp.Run(browser, chromedp.Evaluate[string](check))
		if err != nil {
			return false, err.Error()
		}
		return got == "", what + ": " + got
	})
}

// screenshot saves the whole page as a test artifact.
func screenshot(t *testing.T, browser context.Context, name string) {
	t.Helper()
	dir := framework.ArtifactsDir(t)
	png, err := chromedp.Run(browser, chromedp.FullScreenshot(100))
	if err != nil {
		t.Errorf("screenshot: %v", err)
		return
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, png, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("screenshot: %s", path)
}
