// Command demo starts the end-to-end cluster with a sample namespace whose load rises and
// falls, runs "kubectl hpa explain" on the same load from metrics-server and from the real
// Heapster, then "kubectl hpa run" in the foreground, and tears everything down on Ctrl-C.
// `make demo` builds and starts it.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

const (
	demoNamespace = "demo"
	demoApp       = "web"
)

// phase is one stretch of the demo's load cycle.
type phase struct {
	cpuMilli int64
	hold     time.Duration
	what     string
}

// cycle rises from a quiet start to a peak that needs several replicas, then falls back so the
// loop scales down once the (shortened) stabilization window has passed; then it repeats.
func cycle() []phase {
	return []phase{
		{150, 40 * time.Second, "quiet: 150m in total"},
		{800, 90 * time.Second, "peak: 800m in total (needs 8 pods at 50% of 200m)"},
		{100, 120 * time.Second, "low: 100m in total"},
	}
}

func main() {
	code, isParent, err := cluster.RunIsolated(cluster.DefaultIP)
	if err == nil && !isParent {
		err = run()
		if err != nil {
			code = 1
		}
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "demo: %v\n", err)
		if code == 0 {
			code = 1
		}
	}
	os.Exit(code)
}

func run() (err error) {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	bin, pluginDir := os.Getenv("KUBECTL_HPA_TESTBIN"), os.Getenv("KUBECTL_HPA_PLUGIN_DIR")
	if bin == "" || pluginDir == "" {
		return errors.New("KUBECTL_HPA_TESTBIN and KUBECTL_HPA_PLUGIN_DIR must be set; run `make demo`")
	}
	say("starting the cluster (etcd, kube-apiserver, kube-controller-manager, metrics-server, Heapster, node and Heapster stand-ins)")
	t0 := time.Now()
	c, err := cluster.Start(ctx, cluster.Config{BinDir: bin, Progress: func(f string, a ...any) { say("  "+f, a...) }})
	if err != nil {
		return err
	}
	defer func() {
		say("tearing down")
		err = errors.Join(err, c.Stop())
	}()
	say("cluster ready in %.1fs", time.Since(t0).Seconds())

	if err := sample(ctx, c); err != nil {
		return err
	}
	wrapper, err := writeKubectlWrapper(c)
	if err != nil {
		return err
	}
	say("kubeconfig: %s (the API server lives in a private network namespace)", c.AdminKubeconfig())
	say("poke at it from another terminal: %s get hpa,deploy,pods -n %s", wrapper, demoNamespace)

	k := c.Kubectl(c.PluginKubeconfig(), pluginDir)
	// Both explanations read the load of the cycle's first phase; the cycle starts after them.
	first := cycle()[0]
	c.Load().Set(cluster.Workload{Namespace: demoNamespace, Selector: map[string]string{"app": demoApp}}, cluster.Load{CPUMilli: first.cpuMilli, MemoryBytes: 128 << 20})
	say("load -> %s", first.what)
	say("waiting for metrics-server's first pod metrics (two scrapes)")
	if err := waitForMetrics(ctx, k); err != nil {
		return err
	}
	if err := explainBothSources(ctx, k); err != nil {
		say("explain failed: %v", err)
	}
	go driveLoad(ctx, c)
	args := []string{"hpa", "run", "-n", demoNamespace, "--downscale-stabilization=30s", "--sync-period=5s"}
	say("$ kubectl %s   (Ctrl-C to stop and tear down)", strings.Join(args, " "))
	cmd := k.Command(context.Background(), args...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kubectl hpa run: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return fmt.Errorf("kubectl hpa run ended: %w", err)
	case <-ctx.Done():
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		return nil
	}
}

// sample creates the demo namespace: a Deployment of 2 pods requesting 200m CPU each and an
// HPA keeping them at 50% with a short scale-down window, so the demo moves within minutes.
func sample(ctx context.Context, c *cluster.Cluster) error {
	if err := c.EnsureNamespace(ctx, demoNamespace); err != nil {
		return err
	}
	replicas := int32(2)
	labels := map[string]string{"app": demoApp}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: demoApp, Namespace: demoNamespace},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "demo/web:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}},
				}}},
			},
		},
	}
	if _, err := c.Client().AppsV1().Deployments(demoNamespace).Create(ctx, dep, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating deployment: %w", err)
	}
	minReplicas, util, window := int32(1), int32(50), int32(30)
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: demoApp, Namespace: demoNamespace},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: demoApp},
			MinReplicas:    &minReplicas,
			MaxReplicas:    10,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: &util},
			}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &window},
			},
		},
	}
	if _, err := c.Client().AutoscalingV2().HorizontalPodAutoscalers(demoNamespace).Create(ctx, hpa, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("creating hpa: %w", err)
	}
	return nil
}

func driveLoad(ctx context.Context, c *cluster.Cluster) {
	w := cluster.Workload{Namespace: demoNamespace, Selector: map[string]string{"app": demoApp}}
	for {
		for _, p := range cycle() {
			c.Load().Set(w, cluster.Load{CPUMilli: p.cpuMilli, MemoryBytes: 128 << 20})
			say("load -> %s for %s", p.what, p.hold)
			select {
			case <-ctx.Done():
				return
			case <-time.After(p.hold):
			}
		}
	}
}

func waitForMetrics(ctx context.Context, k cluster.Kubectl) error {
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	for {
		if _, err := k.Run(ctx, "get", "--raw", "/apis/metrics.k8s.io/v1beta1/namespaces/"+demoNamespace+"/pods"); err == nil {
			if out, err := k.Run(ctx, "top", "pods", "-n", demoNamespace, "--no-headers"); err == nil && out != "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("no pod metrics from metrics-server: %w", ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// writeKubectlWrapper writes DIR/kubectl, which runs kubectl inside the cluster's network
// namespace with the admin kubeconfig.
func writeKubectlWrapper(c *cluster.Cluster) (string, error) {
	pid, err := cluster.HostPID()
	if err != nil {
		return "", err
	}
	path := filepath.Join(c.Dir(), "kubectl")
	script := fmt.Sprintf("#!/bin/sh\nexec nsenter --net=/proc/%d/ns/net kubectl --kubeconfig=%s \"$@\"\n", pid, c.AdminKubeconfig())
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		return "", fmt.Errorf("writing kubectl wrapper: %w", err)
	}
	return path, nil
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "demo: "+format+"\n", args...)
}
