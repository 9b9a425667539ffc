package replicas

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
)

// rules is upstream's generateScalingRules (horizontal_test.go:5759): a zero value leaves the
// policy out.
func rules(pods, podsPeriod, percent, percentPeriod, window int32) *autoscalingv2.HPAScalingRules {
	maxPolicy := autoscalingv2.MaxChangePolicySelect
	r := &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(window), SelectPolicy: &maxPolicy}
	if pods != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: pods, PeriodSeconds: podsPeriod})
	}
	if percent != 0 {
		r.Policies = append(r.Policies, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: percent, PeriodSeconds: percentPeriod})
	}
	return r
}

// uniformEvents is upstream's generateEventsUniformDistribution: the events sit in the middle
// of equal segments of the last period.
func uniformEvents(changes []int32, periodSeconds int) []ScaleEvent {
	out := make([]ScaleEvent, len(changes))
	segment := float64(periodSeconds) / float64(len(changes))
	for i, c := range changes {
		boundary := time.Duration(float64(periodSeconds) - segment*float64(i+1) + segment/2)
		out[i] = ScaleEvent{ReplicaChange: c, Timestamp: testNow.Add(-time.Second * boundary)}
	}
	return out
}

// effective is the two directions of behavior as the decision reads them.
func effective(up, down *autoscalingv2.HPAScalingRules) (scalingRules, scalingRules) {
	return effectiveRules(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: up, ScaleDown: down}, testConfig())
}

// TestEffectiveRulesReadWhatEffectiveBehaviorFillsIn: the decision's reading of a behavior
// (without copying it) and EffectiveBehavior's (which explain and lint show) agree on every
// field of both directions.
func TestEffectiveRulesReadWhatEffectiveBehaviorFillsIn(t *testing.T) {
	minPolicy, disabled := autoscalingv2.MinChangePolicySelect, autoscalingv2.DisabledPolicySelect
	for _, tc := range []struct {
		name     string
		up, down *autoscalingv2.HPAScalingRules
	}{
		{name: "both directions unset"},
		{name: "windows and policies set", up: rules(4, 60, 50, 30, 120), down: rules(1, 15, 10, 60, 600)},
		{name: "select policies set, the rest unset", up: &autoscalingv2.HPAScalingRules{SelectPolicy: &minPolicy}, down: &autoscalingv2.HPAScalingRules{SelectPolicy: &disabled}},
		{name: "empty policy lists stay empty", up: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}}, down: &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{}}},
		{name: "a zero window is kept, not defaulted", down: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(0))}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := EffectiveBehavior(hpa(testbuild.Behavior(&autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: tc.up, ScaleDown: tc.down})), testConfig())
			up, down := effective(tc.up, tc.down)
			for _, dir := range []struct {
				name string
				r    scalingRules
				want *autoscalingv2.HPAScalingRules
				up   bool
			}{{"scaleUp", up, b.ScaleUp, true}, {"scaleDown", down, b.ScaleDown, false}} {
				policies := dir.r.policies
				if policies == nil {
					defaults, n := defaultPolicies(dir.up)
					policies = defaults[:n]
				}
				if dir.r.window != *dir.want.StabilizationWindowSeconds || dir.r.selectPolicy != *dir.want.SelectPolicy || !cmp.Equal(policies, dir.want.Policies) {
					t.Errorf("%s: window %d, select %s, policies %v; EffectiveBehavior has %d, %s, %v", dir.name, dir.r.window, dir.r.selectPolicy, policies,
						*dir.want.StabilizationWindowSeconds, *dir.want.SelectPolicy, dir.want.Policies)
				}
			}
		})
	}
}

func TestLegacyRulesLimitMatchesUpstream(t *testing.T) {
	cases := []struct {
		name                         string
		current, desired, minR, maxR int32
		want                         int32
		wantReason                   string
	}{
		// horizontal_test.go:5646 TestConvertDesiredReplicasWithRules (legacy factor 8)
		{"within range", 5, 7, 3, 8, 7, "DesiredWithinRange"},
		{"below min", 3, 1, 2, 8, 2, "TooFewReplicas"},
		{"min zero allows zero", 1, 0, 0, 10, 0, "DesiredWithinRange"},
		{"max below the scale-up limit", 20, 1000, 1, 10, 10, "TooManyReplicas"},
		{"scale-up limit below max", 3, 1000, 1, 2000, 24, "ScaleUpLimit"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig()
			upLimit := int32(max(cfg.LegacyScaleUpFactor*float64(tc.current), cfg.LegacyScaleUpMinimum))
			got, reason, _ := rulesLimit(tc.desired, tc.minR, tc.maxR, upLimit)
			if got != tc.want || reason != tc.wantReason {
				t.Errorf("got %d %s, want %d %s", got, reason, tc.want, tc.wantReason)
			}
		})
	}
}

func TestPolicyLimitSelectMinMatchesUpstream(t *testing.T) {
	r := &scalingRules{selectPolicy: autoscalingv2.MinChangePolicySelect, policies: []autoscalingv2.HPAScalingPolicy{
		{Type: autoscalingv2.PodsScalingPolicy, Value: 2, PeriodSeconds: 60},
		{Type: autoscalingv2.PercentScalingPolicy, Value: 50, PeriodSeconds: 60},
	}}
	// horizontal_test.go:5715 TestCalculateScaleUpLimitWithScalingRules: min(1+2, ceil(1.5)) = 2
	if got := policyLimit(&Limit{}, "scaleUp", r, 1, History{}, testNow, true); got != 2 {
		t.Errorf("scale-up limit = %d, want 2", got)
	}
	// horizontal_test.go:5737 TestCalculateScaleDownLimitWithBehaviors: max(5-2, trunc(2.5)) = 3
	if got := policyLimit(&Limit{}, "scaleDown", r, 5, History{}, testNow, false); got != 3 {
		t.Errorf("scale-down limit = %d, want 3", got)
	}
}

func TestLegacyStabilizationMatchesUpstream(t *testing.T) {
	cases := []struct {
		name    string
		recs    []Recommendation
		desired int32
		want    int32
		wantLen int
	}{
		// horizontal_test.go:5807 TestNormalizeDesiredReplicas
		{"empty log", []Recommendation{}, 5, 5, 1},
		{"stabilize", recsAgo(4, 2*time.Minute, 5, time.Minute), 3, 5, 3},
		{"no stabilization", recsAgo(1, 2*time.Minute, 2, time.Minute), 3, 3, 3},
		{"reuse one old slot", recsAgo(10, 10*time.Minute, 9, 9*time.Minute), 3, 3, 2},
		{"stabilize and reuse one old slot", recsAgo(10, 10*time.Minute, 4, time.Minute, 5, 2*time.Minute, 9, 9*time.Minute), 3, 5, 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := input(hpa(testbuild.Max(1000)), 100)
			d := decision{Decision: Decision{MinReplicas: 1, MaxReplicas: 1000, History: ownRecommendations(History{Recommendations: tc.recs})}}
			normalizeLegacy(&d, in, 100, tc.desired)
			if d.Stabilization.Result != tc.want {
				t.Errorf("stabilized = %d, want %d", d.Stabilization.Result, tc.want)
			}
			if len(d.History.Recommendations) != tc.wantLen {
				t.Errorf("history length = %d, want %d", len(d.History.Recommendations), tc.wantLen)
			}
		})
	}
}

func TestBehaviorRateLimitMatchesUpstream(t *testing.T) {
	u3 := uniformEvents([]int32{1, 5, 9}, 120)
	u4 := uniformEvents([]int32{8, 12, 9, 11}, 120)
	cases := []struct {
		name                         string
		up, down                     *autoscalingv2.HPAScalingRules
		upEvents, downEvents         []ScaleEvent
		minR, maxR, current, desired int32
		want                         int32
		wantReason                   string
	}{
		// horizontal_test.go:5888 TestScalingWithRules, in order (:5916 ... :6322)
		{name: "prenormalized desired replicas within range", minR: 3, maxR: 8, current: 5, desired: 7, want: 7, wantReason: "DesiredWithinRange"},
		{name: "prenormalized desired replicas < minReplicas", minR: 2, maxR: 8, current: 3, desired: 1, want: 2, wantReason: "TooFewReplicas"},
		{name: "prenormalized desired replicas within range when minReplicas is 0", minR: 0, maxR: 10, current: 1, desired: 0, want: 0, wantReason: "DesiredWithinRange"},
		{name: "maxReplicas is the limit because maxReplicas < scaleUpLimit", minR: 1, maxR: 10, current: 20, desired: 1000, want: 10, wantReason: "TooManyReplicas"},
		{name: "desired replica count is more than the maximum replica count", minR: 100, maxR: 150, current: 100, desired: 1000, want: 150, wantReason: "TooManyReplicas"},
		{name: "scaleUpLimit is the limit because scaleUpLimit < maxReplicas with user policies", up: rules(0, 0, 1, 60, 0), minR: 1, maxR: 2000, current: 3, desired: 1000, want: 4, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with default behavior", minR: 1, maxR: 1000, current: 10, desired: 50, want: 20, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with pods policy larger than percent policy", up: rules(100, 60, 100, 60, 0), minR: 1, maxR: 1000, current: 10, desired: 500, want: 110, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with percent policy larger than pods policy", up: rules(2, 60, 100, 60, 0), minR: 1, maxR: 1000, current: 10, desired: 500, want: 20, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy", up: rules(100, 60, 0, 0, 0), minR: 1, maxR: 1000, current: 10, desired: 50, want: 50, wantReason: "DesiredWithinRange"},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy", up: rules(10000, 60, 0, 0, 0), minR: 1, maxR: 1000, current: 10, desired: 50, want: 50, wantReason: "DesiredWithinRange"},
		{name: "scaleUp with pod policy limitation", up: rules(30, 60, 0, 0, 0), minR: 1, maxR: 1000, current: 10, desired: 50, want: 40, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with percent policy limitation", up: rules(0, 0, 200, 60, 0), minR: 1, maxR: 1000, current: 10, desired: 50, want: 30, wantReason: "ScaleUpLimit"},
		{name: "scaleDown with percent policy larger than pod policy", down: rules(20, 60, 1, 60, 300), minR: 1, maxR: 1000, current: 100, desired: 2, want: 80, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with pod policy larger than percent policy", down: rules(2, 60, 1, 60, 300), minR: 1, maxR: 1000, current: 100, desired: 2, want: 98, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy", down: rules(100, 60, 0, 0, 300), minR: 1, maxR: 1000, current: 10, desired: 0, want: 1, wantReason: "TooFewReplicas"},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy", down: rules(0, 0, 100, 60, 300), minR: 5, maxR: 1000, current: 10, desired: 2, want: 5, wantReason: "TooFewReplicas"},
		{name: "scaleDown with pod policy limitation", down: rules(5, 60, 0, 0, 300), minR: 1, maxR: 1000, current: 10, desired: 2, want: 5, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with percent policy limitation", down: rules(0, 0, 50, 60, 300), minR: 1, maxR: 1000, current: 10, desired: 5, want: 5, wantReason: "DesiredWithinRange"},
		{name: "scaleUp with spec MaxReplicas limitation with large pod policy and events", up: rules(300, 60, 0, 0, 0), upEvents: u3, minR: 1, maxR: 200, current: 100, desired: 500, want: 200, wantReason: "TooManyReplicas"},
		{name: "scaleUp with spec MaxReplicas limitation with large percent policy and events", up: rules(0, 0, 10000, 60, 0), upEvents: u3, minR: 1, maxR: 200, current: 100, desired: 500, want: 200, wantReason: "TooManyReplicas"},
		{name: "scaleUp with currentReplicas limitation with rate.PeriodSeconds with a lot of recent scale up events", up: rules(5, 120, 0, 0, 0), upEvents: u3, minR: 1, maxR: 1000, current: 100, desired: 500, want: 100, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with pod policy and previous scale up events", up: rules(150, 120, 0, 0, 0), upEvents: u3, minR: 1, maxR: 1000, current: 100, desired: 500, want: 235, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with percent policy and previous scale up events", up: rules(0, 0, 200, 120, 0), upEvents: u3, minR: 1, maxR: 1000, current: 100, desired: 500, want: 255, wantReason: "ScaleUpLimit"},
		{name: "scaleUp with percent policy and previous scale up and down events", up: rules(0, 0, 300, 300, 0), upEvents: uniformEvents([]int32{4}, 120), downEvents: uniformEvents([]int32{2}, 120), minR: 1, maxR: 1000, current: 6, desired: 24, want: 16, wantReason: "ScaleUpLimit"},
		{name: "scaleDown with default policy and previous events", downEvents: u3, minR: 1, maxR: 1000, current: 10, desired: 5, want: 5, wantReason: "DesiredWithinRange"},
		{name: "scaleDown with spec MinReplicas=nil limitation with large pod policy and previous events", down: rules(115, 120, 0, 0, 300), downEvents: u3, minR: 1, maxR: 1000, current: 100, desired: 0, want: 1, wantReason: "TooFewReplicas"},
		{name: "scaleDown with spec MinReplicas limitation with large pod policy and previous events", down: rules(130, 120, 0, 0, 300), downEvents: u3, minR: 5, maxR: 1000, current: 100, desired: 0, want: 5, wantReason: "TooFewReplicas"},
		{name: "scaleDown with spec MinReplicas limitation with large percent policy and previous events", down: rules(0, 0, 100, 120, 300), downEvents: u3, minR: 5, maxR: 1000, current: 100, desired: 2, want: 5, wantReason: "TooFewReplicas"},
		{name: "scaleDown with pod policy limitation and previous events", down: rules(5, 120, 0, 0, 300), downEvents: u3, minR: 1, maxR: 1000, current: 100, desired: 2, want: 100, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with percent policy limitation and previous events", down: rules(0, 0, 50, 120, 300), downEvents: uniformEvents([]int32{2, 4, 6}, 120), minR: 1, maxR: 1000, current: 100, desired: 0, want: 56, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with percent policy and previous scale up and down events", down: rules(0, 0, 50, 180, 0), upEvents: uniformEvents([]int32{2}, 120), downEvents: uniformEvents([]int32{4}, 120), minR: 1, maxR: 1000, current: 10, desired: 1, want: 6, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with previous events preventing further scale down", down: rules(0, 0, 10, 120, 300), downEvents: uniformEvents([]int32{10, 10, 10}, 120), minR: 1, maxR: 1000, current: 100, desired: 0, want: 100, wantReason: "ScaleDownLimit"},
		{name: "scaleDown with with previous events still allowing more scale down", down: rules(0, 0, 1000, 120, 300), downEvents: uniformEvents([]int32{10, 10, 10}, 120), minR: 1, maxR: 1000, current: 10, desired: 5, want: 5, wantReason: "DesiredWithinRange"},
		{name: "check 'outdated' flag for events for one behavior for up", up: rules(1000, 60, 0, 0, 0), upEvents: u4, minR: 1, maxR: 1000, current: 100, desired: 200, want: 200, wantReason: "DesiredWithinRange"},
		{name: "check that events were not marked 'outdated' for two different policies in the behavior for up", up: rules(1000, 120, 100, 60, 0), upEvents: u4, minR: 1, maxR: 1000, current: 100, desired: 200, want: 200, wantReason: "DesiredWithinRange"},
		{name: "check that events were marked 'outdated' for two different policies in the behavior for up", up: rules(1000, 30, 100, 60, 0), upEvents: u4, minR: 1, maxR: 1000, current: 100, desired: 200, want: 200, wantReason: "DesiredWithinRange"},
		{name: "check 'outdated' flag for events for one behavior for down", down: rules(1000, 60, 0, 0, 300), downEvents: u4, minR: 1, maxR: 1000, current: 100, desired: 5, want: 5, wantReason: "DesiredWithinRange"},
		{name: "check that events were not marked 'outdated' for two different policies in the behavior for down", down: rules(1000, 120, 100, 60, 300), downEvents: u4, minR: 1, maxR: 1000, current: 100, desired: 5, want: 5, wantReason: "DesiredWithinRange"},
		{name: "check that events were marked 'outdated' for two different policies in the behavior for down", down: rules(1000, 30, 100, 60, 300), downEvents: u4, minR: 1, maxR: 1000, current: 100, desired: 5, want: 5, wantReason: "DesiredWithinRange"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			up, down := effective(tc.up, tc.down)
			h := History{ScaleUpEvents: tc.upEvents, ScaleDownEvents: tc.downEvents}
			lim, _ := behaviorRateLimit(&up, &down, tc.current, tc.desired, tc.minR, tc.maxR, h, testNow)
			if lim.Result != tc.want || lim.Reason != tc.wantReason {
				t.Errorf("got %d %s, want %d %s (policies %+v)", lim.Result, lim.Reason, tc.want, tc.wantReason, lim.Policies)
			}
		})
	}
}

func TestStoreScaleEventMatchesUpstream(t *testing.T) {
	ago := func(change int32, seconds int) ScaleEvent {
		return ScaleEvent{ReplicaChange: change, Timestamp: testNow.Add(-time.Duration(seconds) * time.Second)}
	}
	type stored struct {
		Change   int32
		Outdated bool
	}
	cases := []struct {
		name       string
		prev       []ScaleEvent
		rules      *autoscalingv2.HPAScalingRules
		want       []stored
		wantChange int32
	}{
		// horizontal_test.go:6363 TestStoreScaleEvents, each run up (10 -> 15) and down (10 -> 5)
		{name: "empty entries with default behavior", prev: []ScaleEvent{}, want: []stored{}},
		{name: "empty entries with two-policy-behavior", prev: []ScaleEvent{}, rules: rules(10, 60, 100, 60, 0), want: []stored{{5, false}}},
		{name: "one outdated entry to be kept untouched without behavior", prev: []ScaleEvent{ago(7, 61)}, want: []stored{{7, false}}},
		{name: "one outdated entry to be replaced with behavior", prev: []ScaleEvent{ago(7, 61)}, rules: rules(10, 60, 100, 60, 0), want: []stored{{5, false}}},
		{name: "one actual entry to be not touched with behavior", prev: []ScaleEvent{ago(7, 58)}, rules: rules(10, 60, 100, 60, 0), want: []stored{{7, false}, {5, false}}, wantChange: 7},
		{name: "two entries, one of them to be replaced", prev: []ScaleEvent{ago(7, 61), ago(6, 59)}, rules: rules(10, 60, 0, 0, 0), want: []stored{{5, false}, {6, false}}, wantChange: 6},
		{name: "replace one entry, use policies with different periods", prev: []ScaleEvent{ago(8, 29), ago(6, 59), ago(7, 61), ago(9, 61)},
			rules: rules(10, 60, 100, 30, 0), want: []stored{{8, false}, {6, false}, {7, true}, {5, false}}, wantChange: 14},
		{name: "two entries, both actual", prev: []ScaleEvent{ago(7, 58), ago(6, 59)}, rules: rules(10, 120, 100, 30, 0),
			want: []stored{{7, false}, {6, false}, {5, false}}, wantChange: 13},
	}
	for _, tc := range cases {
		for _, up := range []bool{true, false} {
			t.Run(tc.name, func(t *testing.T) {
				var b *autoscalingv2.HorizontalPodAutoscalerBehavior
				if tc.rules != nil {
					b = &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: tc.rules, ScaleDown: tc.rules}
				}
				h := History{ScaleUpEvents: cloneSlice(tc.prev), ScaleDownEvents: cloneSlice(tc.prev)}
				next := int32(15)
				events := func(h History) []ScaleEvent { return h.ScaleUpEvents }
				if !up {
					next = 5
					events = func(h History) []ScaleEvent { return h.ScaleDownEvents }
				}
				if got := changeInPeriod(60, events(h), testNow); got != tc.wantChange {
					t.Errorf("change in the last 60 s = %d, want %d", got, tc.wantChange)
				}
				before := cloneSlice(tc.prev)
				got := storeScaleEvent(h, b, 10, next, testNow)
				gotStored := []stored{}
				for _, e := range events(got) {
					gotStored = append(gotStored, stored{e.ReplicaChange, e.Outdated})
				}
				if diff := cmp.Diff(tc.want, gotStored); diff != "" {
					t.Errorf("up=%v stored events (-want +got):\n%s", up, diff)
				}
				if diff := cmp.Diff(before, events(h)); diff != "" {
					t.Errorf("the input history was modified (-before +after):\n%s", diff)
				}
			})
		}
	}
}

func TestBehaviorStabilizationMatchesUpstream(t *testing.T) {
	cases := []struct {
		name                 string
		recs                 []Recommendation
		current, desired     int32
		upWindow, downWindow int32
		want                 int32
		wantRecs             []int32
	}{
		// horizontal_test.go:6526 TestNormalizeDesiredReplicasWithBehavior
		{name: "empty recommendations for scaling down", recs: []Recommendation{}, current: 100, desired: 5, want: 5, wantRecs: []int32{5}},
		{name: "simple scale down stabilization", recs: recsAgo(4, 2*time.Minute, 5, time.Minute), current: 100, desired: 3, downWindow: 180, want: 5, wantRecs: []int32{4, 5, 3}},
		{name: "simple scale up stabilization", recs: recsAgo(4, 2*time.Minute, 5, time.Minute), current: 1, desired: 7, upWindow: 300, want: 4, wantRecs: []int32{4, 5, 7}},
		{name: "no scale down stabilization", recs: recsAgo(1, 2*time.Minute, 2, time.Minute), current: 100, desired: 3, upWindow: 300, want: 3, wantRecs: []int32{1, 2, 3}},
		{name: "no scale up stabilization", recs: recsAgo(4, 2*time.Minute, 5, time.Minute), current: 1, desired: 3, downWindow: 300, want: 3, wantRecs: []int32{4, 5, 3}},
		{name: "no scale down stabilization, reuse recommendation element", recs: recsAgo(10, 10*time.Minute, 9, 9*time.Minute), current: 100, desired: 3, want: 3, wantRecs: []int32{10, 3}},
		{name: "no scale up stabilization, reuse recommendation element", recs: recsAgo(10, 10*time.Minute, 9, 9*time.Minute), current: 1, desired: 100, want: 100, wantRecs: []int32{10, 100}},
		{name: "scale down stabilization, reuse one of obsolete recommendation element", recs: recsAgo(10, 10*time.Minute, 4, time.Minute, 5, 2*time.Minute, 9, 9*time.Minute),
			current: 100, desired: 3, downWindow: 180, want: 5, wantRecs: []int32{10, 4, 5, 3}},
		{name: "scale up stabilization, reuse one of obsolete recommendation element", recs: recsAgo(10, 100*time.Minute, 6, time.Minute, 5, 2*time.Minute, 9, 3*time.Minute),
			current: 1, desired: 100, upWindow: 300, want: 5, wantRecs: []int32{100, 6, 5, 9}},
		{name: "do not scale up when prenormalized rec goes down", recs: recsAgo(2, 100*time.Minute, 3, 3*time.Minute), current: 2, desired: 1, upWindow: 300, downWindow: 300, want: 2},
		{name: "do not scale down when prenormalized rec goes up", recs: recsAgo(2, 100*time.Minute, 1, 3*time.Minute), current: 2, desired: 3, upWindow: 300, downWindow: 300, want: 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules(0, 0, 0, 0, tc.upWindow), ScaleDown: rules(0, 0, 0, 0, tc.downWindow)}
			in := input(hpa(testbuild.Max(1000), testbuild.Behavior(b)), tc.current)
			d := decision{Decision: Decision{MinReplicas: 1, MaxReplicas: 1000, History: ownRecommendations(History{Recommendations: tc.recs})}}
			normalizeWithBehavior(&d, in, tc.current, tc.desired)
			if d.Stabilization.Result != tc.want {
				t.Errorf("stabilized = %d, want %d", d.Stabilization.Result, tc.want)
			}
			if tc.wantRecs != nil {
				var got []int32
				for _, r := range d.History.Recommendations {
					got = append(got, r.Replicas)
				}
				if diff := cmp.Diff(tc.wantRecs, got); diff != "" {
					t.Errorf("stored recommendations (-want +got):\n%s", diff)
				}
			}
		})
	}
}
