package main

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Env is what the TPU webhook and the JobSet controller give each worker.
type Env struct {
	// Worker is TPU_WORKER_ID: this host's index within its slice.
	Worker int
	// Hosts is TPU_WORKER_HOSTNAMES: every host of this slice, in order.
	Hosts []string
	// Coordinator is MEGASCALE_COORDINATOR_ADDRESS: slice 0's first host.
	Coordinator string
	// Slices and Slice are MEGASCALE_NUM_SLICES and MEGASCALE_SLICE_ID.
	Slices, Slice int
	// Attempt is JOBSET_RESTART_ATTEMPT: how many times the JobSet restarted.
	Attempt int
}

// Rank is the worker's global index, Workers the job's size.
func (e Env) Rank() int    { return e.Slice*len(e.Hosts) + e.Worker }
func (e Env) Workers() int { return e.Slices * len(e.Hosts) }

// Leader is this slice's first host: the others reduce through it.
func (e Env) Leader() string { return e.Hosts[0] }

// ParseEnv reads the environment through get (os.Getenv) and refuses a
// missing or inconsistent one, naming the variable.
func ParseEnv(get func(string) string) (Env, error) {
	var e Env
	num := func(name string, dst *int, min int) error {
		v := get(name)
		if v == "" {
			return fmt.Errorf("%s is not set: run the trainer in a JobSet on TPU nodes, where the TPU webhook injects it", name)
		}
		n, err := strconv.Atoi(v)
		if err != nil || n < min {
			return fmt.Errorf("%s=%q: want an integer of at least %d", name, v, min)
		}
		*dst = n
		return nil
	}
	if err := num("TPU_WORKER_ID", &e.Worker, 0); err != nil {
		return e, err
	}
	if err := num("MEGASCALE_NUM_SLICES", &e.Slices, 1); err != nil {
		return e, err
	}
	if err := num("MEGASCALE_SLICE_ID", &e.Slice, 0); err != nil {
		return e, err
	}
	if v := get("JOBSET_RESTART_ATTEMPT"); v != "" {
		if err := num("JOBSET_RESTART_ATTEMPT", &e.Attempt, 0); err != nil {
			return e, err
		}
	}
	hosts := get("TPU_WORKER_HOSTNAMES")
	if hosts == "" {
		return e, fmt.Errorf("TPU_WORKER_HOSTNAMES is not set: run the trainer in a JobSet on TPU nodes, where the TPU webhook injects it")
	}
	e.Hosts = strings.Split(hosts, ",")
	if e.Coordinator = get("MEGASCALE_COORDINATOR_ADDRESS"); e.Coordinator == "" {
		return e, fmt.Errorf("MEGASCALE_COORDINATOR_ADDRESS is not set: the TPU webhook injects it into multislice JobSets")
	}
	if e.Worker >= len(e.Hosts) {
		return e, fmt.Errorf("TPU_WORKER_ID=%d but TPU_WORKER_HOSTNAMES names %d hosts: the worker index must be below it", e.Worker, len(e.Hosts))
	}
	if e.Slice >= e.Slices {
		return e, fmt.Errorf("MEGASCALE_SLICE_ID=%d but MEGASCALE_NUM_SLICES=%d: the slice index must be below it", e.Slice, e.Slices)
	}
	return e, nil
}

// osEnv is ParseEnv's source in the program.
func osEnv() (Env, error) { return ParseEnv(os.Getenv) }
