package list

import (
	"errors"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// unlinted is a namespace whose HPA breaks two lint rules: its cpu Utilization target
// divides by requests the Deployment's pod template does not set (HPA006), and a
// PodDisruptionBudget keeps minAvailable 2 of its minReplicas 2 (HPA010).
func unlinted() *cluster {
	c := &cluster{}
	c.app("shop", "api", 2, "250m", hpa("shop", "api", "api", 60, 10, 2, 2, testbuild.Min(2)))
	dep := c.objects[0].(*appsv1.Deployment)
	dep.Spec.Template = corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "api"}}}}
	c.objects = append(c.objects, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: ptr.To(intstr.FromInt32(2)), Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}}}})
	return c
}

func TestLintFindingsAreTheRowsProblems(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{name: "PROBLEMS lists the lint rules' IDs, worst first", args: []string{"-n", "shop"},
			want: []string{"HPA006,HPA010"}},
		{name: "--problems keeps an HPA whose only findings are lint's", args: []string{"-n", "shop", "--problems"},
			want: []string{"api ", "HPA006,HPA010"}},
		{name: "-o wide prints each finding's message", args: []string{"-n", "shop", "-o", "wide"},
			want: []string{
				"shop/api error HPA006: the cpu Utilization target divides by requests, and container app of Deployment/api has no cpu request",
				"shop/api warning HPA010: PodDisruptionBudget api keeps minAvailable 2: at minReplicas 2 that is 2 pods, so no pod may be evicted",
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, unlinted().build(t), tc.args...)
			if r.code != 0 || r.stderr != "" {
				t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("no %q in:\n%s", w, r.stdout)
				}
			}
		})
	}
}

func TestAForbiddenLintListIsANoteNotAFailure(t *testing.T) {
	f := unlinted().build(t)
	f.kube.PrependReactor("list", "poddisruptionbudgets", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(policyv1.Resource("poddisruptionbudgets"), "", errors.New("RBAC"))
	})
	r := run(t, f, "-n", "shop")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if want := `warning: the PodDisruptionBudget objects of namespace "shop" could not be listed, so the rules about them were not checked`; !strings.Contains(r.stderr, want) {
		t.Errorf("stderr %q, want it to hold %q", r.stderr, want)
	}
	if !strings.Contains(r.stdout, "HPA006") || strings.Contains(r.stdout, "HPA010") {
		t.Errorf("want HPA006 and no HPA010 (its PDBs unread):\n%s", r.stdout)
	}
}

func TestAMetricTheClusterDoesNotServeIsHPA017(t *testing.T) {
	c := &cluster{}
	c.app("shop", "worker", 2, "", hpa("shop", "worker", "worker", 60, 10, 2, 2, testbuild.Min(2),
		testbuild.Metrics(testbuild.ExternalAverage("queue_messages_ready", nil, 30000))))
	f := c.build(t)
	// Discovery lists the resource metrics API only: no external metrics adapter.
	f.kube.Resources = []*metav1.APIResourceList{{GroupVersion: "metrics.k8s.io/v1beta1"}}
	r := run(t, f, "-n", "shop", "-o", "wide")
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	if want := "shop/worker error HPA017: the External metric is read from external.metrics.k8s.io, which this cluster does not serve"; !strings.Contains(r.stdout, want) {
		t.Errorf("no %q in:\n%s", want, r.stdout)
	}
}
