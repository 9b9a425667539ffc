//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// TestBatchedRunDecidesAsPerHPARun runs, side by side over the same HPAs, a run reading each
// namespace's resource metrics once (--metrics-reads=per-namespace, the default) and one
// reading them per HPA as upstream (--metrics-reads=per-hpa), both --dry-run=client so that
// nothing changes under them. Every decision the two made from the same samples (the same pods
// with the same usage at the same timestamp) must be the same, every HPA must have such a pair,
// and the audit log must show what each read: the namespace's list, or one list per HPA with
// its selector.
func TestBatchedRunDecidesAsPerHPARun(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "batched")
	// Three workloads in one namespace, each HPA's pods beside the others' in the namespace's
	// list: web scales up (180% of request), api is held by the scale-down stabilization (20%),
	// db stays (50%, the target).
	workloads := []struct {
		name       string
		replicas   int32
		totalMilli int64
	}{{"web", 2, 360}, {"api", 2, 40}, {"db", 1, 50}}
	for _, w := range workloads {
		createDeployment(t, ns, deploymentSpec{name: w.name, replicas: w.replicas})
		sel := map[string]string{"app": w.name}
		shared.Load().Set(cluster.Workload{Namespace: ns, Selector: sel}, cluster.Load{CPUMilli: w.totalMilli, MemoryBytes: int64(w.replicas) * 64 << 20})
	}
	for _, w := range workloads {
		waitPodCPU(t, ns, map[string]string{"app": w.name}, int(w.replicas), w.totalMilli/int64(w.replicas))
		h := hpaSpec{}.build(ns)
		h.Name, h.Spec.ScaleTargetRef.Name = w.name, w.name
		if _, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(context.Background(), h, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	const batchedUser, perHPAUser = "e2e:kubectl-hpa-batched", "e2e:kubectl-hpa-per-hpa"
	batched := startRun(t, pluginAs(t, batchedUser), "-n", ns, "--dry-run=client", "--sync-period=2s", "-o", "json")
	perHPA := startRun(t, pluginAs(t, perHPAUser), "-n", ns, "--dry-run=client", "--metrics-reads=per-hpa", "--sync-period=2s", "-o", "json")

	var got, want map[string]map[string]decisionView
	eventually(t, 3*time.Minute, "both runs decided every HPA from the same samples", func(context.Context) error {
		got, want = decisionsBySamples(t, batched.out.String()), decisionsBySamples(t, perHPA.out.String())
		for _, w := range workloads {
			common := 0
			for k := range want[w.name] {
				if _, ok := got[w.name][k]; ok {
					common++
				}
			}
			if common == 0 {
				return fmt.Errorf("HPA %s: no decision of the two runs from the same samples yet (%d and %d decisions)", w.name, len(got[w.name]), len(want[w.name]))
			}
		}
		return nil
	})
	batchedOut, perHPAOut := batched.stop(), perHPA.stop()
	got, want = decisionsBySamples(t, batchedOut), decisionsBySamples(t, perHPAOut)
	pairs := 0
	for name, bySamples := range want {
		for samples, w := range bySamples {
			g, ok := got[name][samples]
			if !ok {
				continue
			}
			pairs++
			if diff := cmp.Diff(w, g); diff != "" {
				t.Errorf("HPA %s from samples %s: the batched run (+) decided otherwise than the per-HPA run (-):\n%s", name, samples, diff)
			}
		}
	}
	t.Logf("%d pairs of decisions from the same samples compared", pairs)

	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{})
	if err != nil {
		t.Fatal(err)
	}
	reads := map[string][]string{}
	for _, r := range reqs {
		if r.APIGroup != "metrics.k8s.io" || r.Resource != "pods" || r.Namespace != ns || (r.User != batchedUser && r.User != perHPAUser) {
			continue
		}
		sel := ""
		if u, err := url.Parse(r.RequestURI); err == nil {
			sel = u.Query().Get("labelSelector")
		}
		reads[r.User] = append(reads[r.User], r.Verb+" "+sel)
	}
	for _, r := range reads[batchedUser] {
		if r != "list " {
			t.Errorf("the batched run read %q: want only the namespace's list", r)
		}
	}
	for _, r := range reads[perHPAUser] {
		if !slices.Contains([]string{"list app=web", "list app=api", "list app=db"}, r) {
			t.Errorf("the per-HPA run read %q: want each HPA's list with its selector", r)
		}
	}
	b, p := len(reads[batchedUser]), len(reads[perHPAUser])
	t.Logf("metrics reads: batched %d, per-HPA %d", b, p)
	if b == 0 || p < 2*b {
		t.Errorf("metrics reads: batched %d, per-HPA %d; want the batched run to read the namespace once for its three HPAs", b, p)
	}
}

// decisionView is what a decision printed that depends on its inputs, not on when it ran: the
// metrics with their pods (minus their ages), the arithmetic, the decision and its verdict.
type decisionView struct {
	Metrics    []v1alpha1.Metric
	Arithmetic []v1alpha1.Proposal
	Decision   *v1alpha1.Decision
	Verdict    string
}

// decisionsBySamples parses run -o json's decisions by HPA and by the samples they were made
// from (timestamp, and every pod's usage, of every metric).
func decisionsBySamples(t *testing.T, out string) map[string]map[string]decisionView {
	t.Helper()
	by := map[string]map[string]decisionView{}
	for _, line := range strings.Split(out, "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var e v1alpha1.Explanation
		if err := json.Unmarshal([]byte(line), &e); err != nil {
			t.Fatalf("run printed a line that is no Explanation: %v\n%s", err, line)
		}
		var key []string
		v := decisionView{Decision: e.Decision}
		if e.Verdict != nil {
			v.Verdict = e.Verdict.Sentence
		}
		if e.Arithmetic != nil {
			v.Arithmetic = e.Arithmetic.Proposals
		}
		for _, m := range e.Metrics {
			at := "none"
			if m.Timestamp != nil {
				at = m.Timestamp.UTC().Format(time.RFC3339Nano)
			}
			pods := []string{}
			for i := range m.Pods {
				m.Pods[i].Age = ""
				usage := "none"
				if u := m.Pods[i].UsageMilli; u != nil {
					usage = fmt.Sprint(*u)
				}
				pods = append(pods, m.Pods[i].Name+"="+usage)
			}
			slices.Sort(pods)
			key = append(key, fmt.Sprintf("%s@%s[%s]%s", m.Short, at, strings.Join(pods, ","), m.Error))
			v.Metrics = append(v.Metrics, m)
		}
		if by[e.Metadata.Name] == nil {
			by[e.Metadata.Name] = map[string]decisionView{}
		}
		// Later decisions from the same samples replace earlier ones: both runs keep a history,
		// and the first decision of each may come before the other's has any.
		by[e.Metadata.Name][strings.Join(key, ";")] = v
	}
	return by
}
