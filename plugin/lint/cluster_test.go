package lint

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	fakediscovery "k8s.io/client-go/discovery/fake"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/cmdtest"
	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
)

// fakeCluster is a cluster of client-go's fakes: the kube objects, the custom resources the
// dynamic client serves, and the group/versions discovery lists.
type fakeCluster struct {
	kube    *kubefake.Clientset
	dynamic *dynamicfake.FakeDynamicClient
	served  []string
}

// shopCluster is namespace shop: HPA web's cpu Utilization target on a Deployment without cpu
// requests (HPA006), a PDB that keeps all of its minReplicas (HPA010) and a VPA on its cpu
// (HPA008); HPA worker's External metric, which the cluster does not serve (HPA017); and HPA
// api in namespace ops, with nothing to report.
func shopCluster(servedVPA bool) *fakeCluster {
	deployment := func(ns, name, cpu string) *appsv1.Deployment {
		c := corev1.Container{Name: "app", Image: name}
		if cpu != "" {
			c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
		}
		return &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}}, Spec: corev1.PodSpec{Containers: []corev1.Container{c}}}}}
	}
	target := func(name string) testbuild.HPAOption { return testbuild.Target("apps/v1", "Deployment", name) }
	objs := []runtime.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "shop"}}, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ops"}},
		testbuild.HPA("shop", "web", target("web"), testbuild.Min(2), testbuild.Max(10), testbuild.Metrics(testbuild.CPUUtilization(60))),
		deployment("shop", "web", ""),
		&policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop"},
			Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}}},
		testbuild.HPA("shop", "worker", target("worker"), testbuild.Min(2), testbuild.Max(10), testbuild.Metrics(testbuild.ExternalAverage("queue_messages_ready", nil, 30000))),
		deployment("shop", "worker", "100m"),
		testbuild.HPA("ops", "api", target("api"), testbuild.Min(2), testbuild.Max(10), testbuild.Metrics(testbuild.CPUUtilization(60))),
		deployment("ops", "api", "200m"),
	}
	vpa := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "autoscaling.k8s.io/v1", "kind": "VerticalPodAutoscaler",
		"metadata": map[string]any{"name": "web", "namespace": "shop"},
		"spec": map[string]any{
			"targetRef":    map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
			"updatePolicy": map[string]any{"updateMode": "Auto"},
		},
	}}
	c := &fakeCluster{kube: kubefake.NewClientset(objs...), served: []string{"metrics.k8s.io/v1beta1", "custom.metrics.k8s.io/v1beta2"},
		dynamic: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{
			cmdutil.VPAResource: "VerticalPodAutoscalerList", cmdutil.ScaledObjectResource: "ScaledObjectList"}, vpa)}
	if servedVPA {
		c.served = append(c.served, "autoscaling.k8s.io/v1")
	}
	return c
}

func (c *fakeCluster) clients() *cmdutil.Clients {
	disc := c.kube.Discovery().(*fakediscovery.FakeDiscovery)
	for _, gv := range c.served {
		disc.Resources = append(disc.Resources, &metav1.APIResourceList{GroupVersion: gv})
	}
	return &cmdutil.Clients{Kube: c.kube, Dynamic: c.dynamic, Discovery: disc}
}

// requests are the API requests sent, by namespace, discovery aside (cached in real use).
func (c *fakeCluster) requests() map[string][]string {
	out := map[string][]string{}
	for _, a := range append(c.kube.Actions(), c.dynamic.Actions()...) {
		if r := a.GetResource().Resource; r == "group" || r == "resource" || r == "version" {
			continue
		}
		out[a.GetNamespace()] = append(out[a.GetNamespace()], a.GetVerb()+" "+a.GetResource().GroupResource().String())
	}
	for ns := range out {
		slices.Sort(out[ns])
	}
	return out
}

type clusterResult struct {
	code           int
	stdout, stderr string
}

// runCluster executes "kubectl hpa lint" with args over c, the way Execute does.
func runCluster(t *testing.T, c *fakeCluster, args ...string) clusterResult {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewOptions(configFlags, streams)
	o.newClients = func() (*cmdutil.Clients, error) { return c.clients(), nil }
	root.AddCommand(newCmd(o))
	root.SetArgs(append([]string{"lint", "--kubeconfig", cmdtest.Kubeconfig(t)}, args...))
	root.SetOut(&out)
	root.SetErr(&errOut)
	code := cmdutil.Report(&errOut, root.ExecuteContext(context.Background()))
	return clusterResult{code: code, stdout: out.String(), stderr: errOut.String()}
}

func TestClusterMode(t *testing.T) {
	tests := []struct {
		name      string
		servedVPA bool
		setup     func(*fakeCluster)
		args      []string
		golden    string
		code      int
	}{
		{name: "-n lints the namespace's HPAs with what lies beside them, HPA017 from discovery", servedVPA: true,
			args: []string{"-n", "shop"}, golden: "cluster-shop", code: cmdutil.ExitLintFindings},
		{name: "-A lints every namespace, --fail-on none exits 0", servedVPA: true,
			args: []string{"-A", "--fail-on", "none"}, golden: "cluster-all"},
		{name: "a cluster without the VPA CRD has no VPA to report", args: []string{"-n", "shop", "-o", "json"},
			golden: "cluster-shop-novpa", code: cmdutil.ExitLintFindings},
		{name: "NAME lints only that HPA", servedVPA: true, args: []string{"-n", "shop", "worker"},
			golden: "cluster-worker", code: cmdutil.ExitLintFindings},
		{name: "NAME is checked against the namespace's other HPAs, whose own findings are not reported", servedVPA: true,
			setup: func(c *fakeCluster) {
				// web-2 scales web as well (HPA011); it has findings of its own (HPA006, HPA010) too.
				web2 := testbuild.HPA("shop", "web-2", testbuild.Target("apps/v1", "Deployment", "web"), testbuild.Min(2), testbuild.Max(10), testbuild.Metrics(testbuild.CPUUtilization(60)))
				if err := c.kube.Tracker().Add(web2); err != nil {
					t.Fatal(err)
				}
			},
			args: []string{"-n", "shop", "web"}, golden: "cluster-web-overlap", code: cmdutil.ExitLintFindings},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := shopCluster(tc.servedVPA)
			if tc.setup != nil {
				tc.setup(c)
			}
			r := runCluster(t, c, tc.args...)
			if r.code != tc.code {
				t.Fatalf("exit %d, want %d; stderr %q", r.code, tc.code, r.stderr)
			}
			cmdtest.CheckGolden(t, tc.golden, r.stdout)
		})
	}
}

func TestClusterModeRequests(t *testing.T) {
	tests := []struct {
		name      string
		servedVPA bool
		args      []string
		want      map[string][]string
	}{
		{name: "the HPAs once, then per namespace its targeted kinds, its PDBs and its VPAs where served", servedVPA: true, args: []string{"-A"},
			want: map[string][]string{
				"":     {"list horizontalpodautoscalers.autoscaling"},
				"ops":  {"list deployments.apps", "list poddisruptionbudgets.policy", "list verticalpodautoscalers.autoscaling.k8s.io"},
				"shop": {"list deployments.apps", "list poddisruptionbudgets.policy", "list verticalpodautoscalers.autoscaling.k8s.io"},
			}},
		{name: "no VPA list where the cluster does not serve them", args: []string{"-n", "shop"},
			want: map[string][]string{"shop": {"list deployments.apps", "list horizontalpodautoscalers.autoscaling", "list poddisruptionbudgets.policy"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := shopCluster(tc.servedVPA)
			if r := runCluster(t, c, append(tc.args, "--fail-on", "none")...); r.code != 0 {
				t.Fatalf("exit %d: %s", r.code, r.stderr)
			}
			if diff := cmp.Diff(tc.want, c.requests()); diff != "" {
				t.Errorf("requests (-want +got):\n%s", diff)
			}
		})
	}
}

func TestClusterModeFailures(t *testing.T) {
	forbidPDBs := func(c *fakeCluster) {
		c.kube.PrependReactor("list", "poddisruptionbudgets", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewForbidden(policyv1.Resource("poddisruptionbudgets"), "", errors.New("RBAC"))
		})
	}
	tests := []struct {
		name   string
		setup  func(*fakeCluster)
		args   []string
		code   int
		stderr string
		stdout string
		// absent is a rule the command must not report.
		absent string
	}{
		{name: "-f with -n is a usage error", args: []string{"-f", "x.yaml", "-n", "shop"}, code: cmdutil.ExitUsage,
			stderr: "-f lints manifests, NAME, -n and -A the HPAs of a cluster: give one or the other"},
		{name: "-f with -A is a usage error", args: []string{"-f", "x.yaml", "-A"}, code: cmdutil.ExitUsage,
			stderr: "-f lints manifests, NAME, -n and -A the HPAs of a cluster: give one or the other"},
		{name: "-f with a NAME is a usage error", args: []string{"-f", "x.yaml", "web"}, code: cmdutil.ExitUsage,
			stderr: "give one or the other"},
		{name: "a forbidden PDB list is a warning, and HPA010 is not checked", setup: forbidPDBs, args: []string{"-n", "shop", "--fail-on", "none"},
			stderr: `warning: the PodDisruptionBudget objects of namespace "shop" could not be listed, so the rules about them were not checked`, stdout: "HPA006", absent: "HPA010"},
		{name: "a named HPA that does not exist", args: []string{"-n", "shop", "nope"}, code: cmdutil.ExitHPANotFound,
			stderr: `no horizontalpodautoscaler named nope in namespace "shop"`},
		{name: "a namespace that does not exist", args: []string{"-n", "nowhere"}, code: cmdutil.ExitWrongNamespace,
			stderr: "nowhere"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := shopCluster(false)
			if tc.setup != nil {
				tc.setup(c)
			}
			r := runCluster(t, c, tc.args...)
			if r.code != tc.code || !strings.Contains(r.stderr, tc.stderr) || !strings.Contains(r.stdout, tc.stdout) {
				t.Errorf("exit %d, want %d; stderr %q, want it to hold %q; stdout:\n%s", r.code, tc.code, r.stderr, tc.stderr, r.stdout)
			}
			if tc.absent != "" && strings.Contains(r.stdout, tc.absent) {
				t.Errorf("%s reported without its objects read:\n%s", tc.absent, r.stdout)
			}
		})
	}
}
