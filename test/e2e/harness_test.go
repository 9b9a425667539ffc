//go:build e2e

package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	metricsclient "k8s.io/metrics/pkg/client/clientset/versioned"

	"github.com/kubectl-hpa/kubectl-hpa/test/e2e/cluster"
)

// Tests of the harness itself: what the plugin's tests rely on must hold first.

func TestDeploymentPodsAreScheduledAndBecomeReady(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "harness-ready")
	createDeployment(t, ns, deploymentSpec{replicas: 3})
	for _, p := range podsOf(t, ns, map[string]string{"app": "web"}) {
		if p.Spec.NodeName == "" || p.Status.PodIP == "" || p.Status.StartTime == nil {
			t.Errorf("pod %s: node %q, IP %q, start %v; want all set by the node stand-in", p.Name, p.Spec.NodeName, p.Status.PodIP, p.Status.StartTime)
		}
	}
}

func TestMetricsServerReportsTheLoadSplitAcrossReadyPods(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "harness-metrics")
	createDeployment(t, ns, deploymentSpec{replicas: 2})
	sel := map[string]string{"app": "web"}
	shared.Load().Set(cluster.Workload{Namespace: ns, Selector: sel}, cluster.Load{CPUMilli: 400, MemoryBytes: 256 << 20})
	waitPodCPU(t, ns, sel, 2, 200)

	// Twice the pods, half the usage each: what lets an autoscaler converge.
	scale, err := shared.Client().AppsV1().Deployments(ns).GetScale(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 4
	if _, err := shared.Client().AppsV1().Deployments(ns).UpdateScale(context.Background(), "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitReadyReplicas(t, ns, "web", 4)
	waitPodCPU(t, ns, sel, 4, 100)

	out, err := admin().Run(context.Background(), "top", "pods", "-n", ns, "--no-headers")
	if err != nil {
		t.Fatal(err)
	}
	// kubectl top rounds metrics-server's nanocores up to the next millicore.
	lines := strings.Split(strings.TrimSpace(out), "\n")
	for _, l := range lines {
		f := strings.Fields(l)
		milli, err := strconv.Atoi(strings.TrimSuffix(f[min(1, len(f)-1)], "m"))
		if len(f) != 3 || err != nil || milli < 99 || milli > 102 || f[2] != "64Mi" {
			t.Errorf("kubectl top line %q, want a pod at 100m (±2m of rounding) and 64Mi", l)
		}
	}
	if len(lines) != 4 {
		t.Errorf("kubectl top shows %d pods, want 4:\n%s", len(lines), out)
	}
}

// waitPodCPU waits until metrics.k8s.io reports n pods each using wantMilli (±1m: metrics-server
// divides counter deltas by timestamp deltas and rounds to nanocores).
func waitPodCPU(t *testing.T, ns string, sel map[string]string, n int, wantMilli int64) {
	t.Helper()
	mc, err := metricsclient.NewForConfig(shared.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 90*time.Second, fmt.Sprintf("metrics.k8s.io reports %d pods at %dm", n, wantMilli), func(ctx context.Context) error {
		list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: labels.SelectorFromSet(sel).String()})
		if err != nil {
			return err
		}
		var got []string
		ok := len(list.Items) == n
		for _, pm := range list.Items {
			cpu := pm.Containers[0].Usage.Cpu().MilliValue()
			got = append(got, fmt.Sprintf("%s=%dm", pm.Name, cpu))
			if cpu < wantMilli-1 || cpu > wantMilli+1 {
				ok = false
			}
		}
		if !ok {
			return fmt.Errorf("pod metrics: %v", got)
		}
		return nil
	})
}

func TestHeapsterStandInAnswersThroughTheServiceProxy(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "harness-heapster")
	createDeployment(t, ns, deploymentSpec{replicas: 1})
	sel := map[string]string{"app": "web"}
	shared.Load().Set(cluster.Workload{Namespace: ns, Selector: sel}, cluster.Load{CPUMilli: 250, MemoryBytes: 100 << 20})
	pod := podsOf(t, ns, sel)[0].Name

	path := fmt.Sprintf("/api/v1/namespaces/kube-system/services/http:%s:/proxy/apis/metrics/v1alpha1/namespaces/%s/pods?labelSelector=app%%3Dweb", cluster.HeapsterStandInService, ns)
	eventually(t, 30*time.Second, "heapster reports the pod's load", func(ctx context.Context) error {
		out, err := admin().Run(ctx, "get", "--raw", path)
		if err != nil {
			return err
		}
		var list struct {
			Items []struct {
				Metadata   metav1.ObjectMeta `json:"metadata"`
				Containers []struct {
					Usage corev1.ResourceList `json:"usage"`
				} `json:"containers"`
			} `json:"items"`
		}
		if err := json.Unmarshal([]byte(out), &list); err != nil {
			return fmt.Errorf("decoding %q: %w", out, err)
		}
		if len(list.Items) != 1 || list.Items[0].Metadata.Name != pod {
			return fmt.Errorf("want pod %s only, got %s", pod, out)
		}
		if cpu := list.Items[0].Containers[0].Usage[corev1.ResourceCPU]; cpu.Cmp(resource.MustParse("250m")) != 0 {
			return fmt.Errorf("cpu %s, want 250m", cpu.String())
		}
		return nil
	})
}

func TestKubectlDiscoversThePlugin(t *testing.T) {
	t.Parallel()
	out, err := plugin().Run(context.Background(), "hpa", "version")
	if err != nil {
		t.Fatal(err)
	}
	contains(t, out, "kubectl-hpa", "Kubernetes v1.37.2")
	list, err := plugin().Run(context.Background(), "plugin", "list")
	if err != nil {
		t.Fatal(err)
	}
	contains(t, list, filepath.Join(os.Getenv(pluginDirEnv), "kubectl-hpa"))
}

func TestAuditLogAttributesRequestsToThePluginUser(t *testing.T) {
	t.Parallel()
	ns := namespace(t, "harness-audit")
	mark, err := shared.AuditMark()
	if err != nil {
		t.Fatal(err)
	}
	k := plugin()
	if _, err := k.Run(context.Background(), "create", "configmap", "audit-probe", "-n", ns); err != nil {
		t.Fatal(err)
	}
	if _, err := k.Run(context.Background(), "get", "configmap", "audit-probe", "-n", ns); err != nil {
		t.Fatal(err)
	}
	reqs, err := shared.AuditSince(mark, cluster.AuditFilter{User: cluster.PluginUser})
	if err != nil {
		t.Fatal(err)
	}
	var writes []string
	reads := 0
	for _, r := range reqs {
		if r.IsWrite() {
			writes = append(writes, r.Verb+" "+r.Resource+" "+r.Namespace)
		} else {
			reads++
		}
	}
	if diff := cmp.Diff([]string{"create configmaps " + ns}, writes); diff != "" {
		t.Errorf("writes by %s (-want +got):\n%s\nall requests:\n%s", cluster.PluginUser, diff, cluster.SummarizeAudit(reqs))
	}
	if reads == 0 {
		t.Errorf("no reads by %s recorded; all requests:\n%s", cluster.PluginUser, cluster.SummarizeAudit(reqs))
	}
}

func TestStartNamesTheComponentWhosePortIsTaken(t *testing.T) {
	t.Parallel()
	// The shared cluster's etcd holds the default port.
	_, err := cluster.Start(context.Background(), cluster.Config{BinDir: os.Getenv(testbinEnv), Dir: t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "etcd: port 127.0.0.1:2379 is already in use") {
		t.Fatalf("Start with a taken etcd port: error %v, want one naming etcd and the port", err)
	}
}

func TestStartQuotesTheLogOfAComponentThatExits(t *testing.T) {
	t.Parallel()
	bin := t.TempDir()
	for _, name := range []string{"kube-apiserver", "kube-controller-manager", "metrics-server"} {
		if err := os.Symlink(filepath.Join(os.Getenv(testbinEnv), name), filepath.Join(bin, name)); err != nil {
			t.Fatal(err)
		}
	}
	script := "#!/bin/sh\necho 'simulated etcd failure: disk on fire' >&2\nexit 3\n"
	if err := os.WriteFile(filepath.Join(bin, "etcd"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	_, err := cluster.Start(context.Background(), cluster.Config{BinDir: bin, Dir: t.TempDir(), EtcdPort: 12379})
	if err == nil {
		t.Fatal("Start with an etcd that exits: no error")
	}
	contains(t, err.Error(), "etcd exited during start", "simulated etcd failure: disk on fire")
}

// TestAPIServerRestartKeepsTheClusterWorking is not parallel: every other test would see the
// API server go away.
func TestAPIServerRestartKeepsTheClusterWorking(t *testing.T) {
	if err := shared.RestartAPIServer(context.Background()); err != nil {
		t.Fatal(err)
	}
	ns := namespace(t, "harness-restart")
	// Pods becoming ready proves the controller manager and the node stand-in reconnected.
	createDeployment(t, ns, deploymentSpec{replicas: 2})
}
