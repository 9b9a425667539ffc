package list

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// listJSON runs list -n s -o json over c and returns its items by name.
func listJSON(t *testing.T, c *cluster, args ...string) map[string]*v1alpha1.Explanation {
	t.Helper()
	r := run(t, c.build(t), append([]string{"-o", "json"}, args...)...)
	if r.code != 0 {
		t.Fatalf("exit %d, stderr %q", r.code, r.stderr)
	}
	var list v1alpha1.List
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil {
		t.Fatalf("%v\n%s", err, r.stdout)
	}
	out := map[string]*v1alpha1.Explanation{}
	for _, item := range list.Items {
		out[item.Metadata.Name] = item
	}
	return out
}

func TestHeldUntilAndTheStatusWritersAreInTheListsJSON(t *testing.T) {
	items := listJSON(t, shop(), "-n", "shop")
	// search rescaled to 4 a minute ago, and the cluster's 5 minute scale-down window holds it
	// there while the metrics ask for 1.
	if got := items["search"].Verdict.HeldUntil; got == nil || !got.Equal(&metav1.Time{Time: now.Add(4 * time.Minute)}) {
		t.Errorf("search: heldUntil %v, want %v", got, now.Add(4*time.Minute))
	}
	for _, name := range []string{"web", "cart", "checkout", "api"} {
		if got := items[name].Verdict.HeldUntil; got != nil {
			t.Errorf("%s: held until %v, but nothing holds it", name, got)
		}
	}
	want := []v1alpha1.StatusWriter{
		{Manager: "hpa-fighter", Time: &metav1.Time{Time: now.Add(-10 * time.Second)}},
		{Manager: "kube-controller-manager", Time: &metav1.Time{Time: now.Add(-20 * time.Second)}},
	}
	if diff := cmp.Diff(want, items["api"].Cluster.StatusWriters); diff != "" {
		t.Errorf("api's status writers (-want +got):\n%s", diff)
	}
	r := run(t, shop().build(t), "-n", "shop", "search")
	if !strings.Contains(r.stdout, "ScaleDownStabilization   in 4m ") {
		t.Errorf("the table does not say search is held for 4m:\n%s", r.stdout)
	}
}

func TestTheHeldDecisionOfAnHPAWithoutItsRescaleEventsIsUnknown(t *testing.T) {
	f := shop().build(t)
	f.kube.PrependReactor("list", "events", forbiddenList("events"))
	r := run(t, f, "-n", "shop", "search")
	if !strings.Contains(r.stdout, "ScaleDownStabilization   <unknown>") {
		t.Errorf("HELD UNTIL is not <unknown> without the rescale events:\n%s", r.stdout)
	}
}

func TestControllerIsTheLatestStatusWriter(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		hpa        string
		want, lack string
	}{
		{name: "the latest writer and how many others", args: []string{"-n", "shop", "api"}, want: "hpa-fighter 10s ago +1 "},
		{name: "-o wide names every writer", args: []string{"-n", "shop", "api", "-o", "wide"}, want: "hpa-fighter 10s ago, kube-controller-manager 20s ago "},
		{name: "one writer", args: []string{"-n", "shop", "web"}, want: "kube-controller-manager 2m ago ", lack: "+"},
		{name: "no status write recorded", args: []string{"-n", "shop", "cart"}, want: "reconstructed   <none> "},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := run(t, shop().build(t), tc.args...)
			if !strings.Contains(r.stdout, tc.want) || tc.lack != "" && strings.Contains(r.stdout, tc.lack) {
				t.Errorf("want %q (without %q) in:\n%s", tc.want, tc.lack, r.stdout)
			}
		})
	}
}

func TestADisagreementSaysItsCause(t *testing.T) {
	kcm := func(ago time.Duration) testbuild.HPAOption {
		return testbuild.StatusManager("kube-controller-manager", now.Add(-ago))
	}
	tests := []struct {
		name string
		// hpa is web's HPA in namespace s, over 4 pods using 100m of 500m each (20 %).
		hpa        *autoscalingv2.HorizontalPodAutoscaler
		wantCauses []string
		// wantLine is in -o wide's line of the finding.
		wantLine string
	}{
		{name: "a spec the controller has not seen yet: that alone",
			hpa:        hpa("s", "web", "web", 20, 10, 4, 6, testbuild.Generation(2), kcm(time.Hour)),
			wantCauses: []string{output.CauseGenerationNotObserved},
			wantLine:   "warning DisagreesWithCluster: the cluster's controller last decided 6, this decision is 4: the cluster controller has not yet seen generation 2 of this HPA (it last saw 1)"},
		{name: "two status writers fight: an error",
			hpa:        hpa("s", "web", "web", 20, 10, 4, 6, kcm(20*time.Second), testbuild.StatusManager("argocd", now.Add(-5*time.Second))),
			wantCauses: []string{output.CauseAnotherWriter},
			wantLine:   "error DisagreesWithCluster: the cluster's controller last decided 6, this decision is 4: argocd (5s ago) and kube-controller-manager (20s ago) write its status"},
		{name: "status written before the samples were taken",
			hpa:        hpa("s", "web", "web", 20, 10, 4, 6, kcm(5*time.Minute)),
			wantCauses: []string{output.CauseStaleMetrics},
			wantLine:   "it has not written status since the metrics decided from were taken (its last write 5m ago, the newest sample 30s ago)"},
		{name: "the last rescale's time counts as a status write",
			hpa:        hpa("s", "web", "web", 20, 10, 4, 6, testbuild.LastScaleTime(now.Add(-10*time.Minute))),
			wantCauses: []string{output.CauseStaleMetrics},
			wantLine:   "its last write 10m ago"},
		{name: "a count the controller's own window could hold, on the way down",
			// 20 % of a 40 % target asks for 2 from 4; the controller wrote 3 after the samples.
			hpa:        hpa("s", "web", "web", 40, 10, 4, 3, kcm(5*time.Second), testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)}})),
			wantCauses: []string{output.CauseInMemoryHistory},
			wantLine:   "the controller's memory is inferred from the cluster's evidence, which leaves open the recommendations it made between rescales, which nothing in the cluster keeps: those could keep it at 3"},
		{name: "past what the metrics ask for: no history explains it",
			hpa:        hpa("s", "web", "web", 40, 10, 4, 1, kcm(5*time.Second), testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](0)}})),
			wantCauses: []string{output.CauseUnknown},
			wantLine:   "this decision is 2: cause unknown"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{}
			c.app("s", "web", 4, "100m", tc.hpa)
			items := listJSON(t, c, "-n", "s")
			if diff := cmp.Diff(tc.wantCauses, items["web"].Cluster.Causes); diff != "" {
				t.Errorf("causes (-want +got):\n%s", diff)
			}
			r := run(t, c.build(t), "-n", "s", "-o", "wide")
			if !strings.Contains(r.stdout, tc.wantLine) {
				t.Errorf("the finding's line lacks %q:\n%s", tc.wantLine, r.stdout)
			}
		})
	}
}
