//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// cmTimelineQueries are the --prometheus-query of each custom and external metric: the series
// the test's exporter shows, the values the adapter serves (as prometheus-adapter would serve
// them from the same series).
var cmTimelineQueries = map[string]string{
	"rps":                `rps=e2e_custom_metric{namespace="{{.Namespace}}",pod=~"{{.Pods}}",metric="rps"}`,
	"backlog":            `backlog=e2e_custom_metric{namespace="{{.Namespace}}",name="{{.Object}}",metric="backlog"}`,
	"my-external-metric": `my-external-metric=e2e_external_metric{metric="my-external-metric",foo="bar"}`,
}

// cmTimelinePhase: timeline --prometheus-url over the HPAs' whole past (kube-controller-
// manager's first scale-ups, run's step, kube-controller-manager again) lists every rescale
// the controllers made, each near the event the deciding controller emitted for it, and ends
// at the count kube-controller-manager's status says; tune --from-prometheus, playing the HPA
// as it is on the same load, peaks where the controllers did. A Pods, an Object and an
// External metric, and cpu beside a Pods metric, each read from the series Prometheus scraped
// of what the adapter served.
func cmTimelinePhase(ctx context.Context, t *testing.T, k cluster.Kubectl, c *cluster.Cluster, prom *cluster.Prometheus, ns string, from time.Time) {
	t.Helper()
	// The replay's sync nearest the controller's may be half a period off (its phase is the
	// last status write's whole seconds), and Prometheus' sample is up to a scrape older than
	// the adapter's answer.
	const tol = memSyncPeriod + memSyncPeriod/2 + cluster.DefaultPrometheusScrapeInterval
	// From a few seconds before the HPAs were created (their creation times are whole seconds).
	since := time.Since(from).Truncate(time.Second) + 5*time.Second
	for _, name := range []string{"pods-average", "object-average", "external-average", "cpu-and-pods"} {
		args := []string{"hpa", "timeline", name, "-n", ns, "--prometheus-url", prom.URL(), "--prometheus-insecure-http",
			"--sync-period", memSyncPeriod.String(), "--prometheus-rate-window", "10s", "--since", since.String()}
		for metric, q := range cmTimelineQueries {
			if metric != "backlog" || name == "object-average" {
				args = append(args, "--prometheus-query", q)
			}
		}
		out, err := k.Run(ctx, append(args, "-o", "json")...)
		if err != nil {
			t.Errorf("timeline %s: %v", name, err)
			continue
		}
		var tl v1alpha1.Timeline
		if err := json.Unmarshal([]byte(out), &tl); err != nil {
			t.Fatalf("decoding timeline %s -o json: %v", name, err)
		}
		if tl.Source.Kind != v1alpha1.TimelinePrometheus {
			t.Errorf("timeline %s: source %+v, want a replay from Prometheus", name, tl.Source)
		}
		evs, err := c.Client().CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: fields.Set{
			"involvedObject.kind": "HorizontalPodAutoscaler", "involvedObject.name": name, "reason": "SuccessfulRescale"}.String()})
		if err != nil {
			t.Fatal(err)
		}
		type rescale struct {
			at time.Time
			to string
		}
		var want []rescale
		for _, e := range evs.Items {
			at := e.LastTimestamp.Time
			if at.IsZero() {
				at = e.EventTime.Time
			}
			size, _, _ := strings.Cut(strings.TrimPrefix(e.Message, "New size: "), ";")
			want = append(want, rescale{at, size})
		}
		slices.SortFunc(want, func(a, b rescale) int { return a.at.Compare(b.at) })
		var got []string
		for _, r := range tl.Rescales {
			got = append(got, fmt.Sprintf("%d at %s", r.To, r.Time.Format(time.TimeOnly)))
		}
		var wanted []string
		for _, r := range want {
			wanted = append(wanted, r.to+" at "+r.at.Format(time.TimeOnly))
		}
		t.Logf("timeline %s: rescales %s; the controllers' events %s", name, strings.Join(got, ", "), strings.Join(wanted, ", "))
		if len(tl.Rescales) != len(want) {
			t.Errorf("timeline %s lists %d rescales (%s), the controllers made %d (%s)", name, len(tl.Rescales), strings.Join(got, ", "), len(want), strings.Join(wanted, ", "))
			text, err := k.Run(ctx, append(args, "--all-syncs")...)
			t.Logf("kubectl hpa timeline %s --all-syncs (%v):\n%s", name, err, text)
			continue
		}
		for i, r := range tl.Rescales {
			if fmt.Sprint(r.To) != want[i].to {
				t.Errorf("timeline %s: rescale %d to %d, the controller's to %s", name, i, r.To, want[i].to)
			}
			if off := r.Time.Sub(want[i].at); off < -tol || off > tol {
				t.Errorf("timeline %s: rescale to %d %+.1fs from the controller's event, more than %s", name, r.To, off.Seconds(), tol)
			}
		}
		hpa, err := c.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if n := len(tl.Syncs); n == 0 || tl.Syncs[n-1].Desired != hpa.Status.DesiredReplicas {
			t.Errorf("timeline %s: the last sync %+v, kube-controller-manager's status %d", name, tl.Syncs[max(n-1, 0):], hpa.Status.DesiredReplicas)
		}
		// tune --from-prometheus plays the HPA as it is on the same load: its peak is the
		// controllers' (the largest size they set).
		peak := int32(0)
		for _, r := range want {
			var n int32
			if _, err := fmt.Sscan(r.to, &n); err == nil {
				peak = max(peak, n)
			}
		}
		tuneArgs := []string{"hpa", "tune", name, "-n", ns, "--from-prometheus", "--prometheus-url", prom.URL(), "--prometheus-insecure-http",
			"--prometheus-rate-window", "10s", "--since", since.String(), "--candidates", "20", "-o", "json"}
		for _, a := range args {
			if strings.Contains(a, "=e2e_") {
				tuneArgs = append(tuneArgs, "--prometheus-query", a)
			}
		}
		if out, err := k.Run(ctx, tuneArgs...); err != nil {
			t.Errorf("tune %s --from-prometheus: %v", name, err)
		} else {
			var tu v1alpha1.Tuning
			if err := json.Unmarshal([]byte(out), &tu); err != nil {
				t.Fatalf("decoding tune %s -o json: %v", name, err)
			}
			t.Logf("tune %s --from-prometheus: the HPA as it is peaks at %d, the controllers at %d; recommended %v", name, tu.Current.Scores.PeakReplicas, peak, tu.Recommended.Changes)
			if tu.Current.Scores.PeakReplicas != peak {
				t.Errorf("tune %s --from-prometheus: the HPA as it is peaks at %d on the load, the controllers at %d", name, tu.Current.Scores.PeakReplicas, peak)
			}
		}
		if name == "pods-average" {
			text, err := k.Run(ctx, args...)
			t.Logf("kubectl hpa timeline %s -n %s --prometheus-url ... (%v):\n%s", name, ns, err, text)
		}
	}
}
