//go:build e2e

package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// cmRun is one kubectl hpa run -o json over a namespace: every decision it prints, by HPA.
type cmRun struct {
	mu        sync.Mutex
	decisions map[string][]cmRunDecision
	stop      func()
}

type cmRunDecision struct {
	at time.Time
	e  *v1alpha1.Explanation
}

// startCMRun starts kubectl hpa run -n ns with kube-controller-manager's settings of this
// cluster; its stop is Ctrl-C.
func startCMRun(t *testing.T, k cluster.Kubectl, ns string) *cmRun {
	t.Helper()
	r := &cmRun{decisions: map[string][]cmRunDecision{}}
	args := append([]string{"hpa", "run", "-n", ns, "-o", "json", "--sync-period=" + memSyncPeriod.String(),
		// kube-controller-manager wrote these HPAs' status a moment ago: it has stopped.
		"--force-ownership", "--persist-history=false"}, histLease...)
	r.stop = startRunLines(t, k, ns, args, func(at time.Time, line []byte) {
		e := &v1alpha1.Explanation{}
		if err := json.Unmarshal(line, e); err != nil || e.Metadata.Name == "" {
			return
		}
		r.mu.Lock()
		r.decisions[e.Metadata.Name] = append(r.decisions[e.Metadata.Name], cmRunDecision{at: at, e: e})
		r.mu.Unlock()
	})
	return r
}

// startRunLines starts kubectl with args (a kubectl hpa run over namespace ns) and hands each
// line it prints to line, with when it came. The returned stop is Ctrl-C, waits for it to
// exit, and logs its stderr's end when the test failed; it runs at the test's cleanup too.
func startRunLines(t *testing.T, k cluster.Kubectl, ns string, args []string, line func(at time.Time, b []byte)) (stop func()) {
	t.Helper()
	errOut, err := os.CreateTemp(t.TempDir(), "run-*.err")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cmd := k.Command(ctx, args...)
	cmd.Stderr = errOut
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 30 * time.Second
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		cancel()
		t.Fatal(err)
	}
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
		for sc.Scan() {
			line(time.Now(), sc.Bytes())
		}
	}()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			<-read
			if err := cmd.Wait(); err != nil && ctx.Err() == nil {
				t.Errorf("kubectl hpa run -n %s: %v", ns, err)
			}
			errOut.Close()
			if t.Failed() {
				b, _ := os.ReadFile(errOut.Name())
				t.Logf("kubectl hpa run -n %s stderr (last 4 KiB):\n%s", ns, b[max(0, len(b)-4096):])
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// since are name's decisions after t.
func (r *cmRun) since(name string, t time.Time) []*v1alpha1.Explanation {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*v1alpha1.Explanation
	for _, d := range r.decisions[name] {
		if d.at.After(t) {
			out = append(out, d.e)
		}
	}
	return out
}

// cmRunPhase: kubectl hpa run takes the HPAs over from kube-controller-manager (restarted
// without its HPA controller) on the same feeds, and decides each as kube-controller-manager
// last did (before: its status as the up phase read it). Then the load steps up on two HPAs
// (pods-average to 900 requests per second, cpu-and-pods to 700) and run follows it; handed
// back, kube-controller-manager decides each as run last did. The adapter's write endpoint is
// one per network namespace, so the two controllers cannot run side by side on two clusters
// here: they take turns on one, each judged at the other's steady state. It returns the HPAs
// as kube-controller-manager's status has them at the end.
func cmRunPhase(ctx context.Context, t *testing.T, k cluster.Kubectl, c *cluster.Cluster, cm *cluster.CustomMetrics, ns string, hpas []cmHPA,
	before map[string]*autoscalingv2.HorizontalPodAutoscaler) map[string]*autoscalingv2.HorizontalPodAutoscaler {
	t.Helper()
	if err := c.RestartControllerManager(ctx, false); err != nil {
		t.Fatal(err)
	}
	run := startCMRun(t, k, ns)
	t0 := time.Now()
	decidedTwice := func(since time.Time) func(context.Context) error {
		return func(context.Context) error {
			for _, h := range hpas {
				if n := len(run.since(h.name, since)); n < 2 {
					return fmt.Errorf("%s decided %d times by run", h.name, n)
				}
			}
			return nil
		}
	}
	eventually(t, time.Minute, "kubectl hpa run decides every HPA twice", decidedTwice(t0))
	for _, h := range hpas {
		ds := run.since(h.name, t0)
		for _, d := range cmDifferences(before[h.name], nil, ds[len(ds)-1]) {
			t.Errorf("run took over: %s: %s (kube-controller-manager's last decision)", h.name, d)
		}
	}

	// The step: run scales pods-average to 9 and cpu-and-pods to 7.
	for name, total := range map[string]int64{"pods-average": 900_000, "cpu-and-pods": 700_000} {
		if err := cm.Pods(ctx, cluster.Workload{Namespace: ns, Selector: map[string]string{"app": name}}, "rps", total); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]int32{"pods-average": 9, "cpu-and-pods": 7}
	var settled time.Time
	eventually(t, 3*time.Minute, "kubectl hpa run follows the step", func(ctx context.Context) error {
		for name, n := range want {
			d, err := c.Client().AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if d.Status.ReadyReplicas != n {
				settled = time.Time{}
				return fmt.Errorf("%s: %d ready, want %d", name, d.Status.ReadyReplicas, n)
			}
		}
		if settled.IsZero() {
			settled = time.Now()
		}
		return decidedTwice(settled)(ctx)
	})
	last := map[string]*v1alpha1.Explanation{}
	for _, h := range hpas {
		ds := run.since(h.name, settled)
		last[h.name] = ds[len(ds)-1]
		if e := last[h.name]; want[h.name] != 0 && (e.Decision == nil || e.Decision.DesiredReplicas != want[h.name]) {
			t.Errorf("run after the step: %s decided %+v, want %d", h.name, e.Decision, want[h.name])
		}
	}
	run.stop()

	// Handed back: kube-controller-manager, with no memory of run's syncs, decides each HPA as
	// run last did.
	if err := c.RestartControllerManagerWith(ctx, true, "--horizontal-pod-autoscaler-sync-period="+memSyncPeriod.String()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2*memSyncPeriod + 5*time.Second)
	after := map[string]*autoscalingv2.HorizontalPodAutoscaler{}
	for _, h := range hpas {
		hpa, err := c.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, h.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		after[h.name] = hpa
		for _, d := range cmDifferences(hpa, nil, last[h.name]) {
			t.Errorf("handed back: %s: run's last decision differs from kube-controller-manager's: %s", h.name, d)
		}
		t.Logf("run phase: %s: run %s; kube-controller-manager then %d -> %d %s", h.name, cmDecisionString(last[h.name]), hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas, cmConditions(hpa.Status.Conditions))
	}
	return after
}

func cmDecisionString(e *v1alpha1.Explanation) string {
	if e.Decision == nil {
		if e.Error != nil {
			return "no decision: " + e.Error.Message
		}
		return "no decision"
	}
	var cs []string
	for _, c := range e.Decision.Conditions {
		cs = append(cs, c.Type+"="+c.Status+"/"+c.Reason)
	}
	return fmt.Sprintf("%d -> %d %s", e.Decision.CurrentReplicas, e.Decision.DesiredReplicas, strings.Join(cs, " "))
}
