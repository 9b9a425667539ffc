//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// explainMaxRequests is what one explain may send with a warm discovery cache: the HPA
// beside the evidence of the controller's memory (its rescale events, the Deployments' resizes,
// the leader Leases of kube-controller-manager and of a run in the namespace or in the cluster),
// the target's scale, the pods, their metrics (9), and 3 lists that
// give explain list's decision and findings: the namespace's HPAs (whether another selects the
// same pods: upstream's AmbiguousSelector), and for the lint rules the targeted kind's workloads
// (one Deployment list: the rules read the target's pod template, and it gives the other HPAs'
// target selectors without a scale GET each) and the PodDisruptionBudgets.
const explainMaxRequests = 12

// TestExplainCostFromTheAuditLog counts, in the API server's audit log, the requests of one
// `kubectl hpa explain` with warm caches (the kubectl on PATH is a dispatcher that may send a
// GET /version of its own to pick a kubectl; it is counted apart), and reports the sequential round trips they took
// and the median wall time of explain against `kubectl describe hpa` on the same HPA (reported,
// not asserted: the machine is shared).
func TestExplainCostFromTheAuditLog(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "cost")
	const user = "e2e:kubectl-hpa-cost"
	k := pluginAs(t, user)
	loadedWorkload(t, ns, 2, 100)
	createHPA(t, ns, hpaSpec{})
	waitMetricsAfterReadiness(t, ns)
	ctx := context.Background()

	// The first run fills the discovery cache on disk, as any earlier kubectl command would.
	explainJSON(t, k, ns)
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	text, err := k.Run(ctx, "hpa", "explain", "web", "-n", ns)
	if err != nil {
		t.Fatal(err)
	}
	reqs := completedSince(t, mark, user)
	t.Logf("kubectl hpa explain web -n %s:\n%s", ns, text)
	var ours, dispatcher []cluster.AuditRequest
	for _, r := range reqs {
		if strings.HasPrefix(r.UserAgent, "kubectl-hpa/") {
			ours = append(ours, r)
		} else {
			dispatcher = append(dispatcher, r)
		}
	}
	t.Logf("one explain, warm caches: %d requests by explain in %d sequential round trips, %d by the kubectl dispatcher (%d in all):\n%s",
		len(ours), roundTrips(ours), len(dispatcher), len(reqs), cluster.SummarizeAudit(reqs))
	if len(ours) > explainMaxRequests {
		t.Errorf("explain sent %d requests, want at most %d:\n%s", len(ours), explainMaxRequests, cluster.SummarizeAudit(ours))
	}
	if len(dispatcher) > 1 || (len(dispatcher) == 1 && dispatcher[0].RequestURI != "/version") {
		t.Errorf("the kubectl dispatcher sent %v, want at most one GET /version", dispatcher)
	}
	for _, r := range ours {
		if r.IsWrite() {
			t.Errorf("explain wrote: %s", r)
		}
	}

	// describe, for comparison (reported): its requests after its own warm-up.
	if _, err := k.Run(ctx, "describe", "hpa", "web", "-n", ns); err != nil {
		t.Fatal(err)
	}
	if mark, err = shared.AuditMark(); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Run(ctx, "describe", "hpa", "web", "-n", ns); err != nil {
		t.Fatal(err)
	}
	described := completedSince(t, mark, user)
	t.Logf("one kubectl describe hpa, warm caches: %d requests in %d sequential round trips:\n%s", len(described), roundTrips(described), cluster.SummarizeAudit(described))

	// Wall time, median of a few runs each, interleaved so that all see the same load; the
	// plugin is also run directly, without the two kubectl processes in front of it.
	const runs = 5
	var explainTimes, directTimes, describeTimes []time.Duration
	for range runs {
		for _, c := range []struct {
			cmd   *exec.Cmd
			times *[]time.Duration
		}{
			{k.Command(ctx, "hpa", "explain", "web", "-n", ns), &explainTimes},
			{direct(ctx, k, "explain", "web", "-n", ns), &directTimes},
			{k.Command(ctx, "describe", "hpa", "web", "-n", ns), &describeTimes},
		} {
			start := time.Now()
			if out, err := c.cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v: %v\n%s", c.cmd.Args, err, out)
			}
			*c.times = append(*c.times, time.Since(start))
		}
	}
	me, mp, md := median(explainTimes), median(directTimes), median(describeTimes)
	t.Logf("wall time, median of %d runs: kubectl hpa explain %v (the plugin run directly %v), kubectl describe hpa %v (explain/describe %.2fx)",
		runs, me.Round(time.Millisecond), mp.Round(time.Millisecond), md.Round(time.Millisecond), float64(me)/float64(md))
}

// direct runs the plugin binary itself with k's environment.
func direct(ctx context.Context, k cluster.Kubectl, args ...string) *exec.Cmd {
	cmd := k.Command(ctx)
	cmd.Path = filepath.Join(k.PluginDir, "kubectl-hpa")
	cmd.Args = append([]string{cmd.Path}, args...)
	return cmd
}

// completedSince returns user's requests since mark once the audit log has their responses.
func completedSince(t *testing.T, mark cluster.AuditMark, user string) []cluster.AuditRequest {
	t.Helper()
	var reqs []cluster.AuditRequest
	eventually(t, 10*time.Second, "the audit log has every response", func(context.Context) error {
		var err error
		reqs, err = shared.AuditSince(mark, cluster.AuditFilter{User: user})
		if err != nil {
			return err
		}
		for _, r := range reqs {
			if r.Completed.IsZero() {
				return fmt.Errorf("%s has no response logged yet", r)
			}
		}
		return nil
	})
	return reqs
}

// roundTrips is the longest chain of requests each received by the API server after the one
// before it had completed: how many times the client waited for an answer before asking on.
// It can only overcount: two requests sent together whose goroutines start a moment apart
// count as two when the first is answered within that moment (seen once in a run: 4 for
// explain's 3), which is why it is reported and not asserted.
func roundTrips(reqs []cluster.AuditRequest) int {
	reqs = slices.Clone(reqs)
	slices.SortFunc(reqs, func(a, b cluster.AuditRequest) int { return a.Received.Compare(b.Received) })
	depth := make([]int, len(reqs))
	longest := 0
	for i, r := range reqs {
		depth[i] = 1
		for j := range i {
			if !reqs[j].Completed.After(r.Received) {
				depth[i] = max(depth[i], depth[j]+1)
			}
		}
		longest = max(longest, depth[i])
	}
	return longest
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
