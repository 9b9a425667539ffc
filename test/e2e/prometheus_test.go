//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	promv1 "github.com/prometheus/client_golang/api/prometheus/v1"
	"github.com/prometheus/common/model"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// Tests on the real Prometheus server (Debian's 2.42 or, built from its module, 3.x: see
// hack/build-testbin.sh), which scrapes the node stand-in's /metrics/cadvisor every 5s: what
// the history source of explain and simulate will read.

// promQuery runs an instant query and returns its vector.
func promQuery(t *testing.T, api promv1.API, q string, at time.Time) model.Vector {
	t.Helper()
	v, warnings, err := api.Query(context.Background(), q, at)
	if err != nil {
		t.Fatalf("query %s: %v", q, err)
	}
	if len(warnings) > 0 {
		t.Errorf("query %s: warnings %v", q, warnings)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		t.Fatalf("query %s: a %s, want a vector", q, v.Type())
	}
	return vec
}

// TestPrometheusReadsTheLoadModelFromCadvisor: 3 pods of a Deployment at 100m and 64Mi each,
// then 200m and 96Mi. Through Prometheus' HTTP API, rate(container_cpu_usage_seconds_total[1m])
// gives one series per pod at the modelled usage once the window holds only the first load
// (the counters are exact integrals stamped with the scrape time, so rate() is exact up to
// floating point; 0.5m allowed), container_memory_working_set_bytes the modelled working set,
// and a range query over the test's period the load's two steps, also after Prometheus restarts.
// The pod cgroup's series (container="") is there as on a real kubelet.
func TestPrometheusReadsTheLoadModelFromCadvisor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	ns := namespace(t, "prom")
	prom, err := shared.Prometheus(ctx)
	if err != nil {
		t.Fatal(err)
	}
	api, err := prom.API()
	if err != nil {
		t.Fatal(err)
	}
	const replicas = 3
	createDeployment(t, ns, deploymentSpec{replicas: replicas})
	sel := map[string]string{"app": "web"}
	w := cluster.Workload{Namespace: ns, Selector: sel}
	shared.Load().Set(w, cluster.Load{CPUMilli: 300, MemoryBytes: replicas * 64 << 20})
	t0 := time.Now()
	pods := podsOf(t, ns, sel)
	if len(pods) != replicas {
		t.Fatalf("%d pods, want %d", len(pods), replicas)
	}

	// The 1m window must hold the first load only, and at least two scrapes after it.
	time.Sleep(time.Until(t0.Add(time.Minute + 6*time.Second)))
	cpuSel := fmt.Sprintf(`container_cpu_usage_seconds_total{job=%q,namespace=%q,pod=~"web-.+",container!=""}`, cluster.PrometheusJob, ns)
	memSel := fmt.Sprintf(`container_memory_working_set_bytes{job=%q,namespace=%q,pod=~"web-.+",container!=""}`, cluster.PrometheusJob, ns)
	at := promExactRateEnd(t, api, cpuSel, t0.Add(time.Minute), time.Now())
	rates := promQuery(t, api, "rate("+cpuSel+"[1m])", at)
	mems := promQuery(t, api, memSel, at)
	if len(rates) != replicas || len(mems) != replicas {
		t.Fatalf("%d CPU rate series and %d memory series, want one per pod (%d): %v %v", len(rates), len(mems), replicas, rates, mems)
	}
	byPod := func(vec model.Vector) map[string]*model.Sample {
		out := map[string]*model.Sample{}
		for _, s := range vec {
			out[string(s.Metric["pod"])] = s
		}
		return out
	}
	rateOf, memOf := byPod(rates), byPod(mems)
	for _, p := range pods {
		sample, ok := shared.Load().Sample(types.NamespacedName{Namespace: ns, Name: p.Name})
		if !ok {
			t.Fatalf("pod %s is not in the load model", p.Name)
		}
		r, m := rateOf[p.Name], memOf[p.Name]
		if r == nil || m == nil {
			t.Fatalf("pod %s: no CPU rate (%v) or memory (%v) series", p.Name, r, m)
		}
		if got := 1000 * float64(r.Value); math.Abs(got-float64(sample.CPUMilli)) > 0.5 {
			t.Errorf("pod %s: rate over 1m %.3fm, the load model's usage %dm", p.Name, got, sample.CPUMilli)
		}
		if got := int64(m.Value); got != sample.MemoryBytes {
			t.Errorf("pod %s: working set %d, the load model's %d", p.Name, got, sample.MemoryBytes)
		}
		// cAdvisor's labels as a kubelet with containerd gives them, matching the pod's status.
		cid := strings.TrimPrefix(p.Status.ContainerStatuses[0].ContainerID, "containerd://")
		uid := strings.ReplaceAll(string(p.UID), "-", "_")
		if l := r.Metric; l["container"] != "app" || l["image"] != "e2e/app:1" || l["name"] != model.LabelValue(cid) ||
			!strings.Contains(string(l["id"]), "pod"+uid+".slice/cri-containerd-"+cid+".scope") {
			t.Errorf("pod %s: labels %v, want container app, image e2e/app:1, name %s and an id naming the pod's cgroup", p.Name, l, cid)
		}
	}
	// Without container!="" each pod has a second series, its cgroup's, as on a real node.
	perPod := promQuery(t, api, fmt.Sprintf(`count by (pod) (container_cpu_usage_seconds_total{namespace=%q})`, ns), at)
	for _, s := range perPod {
		if s.Value != 2 {
			t.Errorf("pod %s: %v CPU series, want 2 (the container's and the pod cgroup's)", s.Metric["pod"], s.Value)
		}
	}

	// The second step; a 15s window (three scrapes) shows both plateaus in a range query.
	shared.Load().Set(w, cluster.Load{CPUMilli: 600, MemoryBytes: replicas * 96 << 20})
	t1 := time.Now()
	// Six points on the second plateau: a missed scrape spoils the three 15s windows that would
	// hold it, and at least two must remain.
	time.Sleep(time.Until(t1.Add(50 * time.Second)))
	end := time.Now()
	rng := promv1.Range{Start: t0, End: end, Step: 5 * time.Second}
	// scraped counts, per pod, the samples Prometheus stored in (at-15s, at]: a scrape missed
	// on a loaded machine (slower than the timeout) leaves a rate() window with two, which
	// rate() extrapolates to the window's ends and so reads low. Such a point says nothing of
	// the load model; the points with all three scrapes must read it exactly.
	raw, _, err := api.Query(ctx, fmt.Sprintf("%s[%ds]", cpuSel, int(end.Sub(t0).Seconds())+20), end)
	if err != nil {
		t.Fatalf("raw samples: %v", err)
	}
	rawM, _ := raw.(model.Matrix)
	scraped := func(pod model.LabelValue, at time.Time) int {
		n := 0
		for _, s := range rawM {
			if s.Metric["pod"] != pod {
				continue
			}
			n += promSamplesIn(s, at.Add(-15*time.Second), at)
		}
		return n
	}
	check := func(q string, before, after float64, tol float64, windowed bool) {
		t.Helper()
		v, _, err := api.QueryRange(ctx, q, rng)
		if err != nil {
			t.Fatalf("range query %s: %v", q, err)
		}
		m, ok := v.(model.Matrix)
		if !ok || len(m) != replicas {
			t.Fatalf("range query %s: %v, want a matrix of %d series", q, v, replicas)
		}
		for _, s := range m {
			var nBefore, nAfter, missed int
			for _, pt := range s.Values {
				ts := pt.Timestamp.Time()
				onPlateau := ts.After(t0.Add(20*time.Second)) && ts.Before(t1) || ts.After(t1.Add(20*time.Second))
				if onPlateau && windowed && scraped(s.Metric["pod"], ts) < 3 {
					missed++
					continue
				}
				switch {
				// The first window that holds two scrapes of the first load, to the last
				// that holds none of the second.
				case ts.After(t0.Add(20*time.Second)) && ts.Before(t1):
					nBefore++
					if math.Abs(float64(pt.Value)-before) > tol {
						t.Errorf("%s pod %s at %s (before the step at %s): %v, want %v", q, s.Metric["pod"], ts.Format(time.RFC3339), t1.Format(time.RFC3339), pt.Value, before)
					}
				case ts.After(t1.Add(20 * time.Second)):
					nAfter++
					if math.Abs(float64(pt.Value)-after) > tol {
						t.Errorf("%s pod %s at %s (after the step at %s): %v, want %v", q, s.Metric["pod"], ts.Format(time.RFC3339), t1.Format(time.RFC3339), pt.Value, after)
					}
				}
			}
			if nBefore < 5 || nAfter < 2 {
				t.Errorf("%s pod %s: %d points on the first plateau and %d on the second (%d with a scrape missed), want at least 5 and 2: %v", q, s.Metric["pod"], nBefore, nAfter, missed, s.Values)
			}
			if missed > 0 {
				t.Logf("%s pod %s: %d point(s) whose window lacks a scrape, not checked", q, s.Metric["pod"], missed)
			}
		}
	}
	check("rate("+cpuSel+"[15s])", 0.1, 0.2, 0.0005, true)
	check(memSel, 64<<20, 96<<20, 0, false)

	// A restarted Prometheus still has the history (its data is in the run directory).
	if err := prom.Restart(ctx); err != nil {
		t.Fatal(err)
	}
	check("rate("+cpuSel+"[15s])", 0.1, 0.2, 0.0005, true)
}

// promExactRateEnd picks when to evaluate rate(sel[1m]) so that it reads the counters' exact
// slope: the newest scrape time T in [from, to] where every series has a sample at T and one
// within 1.1 scrape intervals after T-1m. rate() extrapolates a window's first and last samples
// to its ends only that close to them; at an arbitrary time, a scrape late or missed on a
// loaded machine leaves the last sample further from the end and the rate reads low.
func promExactRateEnd(t *testing.T, api promv1.API, sel string, from, to time.Time) time.Time {
	t.Helper()
	const window = time.Minute
	reach := 11 * cluster.DefaultPrometheusScrapeInterval / 10
	v, _, err := api.Query(context.Background(), fmt.Sprintf("%s[%ds]", sel, int(to.Sub(from)/time.Second)+int(window/time.Second)+10), to)
	if err != nil {
		t.Fatalf("raw samples of %s: %v", sel, err)
	}
	m, _ := v.(model.Matrix)
	if len(m) == 0 {
		t.Fatalf("no raw samples of %s up to %s", sel, to.Format(time.RFC3339))
	}
	first := m[0].Values
	for i := len(first) - 1; i >= 0; i-- {
		end := first[i].Timestamp.Time()
		if end.Before(from) {
			break
		}
		ok := true
		for _, s := range m {
			if promSamplesIn(s, end.Add(-time.Millisecond), end) == 0 || promSamplesIn(s, end.Add(-window), end.Add(-window+reach)) == 0 {
				ok = false
				break
			}
		}
		if ok {
			return end
		}
	}
	t.Fatalf("no scrape of %s between %s and %s ends a %v window with a sample near each end: %v", sel, from.Format(time.RFC3339), to.Format(time.RFC3339), window, m)
	return time.Time{}
}

// promSamplesIn counts the samples of s stamped in (lo, hi].
func promSamplesIn(s *model.SampleStream, lo, hi time.Time) int {
	n := 0
	for _, p := range s.Values {
		if ts := p.Timestamp.Time(); ts.After(lo) && !ts.After(hi) {
			n++
		}
	}
	return n
}
