//go:build e2e

package e2e

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// faqScenario is one of the questions people ask most about an HPA, set up for real: explain's
// first lines (up to the first blank line: name, target, verdict, its details, what-if and
// warnings) must answer it in the words people search with.
type faqScenario struct {
	name, question string
	// run sets the namespace up and returns explain's output (explain may exit non-zero: a
	// metric that cannot be read is an answer too).
	run  func(ctx context.Context, ns string) (string, error)
	want []string
}

// TestFAQExplainAnswersTheMostAskedQuestionsFirst sets every scenario up at once, each in its
// own namespace of the shared cluster (they mostly wait for metrics-server's two scrapes), then
// checks each answer.
func TestFAQExplainAnswersTheMostAskedQuestionsFirst(t *testing.T) {
	t.Parallel()
	t0 := time.Now()
	scenarios := faqScenarios()
	outs := make([]string, len(scenarios))
	errs := make([]error, len(scenarios))
	var wg sync.WaitGroup
	for i, sc := range scenarios {
		ns := namespace(t, "faq-"+sc.name)
		wg.Go(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			outs[i], errs[i] = sc.run(ctx, ns)
		})
	}
	wg.Wait()
	for i, sc := range scenarios {
		t.Run(sc.name, func(t *testing.T) {
			if errs[i] != nil {
				t.Fatalf("setting up %q: %v", sc.question, errs[i])
			}
			head, _, _ := strings.Cut(outs[i], "\n\n")
			for _, w := range sc.want {
				if !strings.Contains(head, w) {
					t.Errorf("%q: explain's first lines lack %q:\n%s\n\nwhole output:\n%s", sc.question, w, head, outs[i])
				}
			}
		})
	}
	t.Logf("FAQ suite: %d scenarios in %.1fs", len(scenarios), time.Since(t0).Seconds())
}

func faqScenarios() []faqScenario {
	cpu := func(util int32) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(util)}}}
	}
	memory := func(util int32) autoscalingv2.MetricSpec {
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: corev1.ResourceMemory, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(util)}}}
	}
	external := func(name string, sel map[string]string) autoscalingv2.MetricSpec {
		avg := resource.MustParse("30")
		return autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
			Metric: autoscalingv2.MetricIdentifier{Name: name, Selector: &metav1.LabelSelector{MatchLabels: sel}},
			Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &avg}}}
	}
	const mi = 1 << 20
	return []faqScenario{{
		name: "unknown-target", question: "why does my HPA show <unknown> (a sidecar without requests)?",
		run: func(ctx context.Context, ns string) (string, error) {
			d := deploymentSpec{replicas: 2}.build(ns)
			d.Spec.Template.Spec.Containers = append(d.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "e2e/proxy:1"})
			return faqExplain(ctx, ns, d, faqLoad{cpuMilli: 100, memory: 128 * mi, perPod: 50}, faqHPA(ns, 1, 10, cpu(50)))
		},
		want: []string{"kubectl get hpa shows <unknown> for cpu", "missing request for cpu in container sidecar", "MissingRequests"},
	}, {
		name: "driving-metric", question: "which metric drove the decision?",
		run: func(ctx context.Context, ns string) (string, error) {
			return faqExplain(ctx, ns, deploymentSpec{replicas: 2}.build(ns), faqLoad{cpuMilli: 300, memory: 64 * mi, perPod: 150}, faqHPA(ns, 1, 10, cpu(50), memory(80)))
		},
		want: []string{"would scale 2 -> 4", "driving metric: cpu (the highest proposal wins: cpu 6, memory 2)"},
	}, {
		name: "invalid-blocks-down", question: "why does it not scale down (a metric that fails)?",
		run: func(ctx context.Context, ns string) (string, error) {
			avg := resource.MustParse("10")
			rps := autoscalingv2.MetricSpec{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
				Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"}, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: &avg}}}
			return faqExplain(ctx, ns, deploymentSpec{replicas: 3}.build(ns), faqLoad{cpuMilli: 30, memory: 96 * mi, perPod: 10}, faqHPA(ns, 1, 10, cpu(50), rps))
		},
		want: []string{"would not scale", "a failing metric blocks scale-down: cpu alone proposes 1", "<unknown> for requests_per_second"},
	}, {
		name: "window", question: "why does the stabilization window seem not to hold?",
		run: func(ctx context.Context, ns string) (string, error) {
			h := faqHPA(ns, 1, 10, cpu(50))
			h.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
			// The cluster's controller has synced it (a status): its first sync seeded the window with
			// 4, which holds the count; its history is in its memory.
			status := func(ctx context.Context) error {
				got, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				got.Status = autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 4, DesiredReplicas: 4, ObservedGeneration: ptr.To(got.Generation),
					LastScaleTime: ptr.To(metav1.NewTime(time.Now().Add(-time.Minute)))}
				_, err = shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).UpdateStatus(ctx, got, metav1.UpdateOptions{})
				return err
			}
			return faqExplain(ctx, ns, deploymentSpec{replicas: 4}.build(ns), faqLoad{cpuMilli: 40, memory: 128 * mi, perPod: 10}, h, status)
		},
		want: []string{"held at 4 by the highest recommendation of the last 5m0s (scaleDown stabilization window)",
			"stabilization window: the recommendation of 4 made ", "the window counts recommendations, not the time since the last scale"},
	}, {
		name: "tolerance", question: "why does it not scale although usage is above target?",
		run: func(ctx context.Context, ns string) (string, error) {
			return faqExplain(ctx, ns, deploymentSpec{replicas: 2}.build(ns), faqLoad{cpuMilli: 106, memory: 64 * mi, perPod: 53}, faqHPA(ns, 1, 10, cpu(50)))
		},
		want: []string{"would stay at 2: every metric is within tolerance (-10%/+10%)", "scales up above 55%"},
	}, {
		name: "rollout", question: "why does it scale up less than expected during a rollout?",
		run: func(ctx context.Context, ns string) (string, error) {
			d := deploymentSpec{replicas: 2}.build(ns)
			// New pods count as available only after minReadySeconds: the rollout stays in progress.
			d.Spec.MinReadySeconds = 300
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
				MaxSurge: ptr.To(intstr.FromInt32(1)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}
			rollout := func(ctx context.Context) error {
				dep, err := shared.Client().AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
				if err != nil {
					return err
				}
				dep.Spec.Template.Spec.Containers[0].Image = "e2e/app:2"
				if _, err := shared.Client().AppsV1().Deployments(ns).Update(ctx, dep, metav1.UpdateOptions{}); err != nil {
					return err
				}
				// Explain as soon as the new pod runs, before metrics-server has measured it.
				return faqPoll(ctx, func(ctx context.Context) error {
					pods, err := shared.Client().CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
					if err != nil {
						return err
					}
					for _, p := range pods.Items {
						if p.Spec.Containers[0].Image == "e2e/app:2" && p.Status.Phase == corev1.PodRunning {
							return nil
						}
					}
					return errors.New("the new pod is not running yet")
				})
			}
			return faqExplain(ctx, ns, d, faqLoad{cpuMilli: 300, memory: 128 * mi, perPod: 150}, faqHPA(ns, 1, 10, cpu(50)), rollout)
		},
		want: []string{"1 missing metrics (new pods metrics-server has not measured yet: counted as 0 on a scale-up", "RolloutInProgress"},
	}, {
		name: "memory", question: "why does my memory HPA never scale down?",
		run: func(ctx context.Context, ns string) (string, error) {
			return faqExplain(ctx, ns, deploymentSpec{replicas: 4}.build(ns), faqLoad{cpuMilli: 40, memory: 160 * mi, perPod: 10}, faqHPA(ns, 1, 10, memory(70)))
		},
		want: []string{"would stay at 4: memory 62% vs 70%", "scales down only once memory averages below 52.5% of request", "memory use rarely falls when load does"},
	}, {
		name: "dry-run", question: "what would it do, without doing it?",
		run: func(ctx context.Context, ns string) (string, error) {
			out, err := faqExplain(ctx, ns, deploymentSpec{replicas: 2}.build(ns), faqLoad{cpuMilli: 200, memory: 64 * mi, perPod: 100}, faqHPA(ns, 1, 10, cpu(50)),
				nil, "--set-target", "cpu=90%")
			if err != nil {
				return out, err
			}
			dep, err := shared.Client().AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			if err != nil {
				return out, err
			}
			if *dep.Spec.Replicas != 2 {
				return out, fmt.Errorf("explain changed the deployment: %d replicas, want 2", *dep.Spec.Replicas)
			}
			return out, nil
		},
		want: []string{"would scale 2 -> 3: cpu 100% vs 90%", "What-if (inputs changed here only; the cluster was not touched):", "--set-target cpu=90% (was 50%)"},
	}, {
		name: "scale-to-zero", question: "why does my HPA not scale up from zero (minReplicas 0, an External metric)?",
		run: func(ctx context.Context, ns string) (string, error) {
			return faqExplain(ctx, ns, deploymentSpec{replicas: 0}.build(ns), faqLoad{}, faqHPA(ns, 0, 5, external("queue_messages_ready", map[string]string{"queue": "orders"})))
		},
		want: []string{"would not scale: the target has 0 replicas", "scales a target up from 0 only when it scaled it to 0 itself (status condition ScaledToZero=True", "minReplicas 0 relies on HPAScaleToZero"},
	}, {
		name: "keda", question: "why does my KEDA-managed HPA behave like this?",
		run: func(ctx context.Context, ns string) (string, error) {
			h := faqHPA(ns, 1, 10, external("s0-rabbitmq-queue", map[string]string{"scaledobject.keda.sh/name": "web"}))
			h.Labels = map[string]string{"scaledobject.keda.sh/name": "web"}
			h.OwnerReferences = []metav1.OwnerReference{{APIVersion: "keda.sh/v1alpha1", Kind: "ScaledObject", Name: "web", UID: "6f1e0c5a-0000-4000-8000-000000000001", Controller: ptr.To(true)}}
			return faqExplain(ctx, ns, deploymentSpec{replicas: 2}.build(ns), faqLoad{cpuMilli: 50, memory: 64 * mi, perPod: 25}, h)
		},
		want: []string{"kubectl get hpa shows <unknown> for s0-rabbitmq-queue", `ManagedByKEDA: this HPA is owned by KEDA ScaledObject "web"`, "change the ScaledObject instead"},
	}}
}

func faqHPA(ns string, minReplicas, maxReplicas int32, metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MinReplicas:    &minReplicas, MaxReplicas: maxReplicas, Metrics: metrics,
		},
	}
}

// faqLoad is the workload's total load and the CPU each pod then reports (0: no pods).
type faqLoad struct {
	cpuMilli, memory int64
	perPod           int64
}

// faqExplain creates the deployment under load and the HPA, waits until metrics-server reports
// every pod at its share of the load, runs then (when given), and returns explain's output.
func faqExplain(ctx context.Context, ns string, dep *appsv1.Deployment, load faqLoad, hpa *autoscalingv2.HorizontalPodAutoscaler, then ...any) (string, error) {
	var before func(context.Context) error
	var args []string
	for _, x := range then {
		switch v := x.(type) {
		case func(context.Context) error:
			before = v
		case string:
			args = append(args, v)
		}
	}
	sel := dep.Spec.Selector.MatchLabels
	shared.Load().Set(cluster.Workload{Namespace: ns, Selector: sel}, cluster.Load{CPUMilli: load.cpuMilli, MemoryBytes: load.memory})
	if _, err := shared.Client().AppsV1().Deployments(ns).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	if _, err := shared.Client().AutoscalingV2().HorizontalPodAutoscalers(ns).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		return "", err
	}
	if n := *dep.Spec.Replicas; n > 0 {
		mc, err := metricsclient.NewForConfig(shared.RESTConfig())
		if err != nil {
			return "", err
		}
		err = faqPoll(ctx, func(ctx context.Context) error {
			list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
			if err != nil {
				return err
			}
			if len(list.Items) != int(n) {
				return fmt.Errorf("%d pods measured, want %d", len(list.Items), n)
			}
			for _, pm := range list.Items {
				if cpu := pm.Containers[0].Usage.Cpu().MilliValue(); cpu < load.perPod-1 || cpu > load.perPod+1 {
					return fmt.Errorf("pod %s at %dm, want %dm", pm.Name, cpu, load.perPod)
				}
			}
			// An earlier sample can show the load already, but explain (as upstream) counts a
			// young pod's CPU only from one taken wholly after its readiness.
			return samplesAfterReadiness(ctx, ns, sel)
		})
		if err != nil {
			return "", fmt.Errorf("waiting for pod metrics: %w", err)
		}
	}
	if before != nil {
		if err := before(ctx); err != nil {
			return "", err
		}
	}
	out, err := plugin().Run(ctx, append([]string{"hpa", "explain", hpa.Name, "-n", ns}, args...)...)
	if out == "" && err != nil {
		return "", err
	}
	return out, nil
}

// faqPoll calls check until it succeeds or ctx ends.
func faqPoll(ctx context.Context, check func(context.Context) error) error {
	for {
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (last: %w)", ctx.Err(), err)
		case <-time.After(pollEvery):
		}
	}
}
