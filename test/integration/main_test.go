package integration

import (
	"fmt"
	"os"
	"testing"

	"github.com/multislice/multislice/internal/features"
	"github.com/multislice/multislice/internal/manager"
	"github.com/multislice/multislice/test/framework"
)

// shared is the one envtest (API server, etcd, the manager with its
// defaults) that every test here runs on unless it needs other manager
// options; each test works in namespaces of its own.
var shared struct {
	env *framework.Env
	err error
}

func TestMain(m *testing.M) {
	env, stop, err := framework.NewEnv(func(o *manager.Options) { o.FeatureGates = features.Defaults() })
	shared.env, shared.err = env, err
	if err != nil {
		fmt.Fprintln(os.Stderr, "integration: no shared environment:", err)
	}
	code := m.Run()
	if stop != nil {
		stop()
	}
	os.Exit(code)
}

// sharedEnv is the package's envtest; the test skips or fails without it.
func sharedEnv(t *testing.T) *framework.Env {
	t.Helper()
	framework.SkipOrFail(t, shared.err)
	return shared.env
}
