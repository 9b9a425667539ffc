//go:build e2e && soak

package e2e

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

var (
	soakListNamespaces = flag.Int("soak.list-namespaces", 100, "TestSoakList: namespaces, each with the same number of HPAs")
	soakListHPAs       = flag.Int("soak.list-hpas", 1000, "TestSoakList: HPAs in total, each on its own Deployment")
	soakListPods       = flag.Int("soak.list-pods", 10000, "TestSoakList: pods in total, split evenly across the Deployments")
	soakListRuns       = flag.Int("soak.list-runs", 5, "TestSoakList: timed runs of each command (the median is reported)")
)

// TestSoakList measures `kubectl hpa list -A` over a fleet (make soak-list: by default 1,000
// HPAs over 10,000 pods in 100 namespaces) beside `kubectl get hpa -A` and
// `kubectl describe hpa -A` on the same cluster. It asserts what list promises, not its speed:
// a row per HPA, nothing written, and at most listMaxListsPerNamespace lists per namespace
// whatever the number of HPAs in it, counted from the audit log; it prints the wall times.
func TestSoakList(t *testing.T) {
	nsCount, n, total := *soakListNamespaces, *soakListHPAs, *soakListPods
	if nsCount < 1 || n%nsCount != 0 || total%n != 0 {
		t.Fatalf("-soak.list-hpas=%d must be a multiple of -soak.list-namespaces=%d, and -soak.list-pods=%d of the HPAs", n, nsCount, total)
	}
	perNS, perDep := n/nsCount, int32(total/n)
	namespaces := make([]string, nsCount)
	for i := range namespaces {
		namespaces[i] = namespace(t, "soaklist")
	}
	t0 := time.Now()
	soakListCreate(t, namespaces, perNS, perDep)
	t.Logf("%d HPAs over %d pods in %d namespaces ready after %s", n, total, nsCount, time.Since(t0).Round(time.Second))
	soakListWaitPodMetrics(t, total)

	const user = "e2e:kubectl-hpa-soaklist"
	k := pluginAs(t, user)
	ctx := context.Background()
	// The first run fills kubectl's discovery cache, as any earlier kubectl command would.
	if _, err := k.Run(ctx, "hpa", "list", "-A"); err != nil {
		t.Fatal(err)
	}
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	// One run's requests, then the timed runs.
	table, err := k.Run(ctx, "hpa", "list", "-A")
	if err != nil {
		t.Fatal(err)
	}
	reqs := completedSince(t, mark, user)
	_, wall := soakListTime(t, k, "hpa", "list", "-A")
	rows := 0
	ours := map[string]bool{}
	for _, ns := range namespaces {
		ours[ns] = true
	}
	for _, l := range strings.Split(strings.TrimSpace(table), "\n")[1:] {
		if f := strings.Fields(l); len(f) > 0 && ours[f[0]] {
			rows++
		}
	}
	if rows != n {
		t.Errorf("list -A printed %d rows of the soak's namespaces, want %d", rows, n)
	}
	_, getWall := soakListTime(t, k, "get", "hpa", "-A")
	_, describeWall := soakListTime(t, k, "describe", "hpa", "-A")

	// list's own requests (the dispatcher in front of kubectl adds a GET /version per command).
	requests := map[string]int{}
	clusterWide := 0
	for _, r := range reqs {
		if r.IsWrite() {
			t.Errorf("list wrote: %s", r)
		}
		if !strings.HasPrefix(r.UserAgent, "kubectl-hpa/") {
			continue
		}
		if r.Namespace == "" {
			clusterWide++
		} else {
			requests[r.Namespace]++
		}
	}
	counts := make([]int, 0, len(requests))
	for ns, c := range requests {
		if ours[ns] && c > listMaxListsPerNamespace {
			t.Errorf("list sent %d requests in namespace %s of %d HPAs; at most %d per namespace", c, ns, perNS, listMaxListsPerNamespace)
		}
		counts = append(counts, c)
	}
	sort.Ints(counts)
	per := "none"
	if len(counts) > 0 {
		per = fmt.Sprintf("%d to %d", counts[0], counts[len(counts)-1])
	}
	t.Logf("SOAK LIST FIGURES (%d HPAs over %d pods in %d namespaces; median of %d runs, load %s):\n"+
		"  kubectl hpa list -A        %s (%d requests of the plugin: %d cluster-wide, %s per namespace)\n"+
		"  kubectl get hpa -A         %s\n"+
		"  kubectl describe hpa -A    %s",
		n, total, nsCount, *soakListRuns, soakLoadavg(), wall, clusterWide+sum(counts), clusterWide, per, getWall, describeWall)
}

// soakListCreate creates, in each namespace, perNS Deployments of perDep pods at the soak's
// steady usage and an HPA on each, then waits for every pod to be ready.
func soakListCreate(t *testing.T, namespaces []string, perNS int, perDep int32) {
	t.Helper()
	cs := shared.Client()
	type item struct {
		ns string
		i  int
	}
	items := make(chan item)
	errs := make(chan error, len(namespaces)*perNS)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			ctx := context.Background()
			for it := range items {
				d := deploymentSpec{name: soakName(it.i), replicas: perDep}
				sel := map[string]string{"app": d.name}
				shared.Load().Set(cluster.Workload{Namespace: it.ns, Selector: sel},
					cluster.Load{CPUMilli: int64(perDep) * soakPodMilli, MemoryBytes: int64(perDep) * 64 << 20})
				if _, err := cs.AppsV1().Deployments(it.ns).Create(ctx, d.build(it.ns), metav1.CreateOptions{}); err != nil {
					errs <- err
					continue
				}
				h := hpaSpec{max: 2 * perDep}.build(it.ns)
				h.Name, h.Spec.ScaleTargetRef.Name = d.name, d.name
				if _, err := cs.AutoscalingV2().HorizontalPodAutoscalers(it.ns).Create(ctx, h, metav1.CreateOptions{}); err != nil {
					errs <- err
				}
			}
		})
	}
	for _, ns := range namespaces {
		for i := range perNS {
			items <- item{ns, i}
		}
	}
	close(items)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	ours := map[string]bool{}
	for _, ns := range namespaces {
		ours[ns] = true
	}
	soakWaitReady(t, metav1.NamespaceAll, ours, int32(len(namespaces)*perNS)*perDep, perDep)
}

// soakListTime runs kubectl with args -soak.list-runs times and returns the last output and
// the median wall time.
func soakListTime(t *testing.T, k cluster.Kubectl, args ...string) (string, time.Duration) {
	t.Helper()
	var out string
	var walls []time.Duration
	for range max(1, *soakListRuns) {
		start := time.Now()
		o, err := k.Run(context.Background(), args...)
		walls = append(walls, time.Since(start))
		if err != nil {
			t.Fatal(err)
		}
		out = o
	}
	slices.Sort(walls)
	return out, walls[len(walls)/2].Round(time.Millisecond)
}

// soakListWaitPodMetrics waits until metrics-server has a sample of every pod of the cluster's
// soak namespaces.
func soakListWaitPodMetrics(t *testing.T, want int) {
	t.Helper()
	mc, err := metricsclient.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Minute, fmt.Sprintf("metrics-server has samples of %d pods", want), func(ctx context.Context) error {
		list, err := mc.MetricsV1beta1().PodMetricses(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		got := 0
		for _, m := range list.Items {
			if strings.HasPrefix(m.Namespace, "soaklist") {
				got++
			}
		}
		if got < want {
			time.Sleep(2 * time.Second)
			return fmt.Errorf("%d samples", got)
		}
		return nil
	})
}

func sum(xs []int) int {
	s := 0
	for _, x := range xs {
		s += x
	}
	return s
}
