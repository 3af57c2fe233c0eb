// Command trainer is a real synchronous data-parallel training job for a
// multislice JobSet, the way a JAX job uses what the TPU webhook injects:
// each worker reads TPU_WORKER_ID, TPU_WORKER_HOSTNAMES,
// MEGASCALE_COORDINATOR_ADDRESS, MEGASCALE_NUM_SLICES, MEGASCALE_SLICE_ID
// (and JOBSET_RESTART_ATTEMPT), trains a linear regression on its shard of
// a synthetic data set, and every step all-reduces the gradients in two
// levels: over the hosts of its slice, then across slices through one
// leader per slice. The coordinator writes a checkpoint every few steps;
// every worker starts from the newest complete one, so a restarted JobSet
// resumes where it was.
//
//	trainer --checkpoint-dir=/checkpoints
//
// Output: "no checkpoint: starting at step 0" or "resumed from checkpoint
// step N", then one line per step, "step=N loss=X".
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	steps := flag.Int("steps", 1_000_000, "stop after this many steps")
	dir := flag.String("checkpoint-dir", "/checkpoints", "shared directory for checkpoints (GCS or Filestore in production)")
	every := flag.Int("checkpoint-every", 20, "the coordinator writes a checkpoint every this many steps")
	delay := flag.Duration("step-delay", 100*time.Millisecond, "pause after each step (the model is tiny; a real step takes longer)")
	samples := flag.Int("samples", 256, "samples in each worker's shard")
	rate := flag.Float64("learning-rate", 0.05, "SGD learning rate")
	wait := flag.Duration("connect-timeout", 5*time.Minute, "how long to wait for every peer to connect")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	if err := run(ctx, options{steps: *steps, dir: *dir, every: *every, delay: *delay, samples: *samples, rate: *rate, wait: *wait}); err != nil {
		fmt.Fprintln(os.Stderr, "trainer:", err)
		os.Exit(1)
	}
}

type options struct {
	steps, every, samples int
	dir                   string
	delay, wait           time.Duration
	rate                  float64
}

func run(ctx context.Context, o options) error {
	e, err := osEnv()
	if err != nil {
		fmt.Fprintln(os.Stderr, "trainer: refusing to start:", err)
		os.Exit(2)
	}
	if o.every < 1 || o.samples < 1 || o.steps < 0 {
		return fmt.Errorf("--checkpoint-every and --samples must be at least 1, --steps not negative")
	}
	fmt.Printf("worker %d of slice %d (of %d slices), rank %d of %d, attempt %d\n", e.Worker, e.Slice, e.Slices, e.Rank(), e.Workers(), e.Attempt)
	model, step := NewModel(), 0
	ckpt, ok, skipped, err := LoadNewest(o.dir)
	if err != nil {
		return err
	}
	for _, s := range skipped {
		fmt.Printf("skipped incomplete checkpoint %s\n", s)
	}
	if ok {
		model, step = ckpt.Model, ckpt.Step
		fmt.Printf("resumed from checkpoint step %d (loss %.6f)\n", step, ckpt.Loss)
	} else {
		fmt.Println("no checkpoint: starting at step 0")
	}
	r, err := Connect(ctx, e, func(name string, port int) string { return hostPort(name, port) }, o.wait)
	if err != nil {
		return err
	}
	defer r.Close()
	xs, ys := Shard(e.Rank(), o.samples)
	coordinator := e.Slice == 0 && e.Worker == 0
	for step < o.steps {
		sum, err := r.AllReduce(step, model.Gradient(xs, ys))
		if err != nil {
			return fmt.Errorf("step %d: %w", step, err)
		}
		loss := model.Step(sum, e.Workers(), o.rate)
		step++
		fmt.Printf("step=%d loss=%.6f\n", step, loss)
		if coordinator && step%o.every == 0 {
			if err := Save(o.dir, Checkpoint{Step: step, Loss: loss, Model: model}); err != nil {
				return fmt.Errorf("checkpoint at step %d: %w", step, err)
			}
			fmt.Printf("checkpoint step=%d written\n", step)
		}
		select {
		case <-ctx.Done():
			fmt.Printf("stopped at step %d\n", step)
			return nil
		case <-time.After(o.delay):
		}
	}
	fmt.Printf("done at step %d\n", step)
	return nil
}
