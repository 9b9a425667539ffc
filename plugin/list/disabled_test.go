package list

import (
	"regexp"
	"strings"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// TestADisabledDirectionIsHeldByItsFieldNotByTime: an HPA whose behavior disables scaling up
// (selectPolicy: Disabled) is bound by that field: list's row says ScaleUpLimit with nothing
// for time to release (HELD UNTIL <none>, even with the rescale events unread), and its
// verdict names the field, never the legacy scale-up cap.
func TestADisabledDirectionIsHeldByItsFieldNotByTime(t *testing.T) {
	disabled := autoscalingv2.DisabledPolicySelect
	for _, tc := range []struct {
		name         string
		eventsDenied bool
	}{
		{name: "with the rescale events read"},
		{name: "with the rescale events forbidden", eventsDenied: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &cluster{}
			// 90% of a 30% target asks for 6 of 2.
			c.app("s", "web", 2, "450m", hpa("s", "web", "web", 30, 10, 2, 2,
				testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled}})))
			f := c.build(t)
			if tc.eventsDenied {
				f.kube.PrependReactor("list", "events", forbiddenList("events"))
			}
			r := run(t, f, "-n", "s", "web")
			if !regexp.MustCompile(`ScaleUpLimit\s+<none>\s`).MatchString(r.stdout) {
				t.Errorf("want BINDING ScaleUpLimit and HELD UNTIL <none>:\n%s", r.stdout)
			}
			f = c.build(t)
			if tc.eventsDenied {
				f.kube.PrependReactor("list", "events", forbiddenList("events"))
			}
			r = run(t, f, "-n", "s", "web", "-o", "json")
			want := "but scaling up is disabled by behavior.scaleUp.selectPolicy: Disabled"
			if !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "legacy scale-up cap") {
				t.Errorf("list -o json does not say %q (or names the legacy cap):\n%s", want, r.stdout)
			}
		})
	}
}
