package realhost

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// Changed are the kernel settings real hosts change on this machine: the
// kubelet sets the first six at start (its setupKernelTunables: a kubelet
// told to protect them instead refuses to start unless they already have
// its values), `up` sets the last three (realHostsNeed).
var Changed = []string{
	"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes",
	"net/ipv4/ip_forward", "net/bridge/bridge-nf-call-iptables", "fs/inotify/max_user_instances",
}

// realHostsNeed are the settings `up` makes for real hosts: routing between
// the pod bridge and the machine, Services' rules applied to bridged
// packets, and inotify instances for every kubelet's watches (each takes
// six; Linux's default of 128 runs out at about sixteen hosts on the
// machine, as two clusters of eight showed: "inotify_init: too many open
// files"). A higher value already set is kept.
var realHostsNeed = map[string]string{"net/ipv4/ip_forward": "1", "net/bridge/bridge-nf-call-iptables": "1", "fs/inotify/max_user_instances": "1024"}

// procSys is where settings live; a variable for tests.
var procSys = "/proc/sys"

// SaveSysctls records the current values of Changed in file, unless the
// file exists already: a cluster restarted after a crash must not record
// the values its own kubelets set. Then it applies the pod network's.
func SaveSysctls(file string) error {
	if _, err := os.Stat(file); errors.Is(err, os.ErrNotExist) {
		saved := map[string]string{}
		for _, key := range Changed {
			v, err := os.ReadFile(filepath.Join(procSys, key))
			if err != nil {
				continue // absent on this kernel: nothing to restore
			}
			saved[key] = strings.TrimSpace(string(v))
		}
		data, err := json.MarshalIndent(saved, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(file, data, 0o600); err != nil {
			return err
		}
	}
	for key, v := range realHostsNeed {
		if cur, err := os.ReadFile(filepath.Join(procSys, key)); err == nil && atLeast(strings.TrimSpace(string(cur)), v) {
			continue
		}
		if err := os.WriteFile(filepath.Join(procSys, key), []byte(v), 0o644); err != nil {
			return fmt.Errorf("set %s: %w", strings.ReplaceAll(key, "/", "."), err)
		}
	}
	return nil
}

// atLeast reports whether the numeric setting cur is v or more.
func atLeast(cur, v string) bool {
	a, errA := strconv.Atoi(cur)
	b, errB := strconv.Atoi(v)
	return errA == nil && errB == nil && a >= b
}

// RestoreSysctls writes back the values SaveSysctls recorded and removes
// the file; without a file there is nothing to restore.
func RestoreSysctls(file string) error {
	data, err := os.ReadFile(file)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	saved := map[string]string{}
	if err := json.Unmarshal(data, &saved); err != nil {
		return fmt.Errorf("%s is damaged (%v): restore %s by hand and delete it", file, err, strings.Join(Changed, ", "))
	}
	keys := make([]string, 0, len(saved))
	for k := range saved {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var errs []error
	for _, key := range keys {
		if err := os.WriteFile(filepath.Join(procSys, key), []byte(saved[key]), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restore %s=%s: %w", strings.ReplaceAll(key, "/", "."), saved[key], err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return os.Remove(file)
}
