package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestParseEnv(t *testing.T) {
	good := map[string]string{
		"TPU_WORKER_ID": "1", "TPU_WORKER_HOSTNAMES": "j-s-1-0.j,j-s-1-1.j", "MEGASCALE_COORDINATOR_ADDRESS": "j-s-0-0.j",
		"MEGASCALE_NUM_SLICES": "2", "MEGASCALE_SLICE_ID": "1", "JOBSET_RESTART_ATTEMPT": "3",
	}
	with := func(k, v string) map[string]string {
		m := map[string]string{}
		for a, b := range good {
			m[a] = b
		}
		m[k] = v
		return m
	}
	e, err := ParseEnv(func(k string) string { return good[k] })
	if err != nil || e.Rank() != 3 || e.Workers() != 4 || e.Leader() != "j-s-1-0.j" || e.Attempt != 3 {
		t.Fatalf("good environment: %+v, %v", e, err)
	}
	for name, c := range map[string]struct {
		env  map[string]string
		want string
	}{
		"no worker id":        {with("TPU_WORKER_ID", ""), "TPU_WORKER_ID is not set"},
		"worker beyond hosts": {with("TPU_WORKER_ID", "2"), "TPU_WORKER_ID=2 but TPU_WORKER_HOSTNAMES names 2 hosts"},
		"slice out of range":  {with("MEGASCALE_SLICE_ID", "2"), "MEGASCALE_SLICE_ID=2 but MEGASCALE_NUM_SLICES=2"},
		"no coordinator":      {with("MEGASCALE_COORDINATOR_ADDRESS", ""), "MEGASCALE_COORDINATOR_ADDRESS is not set"},
		"not a number":        {with("MEGASCALE_NUM_SLICES", "two"), `MEGASCALE_NUM_SLICES="two"`},
		"no slices":           {with("MEGASCALE_NUM_SLICES", "0"), "MEGASCALE_NUM_SLICES"},
		"no hostnames":        {with("TPU_WORKER_HOSTNAMES", ""), "TPU_WORKER_HOSTNAMES is not set"},
		"bad restart attempt": {with("JOBSET_RESTART_ATTEMPT", "-1"), "JOBSET_RESTART_ATTEMPT"},
	} {
		_, err := ParseEnv(func(k string) string { return c.env[k] })
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error containing %q", name, err, c.want)
		}
	}
}

func TestCheckpointsNewestCompleteWins(t *testing.T) {
	dir := t.TempDir()
	if _, ok, _, err := LoadNewest(dir); ok || err != nil {
		t.Fatalf("empty directory: ok %v, %v", ok, err)
	}
	m := NewModel()
	m.B = 1.5
	for _, step := range []int{20, 40} {
		if err := Save(dir, Checkpoint{Step: step, Loss: float64(step), Model: m}); err != nil {
			t.Fatal(err)
		}
	}
	// A torn write of step 60 (the coordinator died mid-write without the
	// rename), and a later file cut short: neither is loaded.
	whole, _ := os.ReadFile(filepath.Join(dir, "ckpt-000000040.json"))
	if err := os.WriteFile(filepath.Join(dir, "ckpt-000000060.json"), whole[:len(whole)/2], 0o644); err != nil {
		t.Fatal(err)
	}
	edited := strings.Replace(string(whole), `"step":40`, `"step":80`, 1)
	if err := os.WriteFile(filepath.Join(dir, "ckpt-000000080.json"), []byte(edited), 0o644); err != nil {
		t.Fatal(err)
	}
	c, ok, skipped, err := LoadNewest(dir)
	if err != nil || !ok || c.Step != 40 || c.Model.B != 1.5 || len(skipped) != 2 {
		t.Errorf("got step %d ok %v skipped %v err %v; want step 40 and the two broken files skipped", c.Step, ok, skipped, err)
	}
	if left, _ := filepath.Glob(filepath.Join(dir, ".ckpt-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
}

// Two slices of two hosts on loopback: every worker gets the same total,
// and the model they train together converges.
func TestTwoLevelAllReduceTrains(t *testing.T) {
	names := []string{"s0w0", "s0w1", "s1w0", "s1w1"}
	base := 30000 + os.Getpid()%10000
	port := map[string]int{}
	for i, n := range names {
		port[n] = base + 10*i
	}
	envs := []Env{}
	for s := range 2 {
		for w := range 2 {
			envs = append(envs, Env{Worker: w, Slice: s, Slices: 2, Hosts: []string{names[2*s], names[2*s+1]}, Coordinator: "s0w0"})
		}
	}
	losses := make([][]float64, len(envs))
	var wg sync.WaitGroup
	errs := make(chan error, len(envs))
	for i, e := range envs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			self := names[i]
			addr := func(name string, p int) string {
				if name == "" {
					name = self
				}
				return fmt.Sprintf("127.0.0.1:%d", port[name]+p%10)
			}
			r, err := Connect(context.Background(), e, addr, 20*time.Second)
			if err != nil {
				errs <- err
				return
			}
			defer r.Close()
			m := NewModel()
			xs, ys := Shard(e.Rank(), 64)
			for step := range 60 {
				sum, err := r.AllReduce(step, m.Gradient(xs, ys))
				if err != nil {
					errs <- err
					return
				}
				losses[i] = append(losses[i], m.Step(sum, e.Workers(), 0.1))
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	for i := range losses {
		if fmt.Sprint(losses[i]) != fmt.Sprint(losses[0]) {
			t.Fatalf("worker %d saw other losses than worker 0", i)
		}
	}
	if first, last := losses[0][0], losses[0][len(losses[0])-1]; !(last < first/10) {
		t.Errorf("loss %.4f -> %.4f in 60 steps: the model does not train", first, last)
	}
}
