//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/controller/history/annotation"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// The decision history run persists on each HPA (docs/run.md: Decision history that survives
// restarts), against upstream's memory-only behaviour (--persist-history=false), side by side in
// two namespaces. Times come from the API server: the audit log's scale writes, the Lease, and
// the history annotation the holder wrote.

// histLease are short Lease timings, so that a takeover takes seconds, but not so short that a
// holder slowed down by a loaded machine misses its renew deadline: with 3s/2s/500ms the Lease
// changed hands 66s before the holder was killed, in a make test on 2 cores. The renew deadline
// plus the retry period stays 1s clear of the lease duration, as run requires.
var histLease = []string{"--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=7s", "--leader-elect-retry-period=1s"}

// histArms runs arm with the history persisted and without, side by side.
func histArms(t *testing.T, arm func(t *testing.T, persist bool)) {
	for _, persist := range []bool{true, false} {
		name := "persisted"
		if !persist {
			name = "memory-only"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			arm(t, persist)
			t.Logf("%s took %s", t.Name(), time.Since(start).Round(time.Second))
		})
	}
}

// histHPA is HPA web on Deployment web, 1..10 replicas at a 50% cpu target, with behavior.
func histHPA(t *testing.T, ns string, b *autoscalingv2.HorizontalPodAutoscalerBehavior) {
	t.Helper()
	h := hpaSpec{}.build(ns)
	h.Spec.Behavior = b
	if _, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(context.Background(), h, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// histScaleWrites are the successful scale writes of user since mark.
func histScaleWrites(t *testing.T, mark cluster.AuditMark, user string) []cluster.AuditRequest {
	t.Helper()
	var out []cluster.AuditRequest
	for _, w := range pluginWrites(t, mark, user) {
		if w.Resource == "deployments" && w.Subresource == "scale" && w.Code/100 == 2 {
			out = append(out, w)
		}
	}
	return out
}

// histWaitScaleWrite waits for the first scale write of user since mark.
func histWaitScaleWrite(t *testing.T, bound time.Duration, mark cluster.AuditMark, user, what string) cluster.AuditRequest {
	t.Helper()
	var w cluster.AuditRequest
	eventually(t, bound, what, func(context.Context) error {
		writes := histScaleWrites(t, mark, user)
		if len(writes) == 0 {
			return errors.New("no scale write yet")
		}
		w = writes[0]
		return nil
	})
	return w
}

func histGetHPA(t *testing.T, ns string) *autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	hpa, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return hpa
}

// TestHistoryScaleDownWindowSurvivesALeaseFailover: 4 replicas, the load drops under a 120 s
// scale-down window, the Lease holder is killed 80 s after its last recommendation of the old
// size and the standby takes over.
// Persisted, the scale-down comes when the window that began with the last high recommendation
// ends (within a sync period); memory-only, a whole window after the takeover, as upstream
// after a restart. explain during the window reports the recorded history and decides the hold
// the new holder keeps.
func TestHistoryScaleDownWindowSurvivesALeaseFailover(t *testing.T) {
	t.Parallel()
	const (
		window   = 120 * time.Second
		killAt   = 80 * time.Second
		sync     = 5 * time.Second
		takeover = 3 * time.Second
		// slack covers a decision's own time and the informers' start after a takeover.
		slack = 3 * time.Second
	)
	histArms(t, func(t *testing.T, persist bool) {
		ns := namespace(t, "hist-failover")
		// 4 pods at 50% of their 100m: the target, so 4 stays.
		loadedWorkload(t, ns, 4, 200)
		waitMetricsAfterReadiness(t, ns)
		histHPA(t, ns, &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(window / time.Second))},
		})
		mark, err := shared.AuditMark()
		if err != nil {
			t.Fatal(err)
		}
		users := []string{"e2e:hist-fo-a-" + ns, "e2e:hist-fo-b-" + ns}
		var procs []*lifeProc
		for _, u := range users {
			args := append([]string{"-n", ns, "--sync-period=" + sync.String(), "-o", "json", "--persist-history=" + strconv.FormatBool(persist)}, histLease...)
			procs = append(procs, lifeStart(t, pluginAs(t, u), args...))
		}
		eventually(t, 60*time.Second, "the holder reconciles web at 4", func(context.Context) error {
			hpa := histGetHPA(t, ns)
			if c := hpaCondition(hpa, autoscalingv2.ScalingActive); c == nil || c.Status != corev1.ConditionTrue || hpa.Status.DesiredReplicas != 4 {
				return fmt.Errorf("status %+v", hpa.Status)
			}
			return nil
		})
		lease, err := lifeGetLease(context.Background(), ns)
		if err != nil {
			t.Fatal(err)
		}
		holderID := ptr.Deref(lease.Spec.HolderIdentity, "")
		holder := -1
		for i, p := range procs {
			// The holder says it acquired the Lease as its identity; a standby names the
			// holder only as "held by".
			if holderID != "" && strings.Contains(p.out.String(), " as "+holderID+": this run writes") {
				holder = i
			}
		}
		if holder < 0 {
			t.Fatalf("no run printed the Lease holder %q", holderID)
		}
		standby := procs[1-holder]

		// 10m per pod, 10%: 1 is recommended from the holder's first sync that sees it.
		shared.Load().Set(cluster.Workload{Namespace: ns, Selector: map[string]string{"app": "web"}}, cluster.Load{CPUMilli: 40, MemoryBytes: 4 * 64 << 20})
		var t0, lastHigh time.Time
		eventually(t, 90*time.Second, "the holder holds the scale-down to 1 (ScaleDownStabilized)", func(context.Context) error {
			hpa := histGetHPA(t, ns)
			c := hpaCondition(hpa, autoscalingv2.AbleToScale)
			if c == nil || c.Reason != "ScaleDownStabilized" {
				return fmt.Errorf("AbleToScale %+v", c)
			}
			t0 = c.LastTransitionTime.Time
			if !persist {
				return nil
			}
			value, ok := hpa.Annotations[annotation.Key]
			if !ok {
				return errors.New("no history annotation")
			}
			rec, err := annotation.Decode(value)
			if err != nil {
				return err
			}
			// The samples may pass through a middle value (metrics-server averages over its
			// window): the window is held by the last 4, kept as the newest of the closed 4s.
			n := len(rec.Recs)
			if n < 2 || !rec.Open || rec.Recs[n-1][0] != 1 {
				return fmt.Errorf("history %s: want a closed 4, then an open 1", value)
			}
			lastHigh = time.Time{}
			for _, e := range rec.Recs[:n-1] {
				if e[0] == 4 {
					lastHigh = rec.At.Add(-time.Duration(e[1]) * time.Millisecond)
				}
			}
			if lastHigh.IsZero() {
				return fmt.Errorf("history %s: want a closed 4, then an open 1", value)
			}
			t0 = rec.At.Add(-time.Duration(rec.Recs[n-1][1]) * time.Millisecond)
			if size := len(value); size > 400 {
				t.Errorf("history annotation of %d bytes: %s", size, value)
			}
			t.Logf("history annotation, %d bytes: %s", len(value), value)
			return nil
		})
		if !persist {
			// The last high recommendation is the sync before the condition turned (whole
			// seconds): bound it from both sides.
			lastHigh = t0.Add(-sync)
		}
		t.Logf("t0 %s, last recommendation of 4 at %s", t0.Format(time.StampMilli), lastHigh.Format(time.StampMilli))

		// The kill is timed from the last high recommendation, where the window starts: timed
		// from t0 (the first 1, up to 20s later when the samples pass through a middle value),
		// the takeover could leave explain only seconds before the window ends.
		time.Sleep(time.Until(lastHigh.Add(killAt)))
		if err := procs[holder].cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		<-procs[holder].done
		killed := time.Now()
		if w := histScaleWrites(t, mark, users[holder]); len(w) > 0 {
			t.Fatalf("the holder scaled before the window ended:\n%s", cluster.SummarizeAudit(w))
		}
		var acquired time.Time
		eventually(t, 30*time.Second, "the standby takes the Lease over", func(ctx context.Context) error {
			l, err := lifeGetLease(ctx, ns)
			if err != nil {
				return err
			}
			if h := ptr.Deref(l.Spec.HolderIdentity, ""); h == holderID || h == "" {
				return fmt.Errorf("holder %q", h)
			}
			acquired = l.Spec.AcquireTime.Time
			return nil
		})
		t.Logf("holder killed at t0+%s, standby took over at t0+%s", killed.Sub(t0).Round(time.Millisecond), acquired.Sub(t0).Round(time.Millisecond))
		if acquired.Before(killed) {
			t.Fatalf("the Lease changed hands at t0+%s, before the holder was killed: the failover this test measures did not happen", acquired.Sub(t0).Round(time.Millisecond))
		}

		if persist {
			standby.waitOutput(t, 10*time.Second, "restored the decision history of 1 HPA(s)")
			// explain during the window: the recorded history, and the hold the new holder keeps.
			e := explainJSON(t, plugin(), ns)
			if e.History == nil || e.History.Source != "recorded" || e.Decision == nil || e.Decision.DesiredReplicas != 4 {
				t.Errorf("explain during the window: history %+v, decision %+v; want the recorded history and a hold at 4", e.History, e.Decision)
			}
			if hpa := histGetHPA(t, ns); hpa.Status.DesiredReplicas != 4 || hpaCondition(hpa, autoscalingv2.AbleToScale).Reason != "ScaleDownStabilized" {
				t.Errorf("the new holder's decision: desired %d, %+v; explain said hold at 4", hpa.Status.DesiredReplicas, hpaCondition(hpa, autoscalingv2.AbleToScale))
			}
		}

		w := histWaitScaleWrite(t, 3*time.Minute, mark, users[1-holder], "the new holder scales down")
		wantFrom, wantBy := lastHigh.Add(window), lastHigh.Add(window+sync+slack)
		if !persist {
			wantFrom, wantBy = acquired.Add(window), acquired.Add(window+sync+slack)
		}
		t.Logf("scale-down written at t0+%s (window end t0+%s, takeover+window t0+%s)", w.Received.Sub(t0).Round(time.Millisecond),
			lastHigh.Add(window).Sub(t0).Round(time.Millisecond), acquired.Add(window).Sub(t0).Round(time.Millisecond))
		if w.Received.Before(wantFrom) || w.Received.After(wantBy) {
			t.Errorf("persist-history=%v: the scale-down was written at t0+%s, want within [t0+%s, t0+%s]", persist,
				w.Received.Sub(t0).Round(time.Millisecond), wantFrom.Sub(t0).Round(time.Millisecond), wantBy.Sub(t0).Round(time.Millisecond))
		}
		// The first scale-down goes to the highest recommendation left in the window (1, or a
		// middle value the samples passed through).
		if got := faultSpecReplicas(t, ns); got >= 4 {
			t.Errorf("scaled to %d, want below 4", got)
		}
	})
}

// TestHistoryRateLimitSurvivesARestart: scale-up policy Pods=2 per 60 s; right after a +2 step
// run is stopped (SIGTERM) and started again. Persisted, the next +2 waits for the period;
// memory-only, it comes at the first sync after the restart, breaking the policy.
func TestHistoryRateLimitSurvivesARestart(t *testing.T) {
	t.Parallel()
	const (
		period = 60 * time.Second
		sync   = 2 * time.Second
		slack  = 3 * time.Second
	)
	histArms(t, func(t *testing.T, persist bool) {
		ns := namespace(t, "hist-rate")
		loadedWorkload(t, ns, 2, 100)
		waitMetricsAfterReadiness(t, ns)
		histHPA(t, ns, &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: &autoscalingv2.HPAScalingRules{
				StabilizationWindowSeconds: ptr.To(int32(0)),
				Policies:                   []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: int32(period / time.Second)}},
			},
		})
		mark, err := shared.AuditMark()
		if err != nil {
			t.Fatal(err)
		}
		args := append([]string{"-n", ns, "--sync-period=" + sync.String(), "-o", "json", "--persist-history=" + strconv.FormatBool(persist)}, histLease...)
		first, second := "e2e:hist-rate-1-"+ns, "e2e:hist-rate-2-"+ns
		run := lifeStart(t, pluginAs(t, first), args...)
		eventually(t, 60*time.Second, "run reconciles web at 2", func(context.Context) error {
			if c := hpaCondition(histGetHPA(t, ns), autoscalingv2.ScalingActive); c == nil || c.Status != corev1.ConditionTrue {
				return fmt.Errorf("ScalingActive %+v", c)
			}
			return nil
		})

		// 500% of the request: far more pods wanted than the policy's +2 per 60 s allows.
		shared.Load().Set(cluster.Workload{Namespace: ns, Selector: map[string]string{"app": "web"}}, cluster.Load{CPUMilli: 1000, MemoryBytes: 2 * 64 << 20})
		step := histWaitScaleWrite(t, 60*time.Second, mark, first, "the first +2 step")
		eventually(t, 10*time.Second, "the status write recording the step", func(context.Context) error {
			hpa := histGetHPA(t, ns)
			if hpa.Status.LastScaleTime == nil || hpa.Status.DesiredReplicas != 4 {
				return fmt.Errorf("status %+v", hpa.Status)
			}
			if persist && !strings.Contains(hpa.Annotations[annotation.Key], `"up":[[2,`) {
				return fmt.Errorf("history %s: no scale-up event", hpa.Annotations[annotation.Key])
			}
			return nil
		})
		if err := run.cmd.Process.Signal(syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		<-run.done
		restarted := time.Now()
		restartMark, err := shared.AuditMark()
		if err != nil {
			t.Fatal(err)
		}
		again := lifeStart(t, pluginAs(t, second), args...)
		next := histWaitScaleWrite(t, period+30*time.Second, restartMark, second, "the next +2 step after the restart")
		t.Logf("first +2 at %s, restart %s after it, next +2 %s after it", step.Received.Format(time.StampMilli),
			restarted.Sub(step.Received).Round(time.Millisecond), next.Received.Sub(step.Received).Round(time.Millisecond))
		if persist {
			again.waitOutput(t, 5*time.Second, "restored the decision history of 1 HPA(s)")
			// The scale event is stamped with its decision's time, a moment before the write.
			if from, by := step.Received.Add(period-time.Second), step.Received.Add(period+sync+slack); next.Received.Before(from) || next.Received.After(by) {
				t.Errorf("the next +2 came %s after the first, want within [%s, %s]: the policy's period", next.Received.Sub(step.Received).Round(time.Millisecond),
					from.Sub(step.Received), by.Sub(step.Received))
			}
		} else if next.Received.Sub(restarted) > 4*sync+slack || next.Received.Sub(step.Received) >= period-time.Second {
			t.Errorf("memory-only: the next +2 came %s after the restart, %s after the first, want at its first syncs, inside the period (upstream forgets it)",
				next.Received.Sub(restarted).Round(time.Millisecond), next.Received.Sub(step.Received).Round(time.Millisecond))
		}
		if got := faultSpecReplicas(t, ns); got != 6 {
			t.Errorf("after the second step: %d replicas, want 6 (4 + 2)", got)
		}
		if w := histScaleWrites(t, mark, first); len(w) != 1 {
			t.Errorf("the first run made %d scale writes, want 1:\n%s", len(w), cluster.SummarizeAudit(w))
		}
	})
}
