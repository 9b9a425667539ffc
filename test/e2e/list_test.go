//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// listMaxListsPerNamespace is what docs/list.md (Cost) says list sends per namespace whose HPAs
// target Deployments with cpu targets: the pods, the rescale events, the PodMetrics, the
// Deployments and (for the lint rules) the PodDisruptionBudgets, one list each.
const listMaxListsPerNamespace = 6

// listSituation is one namespace of TestListShowsEachSituationAsExplainDecidesItWithBatchedReadsAndNoWrites:
// how it is made, and what list must show for each of its HPAs.
type listSituation struct {
	name  string
	setup func(t *testing.T, ns string)
	// want is, by HPA name, the BINDING and PROBLEMS columns.
	want map[string]listWant
	// perHPAReads is how many requests of the namespace docs/list.md allows besides its
	// lists: its HPAs' Pods, Object and External metrics, read per HPA.
	perHPAReads int
	// writesStatus says setup writes web's status (listWriteStatus); nothing else writes an
	// HPA status here.
	writesStatus bool
}

// listWant's PROBLEMS hold the lint rules' findings too: HPA003 (minReplicas below 2) on every
// HPA here, HPA017 where the metric's API is not served, HPA006 where pods lack the request.
type listWant struct {
	binding  string
	problems string
}

// listWriteStatus writes hpa web's status as the cluster's HPA controller would after deciding
// desired (the shared cluster runs none; the test stands in for it, through the status
// subresource).
func listWriteStatus(t *testing.T, ns string, current, desired int32, lastScale *metav1.Time) {
	t.Helper()
	ctx := context.Background()
	hpas := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns)
	hpa, err := hpas.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		ObservedGeneration: ptr.To(hpa.Generation),
		LastScaleTime:      lastScale,
		CurrentReplicas:    current,
		DesiredReplicas:    desired,
	}
	if _, err := hpas.UpdateStatus(ctx, hpa, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func listSituations() []listSituation {
	return []listSituation{{
		// 2 pods at 200% of their request against 50%: 8 asked, the scale-up limit 4, max 3.
		name: "capped",
		setup: func(t *testing.T, ns string) {
			loadedWorkload(t, ns, 2, 400)
			createHPA(t, ns, hpaSpec{max: 3})
			waitMetricsAfterReadiness(t, ns)
		},
		want: map[string]listWant{"web": {"MaxReplicas", "CappedAtMax,HPA003"}},
	}, {
		// 4 pods at 10% ask for 1; the controller's last rescale to 4 (status.lastScaleTime,
		// currentReplicas 4, written now) is inside the 600 s scale-down window.
		name: "stabilized",
		setup: func(t *testing.T, ns string) {
			loadedWorkload(t, ns, 4, 40)
			createHPA(t, ns, hpaSpec{downWindowSecond: ptr.To(int32(600))})
			waitMetricsAfterReadiness(t, ns)
			listWriteStatus(t, ns, 4, 4, ptr.To(metav1.Now()))
		},
		want:         map[string]listWant{"web": {"ScaleDownStabilization", "HPA003"}},
		writesStatus: true,
	}, {
		// A Pods metric with no custom metrics adapter on the cluster: nothing to read.
		name: "blind",
		setup: func(t *testing.T, ns string) {
			createDeployment(t, ns, deploymentSpec{replicas: 2})
			hsCreatePodsMetricHPA(t, ns)
		},
		want:        map[string]listWant{"web": {"MetricsUnavailable", "Blind,HPA017,HPA003"}},
		perHPAReads: 1,
	}, {
		// Pods without a cpu request under a cpu Utilization target: the metrics are read,
		// but there is nothing to divide the usage by, so no count (explain exits 10).
		name: "norequests",
		setup: func(t *testing.T, ns string) {
			d := deploymentSpec{replicas: 2}.build(ns)
			d.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
			if _, err := shared.Client().AppsV1().Deployments(ns).Create(context.Background(), d, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitReadyReplicas(t, ns, "web", 2)
			sel := map[string]string{"app": "web"}
			shared.Load().Set(cluster.Workload{Namespace: ns, Selector: sel}, cluster.Load{CPUMilli: 100, MemoryBytes: 2 * 64 << 20})
			waitPodCPU(t, ns, sel, 2, 50)
			createHPA(t, ns, hpaSpec{})
			waitMetricsAfterReadiness(t, ns)
		},
		want: map[string]listWant{"web": {"MetricsUnavailable", "CannotCompute,HPA006,HPA003"}},
	}, {
		// 2 pods at the 50% target stay 2 (inside the tolerance), while another writer set
		// status.desiredReplicas to 5.
		name: "fighting",
		setup: func(t *testing.T, ns string) {
			loadedWorkload(t, ns, 2, 100)
			createHPA(t, ns, hpaSpec{})
			waitMetricsAfterReadiness(t, ns)
			listWriteStatus(t, ns, 2, 5, nil)
		},
		want:         map[string]listWant{"web": {"Tolerance", "DisagreesWithCluster,HPA003"}},
		writesStatus: true,
	}, {
		// 2 pods at 60% against 50%: 3, set by the metric, nothing wrong.
		name: "healthy",
		setup: func(t *testing.T, ns string) {
			loadedWorkload(t, ns, 2, 120)
			createHPA(t, ns, hpaSpec{})
			waitMetricsAfterReadiness(t, ns)
		},
		want: map[string]listWant{"web": {"None", "HPA003"}},
	}, {
		// Two HPAs on one Deployment: upstream's controller scales neither while their pods
		// overlap (ScalingActive=False, AmbiguousSelector), and lint's HPA011 names the other.
		// Their metrics are not read, so none are waited for.
		name: "ambiguous",
		setup: func(t *testing.T, ns string) {
			loadedWorkload(t, ns, 2, 100)
			createHPA(t, ns, hpaSpec{})
			second := hpaSpec{}.build(ns)
			second.Name = "web-2"
			if _, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(context.Background(), second, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		},
		want: map[string]listWant{
			"web":   {"Selector", "AmbiguousSelector,HPA011,HPA003"},
			"web-2": {"Selector", "AmbiguousSelector,HPA011,HPA003"},
		},
	}}
}

// listRow is a line of the `kubectl hpa list -A` table.
type listRow struct {
	namespace, name, wouldBe, binding, heldUntil, controller, problems string
}

// listTable parses the table: its cells are separated by two spaces or more (METRIC holds one).
func listTable(t *testing.T, out string) map[string]listRow {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	sep := regexp.MustCompile(`\s{2,}`)
	header := sep.Split(lines[0], -1)
	want := []string{"NAMESPACE", "NAME", "TARGET", "MIN/MAX", "CURRENT", "WOULD BE", "METRIC", "BINDING", "HELD UNTIL", "HISTORY", "CONTROLLER", "PROBLEMS"}
	if diff := cmp.Diff(want, header); diff != "" {
		t.Fatalf("list -A header (-want +got):\n%s\n%s", diff, out)
	}
	rows := map[string]listRow{}
	for _, l := range lines[1:] {
		c := sep.Split(l, -1)
		if len(c) != len(want) {
			t.Fatalf("list -A line %q has %d cells, want %d", l, len(c), len(want))
		}
		rows[c[0]+"/"+c[1]] = listRow{namespace: c[0], name: c[1], wouldBe: c[5], binding: c[7], heldUntil: c[8], controller: c[10], problems: c[11]}
	}
	return rows
}

// listCheckController checks the CONTROLLER cell and -o json's cluster.statusWriters of the
// HPA key. Where writer wrote its status (listWriteStatus, after since) both name writer alone,
// the cell with an age no older than since (HumanDuration truncates, managed fields' times are
// whole seconds); where nobody did (writer empty: the shared cluster runs no HPA controller),
// the cell is <none> and there is no writer.
func listCheckController(t *testing.T, key, cell string, e *v1alpha1.Explanation, writer string, since time.Time) {
	t.Helper()
	if e.Cluster == nil {
		t.Errorf("list -o json item %s has no cluster", key)
		return
	}
	ws := e.Cluster.StatusWriters
	if writer == "" {
		if cell != "<none>" || len(ws) != 0 {
			t.Errorf("list -A row %s: CONTROLLER %q, -o json status writers %+v; want <none> and none (nobody wrote its status)", key, cell, ws)
		}
		return
	}
	oldest := since.Truncate(time.Second)
	if len(ws) != 1 || ws[0].Manager != writer || ws[0].Time == nil || ws[0].Time.Time.Before(oldest) || ws[0].Time.Time.After(time.Now()) {
		t.Errorf("list -o json item %s: status writers %+v, want %s alone, written since %s", key, ws, writer, oldest.UTC().Format(time.RFC3339))
	}
	want := regexp.MustCompile(`^` + regexp.QuoteMeta(writer) + ` ((?:\d+[hms])+) ago$`)
	m := want.FindStringSubmatch(cell)
	if m == nil {
		t.Errorf("list -A row %s: CONTROLLER %q, want %q", key, cell, want)
		return
	}
	if age, err := time.ParseDuration(m[1]); err != nil || age > time.Since(oldest) {
		t.Errorf("list -A row %s: CONTROLLER %q says the status is %s old (%v), but it was written at most %s ago", key, cell, m[1], err, time.Since(oldest).Round(time.Second))
	}
}

// TestListShowsEachSituationAsExplainDecidesItWithBatchedReadsAndNoWrites makes, one namespace
// each, the situations docs/list.md names (an HPA capped at max, held by a scale-down window,
// blind, without the requests its target needs, fought over, healthy, two HPAs selecting the
// same pods), then checks that `kubectl hpa list -A` shows each with its BINDING and PROBLEMS,
// and with CONTROLLER the test's client where the test wrote the status (<none> elsewhere),
// that every row's decision is what `kubectl hpa explain` decides for that HPA right after,
// and, from the audit log, that list only read, with a constant number of lists per namespace
// (not one per HPA). It reports list's wall time beside kubectl get and describe hpa -A on the
// same cluster (not asserted: the machine is shared).
func TestListShowsEachSituationAsExplainDecidesItWithBatchedReadsAndNoWrites(t *testing.T) {
	t.Parallel()
	situations := listSituations()
	nsOf := map[string]string{}
	for _, s := range situations {
		nsOf[s.name] = namespace(t, "list-"+s.name)
	}
	setupStart := time.Now()
	t.Run("setup", func(t *testing.T) {
		for _, s := range situations {
			t.Run(s.name, func(t *testing.T) {
				t.Parallel()
				s.setup(t, nsOf[s.name])
			})
		}
	})
	if t.Failed() {
		t.FailNow()
	}
	ours := map[string]*listSituation{}
	for i, s := range situations {
		ours[nsOf[s.name]] = &situations[i]
	}

	const user = "e2e:kubectl-hpa-list"
	k := pluginAs(t, user)
	ctx := context.Background()
	// The first run fills kubectl's discovery cache, as any earlier kubectl command would; its
	// table is the one compared below.
	table, err := k.Run(ctx, "hpa", "list", "-A")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("kubectl hpa list -A:\n%s", table)
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	out, err := k.Run(ctx, "hpa", "list", "-A", "-o", "json")
	if err != nil {
		t.Fatal(err)
	}
	reqs := completedSince(t, mark, user)
	var list struct {
		Kind       string                  `json:"kind"`
		APIVersion string                  `json:"apiVersion"`
		Items      []*v1alpha1.Explanation `json:"items"`
	}
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("decoding list -o json: %v\n%s", err, out)
	}
	if list.Kind != "List" || list.APIVersion != "hpa.kubectl-hpa.io/v1alpha1" {
		t.Errorf("list -o json is %s %s, want List hpa.kubectl-hpa.io/v1alpha1", list.APIVersion, list.Kind)
	}
	rows := listTable(t, table)
	// The status listWriteStatus writes is recorded under the field manager the API server
	// derives from the harness client's user agent (up to its first "/").
	manager, _, _ := strings.Cut(shared.RESTConfig().UserAgent, "/")

	// Every HPA of ours, in both outputs, as expected for its situation, and as explain decides.
	// The loads are steady (set once, far from a count's edge, every sample after readiness),
	// so the decision does not move between list and explain.
	items := map[string]*v1alpha1.Explanation{}
	for _, e := range list.Items {
		if ours[e.Metadata.Namespace] != nil {
			items[e.Metadata.Namespace+"/"+e.Metadata.Name] = e
		}
	}
	for _, s := range situations {
		ns := nsOf[s.name]
		for name, want := range s.want {
			key := ns + "/" + name
			t.Run(s.name+"/"+name, func(t *testing.T) {
				row, ok := rows[key]
				if !ok {
					t.Fatalf("list -A has no row %s:\n%s", key, table)
				}
				if row.binding != want.binding || row.problems != want.problems {
					t.Errorf("list -A row %s: BINDING %s, PROBLEMS %s; want %s, %s", key, row.binding, row.problems, want.binding, want.problems)
				}
				// HELD UNTIL says when a window lets go, and only where one holds.
				if held := row.binding == "ScaleDownStabilization"; held != strings.HasPrefix(row.heldUntil, "in ") {
					t.Errorf("list -A row %s: BINDING %s, HELD UNTIL %q", key, row.binding, row.heldUntil)
				}
				e, ok := items[key]
				if !ok || e.Decision == nil || e.Verdict == nil {
					t.Fatalf("list -o json item %s: %+v, want a decision and a verdict", key, e)
				}
				if e.Verdict.Constraint != want.binding {
					t.Errorf("list -o json item %s: verdict.constraint %s, want %s", key, e.Verdict.Constraint, want.binding)
				}
				if row.wouldBe != fmt.Sprint(e.Decision.DesiredReplicas) {
					t.Errorf("list -A WOULD BE %s, list -o json decision %d", row.wouldBe, e.Decision.DesiredReplicas)
				}
				writer := ""
				if s.writesStatus && name == "web" {
					writer = manager
				}
				listCheckController(t, key, row.controller, e, writer, setupStart)
				// explain exits non-zero for a blind HPA, one without requests or one whose pods
				// another HPA selects, with its JSON.
				stdout, err := k.Run(ctx, "hpa", "explain", name, "-n", ns, "-o", "json")
				var x v1alpha1.Explanation
				if jerr := json.Unmarshal([]byte(stdout), &x); jerr != nil || x.Decision == nil || x.Verdict == nil {
					t.Fatalf("explain %s: %v (%v)\n%s", key, jerr, err, stdout)
				}
				got := fmt.Sprintf("%d -> %d (%s, %s)", e.Decision.CurrentReplicas, e.Decision.DesiredReplicas, e.Decision.Phase, e.Verdict.Constraint)
				explained := fmt.Sprintf("%d -> %d (%s, %s)", x.Decision.CurrentReplicas, x.Decision.DesiredReplicas, x.Decision.Phase, x.Verdict.Constraint)
				if got != explained {
					t.Errorf("list decides %s for %s, explain %s", got, key, explained)
				}
				// explain prints the findings of the row's PROBLEMS.
				var ids []string
				for _, f := range x.Findings {
					ids = append(ids, f.ID)
				}
				if found := strings.Join(ids, ","); found != row.problems {
					t.Errorf("explain %s finds %s, list's PROBLEMS are %s", key, found, row.problems)
				}
				exit := "exit 0"
				if err != nil {
					exit = err.Error()
				}
				t.Logf("%s (%s): list %s, BINDING %s, PROBLEMS %s; explain %s, %s", key, s.name, got, row.binding, row.problems, explained, exit)
			})
		}
	}

	// The requests of list -o json: the plugin's (the kubectl dispatcher in front of it may
	// send a GET /version of its own), by namespace and resource.
	var plug []cluster.AuditRequest
	for _, r := range reqs {
		if strings.HasPrefix(r.UserAgent, "kubectl-hpa/") {
			plug = append(plug, r)
		}
		if r.IsWrite() {
			t.Errorf("list wrote: %s", r)
		}
	}
	byNS := map[string]map[string]int{}
	for _, r := range plug {
		res := r.Resource
		if res == "" {
			res, _, _ = strings.Cut(r.RequestURI, "?")
		}
		if r.APIGroup != "" {
			res += "." + r.APIGroup
		}
		if r.Subresource != "" {
			res += "/" + r.Subresource
		}
		key := r.Verb + " " + res
		if byNS[r.Namespace] == nil {
			byNS[r.Namespace] = map[string]int{}
		}
		byNS[r.Namespace][key]++
	}
	var report []string
	for ns, counts := range byNS {
		total := 0
		var parts []string
		for k, n := range counts {
			total += n
			parts = append(parts, fmt.Sprintf("%s %d", k, n))
		}
		sort.Strings(parts)
		label := ns
		if label == "" {
			label = "(cluster-wide)"
		}
		report = append(report, fmt.Sprintf("  %s: %d: %s", label, total, strings.Join(parts, ", ")))
		s := ours[ns]
		if s == nil {
			continue
		}
		lists := 0
		for k, n := range counts {
			if strings.HasPrefix(k, "list ") {
				lists += n
				// Events twice: the HPAs' rescales and the Deployments' resizes.
				if want := 1 + boolToInt(k == "list events"); n > want {
					t.Errorf("namespace %s: %d requests %q, want %d", ns, n, k, want)
				}
			}
		}
		if lists > listMaxListsPerNamespace {
			t.Errorf("namespace %s: %d lists, want at most %d (docs/list.md, Cost): %v", ns, lists, listMaxListsPerNamespace, counts)
		}
		// The Lease a kubectl hpa run deciding the namespace would hold, once.
		lease := counts["get leases.coordination.k8s.io"]
		if lease > 1 {
			t.Errorf("namespace %s: %d GETs of the run's Lease, want at most 1", ns, lease)
		}
		if other := total - lists - lease; other > s.perHPAReads {
			t.Errorf("namespace %s (%s): %d requests besides its lists, want at most %d (its HPAs' Pods, Object and External metrics): %v", ns, s.name, other, s.perHPAReads, counts)
		}
	}
	slices.Sort(report)
	t.Logf("kubectl hpa list -A -o json over %d namespaces: %d requests by the plugin (%d with the dispatcher's), in %d sequential round trips:\n%s\n%s",
		len(ours), len(plug), len(reqs), roundTrips(plug), strings.Join(report, "\n"), cluster.SummarizeAudit(reqs))
	if n := byNS[""]["list horizontalpodautoscalers.autoscaling"]; n != 1 {
		t.Errorf("%d cluster-wide HPA lists, want 1: %v", n, byNS[""])
	}

	// Wall time, median of a few interleaved runs each, on the same cluster.
	const runs = 3
	times := map[string][]time.Duration{}
	cmds := [][]string{{"hpa", "list", "-A"}, {"get", "hpa", "-A"}, {"describe", "hpa", "-A"}}
	for range runs {
		for _, args := range cmds {
			start := time.Now()
			if _, err := k.Run(ctx, args...); err != nil {
				t.Fatal(err)
			}
			times[strings.Join(args, " ")] = append(times[strings.Join(args, " ")], time.Since(start))
		}
	}
	var walls []string
	for _, args := range cmds {
		walls = append(walls, fmt.Sprintf("kubectl %s %v", strings.Join(args, " "), median(times[strings.Join(args, " ")]).Round(time.Millisecond)))
	}
	t.Logf("wall time over %d HPAs in %d namespaces, median of %d runs: %s", len(items), len(ours), runs, strings.Join(walls, ", "))
}

func boolToInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
