//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// pollEvery paces every wait for the cluster to reach a state.
const pollEvery = 250 * time.Millisecond

// namespace creates a fresh namespace for one test and deletes it when the test ends.
func namespace(t *testing.T, prefix string) string {
	t.Helper()
	ns, err := shared.CreateNamespace(context.Background(), prefix)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// No garbage collector or namespace controller runs, so take the workload down by
		// hand: the node stand-in then finishes the pods' deletion.
		ctx, all := context.Background(), metav1.ListOptions{}
		cs := shared.Client()
		_ = cs.AutoscalingV2().HorizontalPodAutoscalers(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
		_ = cs.AppsV1().Deployments(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
		_ = cs.AppsV1().ReplicaSets(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
		_ = cs.CoreV1().Pods(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, all)
	})
	return ns
}

// admin runs kubectl as the cluster administrator; plugin runs it as cluster.PluginUser, so
// that what the plugin does can be told apart in the audit log.
func admin() cluster.Kubectl {
	return shared.Kubectl(shared.AdminKubeconfig(), os.Getenv(pluginDirEnv))
}

func plugin() cluster.Kubectl {
	return shared.Kubectl(shared.PluginKubeconfig(), os.Getenv(pluginDirEnv))
}

// deploymentSpec is a valid-by-default Deployment "web" with one container requesting 100m CPU.
type deploymentSpec struct {
	name       string
	replicas   int32
	cpuRequest string
}

func (d deploymentSpec) build(ns string) *appsv1.Deployment {
	if d.name == "" {
		d.name = "web"
	}
	if d.cpuRequest == "" {
		d.cpuRequest = "100m"
	}
	sel := map[string]string{"app": d.name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: d.name, Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &d.replicas,
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name: "app", Image: "e2e/app:1",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
						corev1.ResourceCPU:    resource.MustParse(d.cpuRequest),
						corev1.ResourceMemory: resource.MustParse("64Mi"),
					}},
				}}},
			},
		},
	}
}

// createDeployment creates d in ns and waits until all its replicas are ready.
func createDeployment(t *testing.T, ns string, d deploymentSpec) *appsv1.Deployment {
	t.Helper()
	dep, err := shared.Client().AppsV1().Deployments(ns).Create(context.Background(), d.build(ns), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitReadyReplicas(t, ns, dep.Name, d.replicas)
	return dep
}

func waitReadyReplicas(t *testing.T, ns, name string, want int32) {
	t.Helper()
	eventually(t, 90*time.Second, fmt.Sprintf("deployment %s/%s has %d ready replicas", ns, name, want), func(ctx context.Context) error {
		dep, err := shared.Client().AppsV1().Deployments(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if dep.Status.ReadyReplicas != want || dep.Status.Replicas != want || dep.Status.UpdatedReplicas != want {
			return fmt.Errorf("status: replicas %d, updated %d, ready %d", dep.Status.Replicas, dep.Status.UpdatedReplicas, dep.Status.ReadyReplicas)
		}
		return nil
	})
}

func podsOf(t *testing.T, ns string, sel map[string]string) []corev1.Pod {
	t.Helper()
	list, err := shared.Client().CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
	if err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// eventually polls check until it returns nil; the bound only keeps a broken cluster from
// hanging the run, it is not what the test asserts.
func eventually(t *testing.T, bound time.Duration, what string, check func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	var last error
	for {
		if last = check(ctx); last == nil {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting until %s: gave up after %s: %v", what, bound, last)
		case <-time.After(pollEvery):
		}
	}
}

// contains fails the test when out lacks any of wants.
func contains(t *testing.T, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("output lacks %q:\n%s", w, out)
		}
	}
}

// startOwnCluster starts a cluster of a test's own, besides the shared one (cfg gives it ports
// of its own), from the same test binaries, and stops it when the test ends.
func startOwnCluster(t *testing.T, name string, cfg cluster.Config) *cluster.Cluster {
	t.Helper()
	cfg.BinDir = os.Getenv(testbinEnv)
	if v := os.Getenv(testbinWaitEnv); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatal(err)
		}
		cfg.BinWait = d
	}
	cfg.Progress = func(f string, a ...any) { t.Logf(name+" cluster: "+f, a...) }
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the %s test's cluster: %v", name, err)
		}
	})
	return c
}

// hpaCondition is hpa's status condition of type typ, nil when it has none.
func hpaCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, typ autoscalingv2.HorizontalPodAutoscalerConditionType) *autoscalingv2.HorizontalPodAutoscalerCondition {
	for i := range hpa.Status.Conditions {
		if hpa.Status.Conditions[i].Type == typ {
			return &hpa.Status.Conditions[i]
		}
	}
	return nil
}
