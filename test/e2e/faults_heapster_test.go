//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
	heapsterstandin "github.com/kubectl-hpa/kubectl-hpa/test/standin/heapster"
)

// hsFaultCase is one way Heapster misbehaves and what the user must be told about it.
type hsFaultCase struct {
	name  string
	slug  string
	fault heapsterstandin.Fault
	// flags go to both explain and run.
	flags []string
	// wantErr must all appear in explain's error and in the HPA's ScalingActive message;
	// "$NS" stands for the test's namespace.
	wantErr []string
	// recover clears the fault and requires run to compute and scale again.
	recover bool
	// podsMetric gives the HPA a Pods metric (Heapster's model API, asked pod by pod)
	// instead of cpu utilization.
	podsMetric bool
}

// TestHsHeapsterFaultsFailSafe makes the Heapster stand-in (behind its own Service, named with
// --heapster-service) misbehave for one namespace at a time: the real Heapster cannot be made
// to answer garbage, duplicates, stale or slow on demand. explain must fail with one line naming the cause; run must set ScalingActive=False
// with upstream's reason and the cause on the HPA in the API server, and must not scale,
// though with good metrics the cpu HPA would (2 pods at 90% of their request against 50%).
// A cpu answer with fewer pods than exist is not a fault: upstream counts the missing
// pods conservatively, and so do we; the model API, asked pod by pod, must answer each.
func TestHsHeapsterFaultsFailSafe(t *testing.T) {
	t.Parallel()
	const where = "heapster via service proxy kube-system/http:" + cluster.HeapsterStandInService + ":"
	const listPath = "GET /apis/metrics/v1alpha1/namespaces/$NS/pods"
	cases := []hsFaultCase{{
		name: "garbage instead of JSON", slug: "garbage",
		fault:   heapsterstandin.Fault{Kind: heapsterstandin.FaultGarbage},
		wantErr: []string{where, "the answer to " + listPath + " is not a PodMetricsList", `body starts "<html>`},
		recover: true,
	}, {
		name: "more items than pods", slug: "more",
		fault:   heapsterstandin.Fault{Kind: heapsterstandin.FaultItemCount, ItemDelta: 1},
		wantErr: []string{where, "cpu usage from " + listPath, "is listed twice"},
	}, {
		name: "no items for the pods", slug: "none",
		fault:   heapsterstandin.Fault{Kind: heapsterstandin.FaultItemCount, ItemDelta: -2},
		wantErr: []string{"no metrics returned from heapster (" + where + ") for pods in $NS matching \"app=web\""},
	}, {
		name: "fewer model items than pods asked for", slug: "fewer", podsMetric: true,
		fault:   heapsterstandin.Fault{Kind: heapsterstandin.FaultItemCount, ItemDelta: -1},
		wantErr: []string{where, "metric qps from GET /api/v1/model/namespaces/$NS/pod-list/", "requested metrics for 2 pods, got metrics for 1"},
	}, {
		name: "stale timestamps", slug: "stale",
		fault:   heapsterstandin.Fault{Kind: heapsterstandin.FaultStale, Age: 20 * time.Minute},
		wantErr: []string{where, "cpu usage from " + listPath, "is stale", "more than --metrics-max-age=10m0s"},
	}, {
		name: "HTTP 500 with a body", slug: "status",
		fault:   heapsterstandin.Fault{Kind: heapsterstandin.FaultStatus},
		wantErr: []string{where + " answered 500 to " + listPath, heapsterstandin.DefaultStatusBody},
	}, {
		name: "answers slower than the request timeout", slug: "slow",
		fault:   heapsterstandin.Fault{Kind: heapsterstandin.FaultSlow, Delay: 10 * time.Minute},
		flags:   []string{"--metrics-timeout=1s"},
		wantErr: []string{where + " timed out after 1s (--metrics-timeout), the request was abandoned", "/pods?labelSelector=app%3Dweb"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			hsFaultCheck(t, tc)
		})
	}
}

func hsFaultCheck(t *testing.T, tc hsFaultCase) {
	ctx := context.Background()
	ns := namespace(t, "hs-"+tc.slug)
	wantErr := make([]string, len(tc.wantErr))
	for i, w := range tc.wantErr {
		wantErr[i] = strings.ReplaceAll(w, "$NS", ns)
	}
	createDeployment(t, ns, deploymentSpec{replicas: 2})
	shared.Load().Set(cluster.Workload{Namespace: ns, Selector: map[string]string{"app": "web"}}, cluster.Load{CPUMilli: 180, MemoryBytes: 128 << 20})
	reason := "FailedGetResourceMetric"
	if tc.podsMetric {
		reason = "FailedGetPodsMetric"
		hsCreatePodsMetricHPA(t, ns)
	} else {
		createHPA(t, ns, hpaSpec{})
	}
	hs := shared.HeapsterStandIn()
	// Without the fault Heapster would answer for both pods: what goes wrong is the fault.
	eventually(t, 30*time.Second, "heapster knows both pods' load", func(context.Context) error {
		loaded := 0
		for _, p := range hs.Scenario().Pods {
			if p.Namespace == ns && len(p.Containers) > 0 && p.Containers[0].CPUMilli == 90 {
				loaded++
			}
		}
		if loaded != 2 {
			return fmt.Errorf("%d pods of %s at 90m", loaded, ns)
		}
		return nil
	})
	if tc.podsMetric {
		// 30 qps per pod against an average target of 10: good data would scale up.
		for _, p := range podsOf(t, ns, map[string]string{"app": "web"}) {
			if err := hs.AppendPoint(ns, p.Name, "qps", heapsterstandin.Point{Timestamp: time.Now(), IntValue: 30}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := hs.SetFault(ns, tc.fault); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hs.ClearFault(ns) })
	user := "e2e:kubectl-hpa-hs-" + tc.slug
	k := pluginAs(t, user)
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}

	// explain: a non-zero exit and one line on stderr naming the cause.
	standIn := "--heapster-service=" + cluster.HeapsterStandInService
	code, stdout, stderr := hsRunExit(ctx, k, append([]string{"hpa", "explain", "web", "-n", ns, "--metrics-source=heapster", standIn}, tc.flags...)...)
	if code != 1 {
		t.Errorf("explain exited %d under the fault, want 1; stdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	line := strings.TrimSpace(stderr)
	t.Logf("explain: %s", line)
	if strings.Contains(line, "\n") {
		t.Errorf("explain's error is not one line:\n%s", stderr)
	}
	for _, w := range wantErr {
		if !strings.Contains(line, w) {
			t.Errorf("explain's error lacks %q:\n%s", w, line)
		}
	}

	// run: ScalingActive=False with upstream's reason and the cause, on the HPA itself.
	runFlags := append([]string{"-n", ns, "--metrics-source=heapster", standIn, "--sync-period=2s", "--cpu-initialization-period=1s", "-o", "json"}, tc.flags...)
	r := startRun(t, k, runFlags...)
	cond := hsWaitScalingActive(t, ns, corev1.ConditionFalse, reason)
	for _, w := range wantErr {
		if !strings.Contains(cond.Message, w) {
			t.Errorf("ScalingActive message lacks %q:\n%s", w, cond.Message)
		}
	}
	// A few more syncs under the fault, in which a wrong scale would show.
	seen := hs.Stats(ns).Requests
	eventually(t, 60*time.Second, "run asked heapster three more times", func(context.Context) error {
		if n := hs.Stats(ns).Requests; n < seen+3 {
			return fmt.Errorf("%d requests about %s so far", n, ns)
		}
		return nil
	})
	if tc.fault.Kind == heapsterstandin.FaultSlow {
		// Every answer would take 10 minutes: requests abandoned one after another show
		// that no worker waits for one.
		if st := hs.Stats(ns); st.Abandoned < 3 {
			t.Errorf("heapster saw %d of %d requests abandoned, want at least 3", st.Abandoned, st.Requests)
		}
	}
	hsNoScaleWrites(t, mark, user, ns)

	if !tc.recover {
		return
	}
	hs.ClearFault(ns)
	hsWaitScalingActive(t, ns, corev1.ConditionTrue, "ValidMetricFound")
	waitSpecReplicas(t, ns, 4)
	if t.Failed() {
		t.Logf("run output:\n%s", r.out.String())
	}
}

// hsCreatePodsMetricHPA creates HPA web on Deployment web with one Pods metric, qps at an
// average of 10, the kind of custom metric the Heapster-era controller read from Heapster's
// model API.
func hsCreatePodsMetricHPA(t *testing.T, ns string) {
	t.Helper()
	hpa := hpaSpec{}.build(ns)
	hpa.Spec.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
		Metric: autoscalingv2.MetricIdentifier{Name: "qps"},
		Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: resource.NewQuantity(10, resource.DecimalSI)},
	}}}
	if _, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(context.Background(), hpa, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
}

// hsRunExit runs kubectl and returns its exit code and streams.
func hsRunExit(ctx context.Context, k cluster.Kubectl, args ...string) (int, string, string) {
	cmd := k.Command(ctx, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	return -1, stdout.String(), err.Error()
}

// hsWaitScalingActive waits until HPA web's ScalingActive condition has status and reason.
func hsWaitScalingActive(t *testing.T, ns string, status corev1.ConditionStatus, reason string) autoscalingv2.HorizontalPodAutoscalerCondition {
	t.Helper()
	var found autoscalingv2.HorizontalPodAutoscalerCondition
	eventually(t, 60*time.Second, fmt.Sprintf("HPA %s/web has ScalingActive=%s %s", ns, status, reason), func(ctx context.Context) error {
		hpa, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return err
		}
		for _, c := range hpa.Status.Conditions {
			if c.Type == autoscalingv2.ScalingActive {
				if c.Status == status && c.Reason == reason {
					found = c
					return nil
				}
				return fmt.Errorf("ScalingActive=%s %s: %s", c.Status, c.Reason, c.Message)
			}
		}
		return fmt.Errorf("no ScalingActive condition; conditions %+v", hpa.Status.Conditions)
	})
	return found
}

// hsNoScaleWrites requires that user wrote HPA status but never a Deployment or its scale
// since mark, and that Deployment web still has its 2 replicas.
func hsNoScaleWrites(t *testing.T, mark cluster.AuditMark, user, ns string) {
	t.Helper()
	writes := pluginWrites(t, mark, user)
	statusWrites := 0
	for _, w := range writes {
		if w.Resource == "deployments" {
			t.Errorf("run wrote %s under a metrics fault", w)
		}
		if w.Resource == "horizontalpodautoscalers" && w.Subresource == "status" && w.Namespace == ns {
			statusWrites++
		}
	}
	if statusWrites == 0 {
		t.Errorf("no HPA status write by %s; its writes:\n%s", user, cluster.SummarizeAudit(writes))
	}
	dep, err := shared.Client().AppsV1().Deployments(ns).Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *dep.Spec.Replicas != 2 {
		t.Errorf("deployment %s/web has %d replicas, want 2 unchanged", ns, *dep.Spec.Replicas)
	}
}
