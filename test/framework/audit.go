package framework

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Audit is the API server's audit log of writes, for a bench to learn
// which component sends which request (the request counter says only
// how many). Its metadata-only policy logs every write's sender, verb,
// resource and code; the log is written as requests complete (blocking
// mode), which adds a little to each write: times measured with it are
// not figures of record.
type Audit struct {
	log    string
	policy string
}

// NewAudit prepares an audit log in dir.
func NewAudit(dir string) (*Audit, error) {
	a := &Audit{log: filepath.Join(dir, "audit.log"), policy: filepath.Join(dir, "audit-policy.yaml")}
	policy := `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  resources: [{group: coordination.k8s.io, resources: [leases]}, {group: "", resources: [events]}, {group: events.k8s.io, resources: [events]}]
- level: Metadata
  verbs: [create, update, patch, delete, deletecollection]
- level: None
`
	return a, os.WriteFile(a.policy, []byte(policy), 0o644)
}

// Env is the environment that makes the local cluster's API server
// write the log.
func (a *Audit) Env() string {
	return "MULTISLICE_APISERVER_ARGS=--audit-policy-file=" + a.policy + " --audit-log-path=" + a.log +
		" --audit-log-mode=blocking --audit-log-maxsize=0 --audit-log-format=json"
}

// Offset is where the log ends now.
func (a *Audit) Offset() int64 {
	st, err := os.Stat(a.log)
	if err != nil {
		return 0
	}
	return st.Size()
}

// Since counts the writes logged after offset by sender ("the user,
// and for kube-controller-manager its controller"), verb, resource and
// code: "generic-garbage-collector delete pods 200".
func (a *Audit) Since(offset int64) (map[string]int, error) {
	f, err := os.Open(a.log)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return nil, err
	}
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			Verb, UserAgent string
			User            struct{ Username string }
			ObjectRef       struct{ Resource, Subresource string }
			ResponseStatus  struct{ Code int }
		}
		if json.Unmarshal(sc.Bytes(), &ev) != nil {
			continue
		}
		resource := ev.ObjectRef.Resource
		if ev.ObjectRef.Subresource != "" {
			resource += "/" + ev.ObjectRef.Subresource
		}
		out[fmt.Sprintf("%s %s %s %d", sender(ev.User.Username, ev.UserAgent), ev.Verb, resource, ev.ResponseStatus.Code)]++
	}
	return out, sc.Err()
}

// sender names who sent a request: the user, and for a component that
// runs many controllers under one user, the controller its user agent
// names ("kube-controller-manager/v1.37.2 (...) kubernetes/abc/job-controller").
func sender(user, agent string) string {
	if _, tail, ok := strings.Cut(agent, " kubernetes/"); ok {
		// With service-account credentials the user names it already.
		if i := strings.LastIndex(tail, "/"); i >= 0 && tail[i+1:] != "" && !strings.HasSuffix(user, ":"+tail[i+1:]) {
			return user + ":" + tail[i+1:]
		}
	}
	return user
}

// AuditText lists counts, largest first.
func AuditText(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return m[keys[i]] > m[keys[j]] || m[keys[i]] == m[keys[j]] && keys[i] < keys[j] })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s: %d", k, m[k])
	}
	return strings.Join(parts, "; ")
}
