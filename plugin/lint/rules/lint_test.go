package rules_test

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"

	"github.com/kubectl-hpa/kubectl-hpa/internal/golden"
	"github.com/kubectl-hpa/kubectl-hpa/internal/manifest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
)

// load reads a fixture as kubectl hpa lint -f reads it.
func load(t *testing.T, path string) rules.Objects {
	t.Helper()
	read, err := manifest.Read([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var objs rules.Objects
	for _, o := range read {
		objs.Add(o.Object)
	}
	return objs
}

// manifestOptions are -f's options, and (for HPA017, which only a cluster's discovery feeds) a
// cluster that serves resource and custom metrics but not external ones.
func manifestOptions() rules.Options {
	o := rules.DefaultOptions()
	o.Manifests = true
	o.ServedAPIs = map[string]bool{"metrics.k8s.io": true, "custom.metrics.k8s.io": true}
	return o
}

// TestEachRuleFiresOnItsBadFixtureOnly runs every rule on every fixture of testdata/: each rule
// fires on its own bad fixtures (HPAnnn-bad*.yaml) and not on its good ones (HPAnnn-good*.yaml),
// and the whole rule x fixture table is the golden file testdata/rules.golden.
func TestEachRuleFiresOnItsBadFixtureOnly(t *testing.T) {
	fixtures, err := filepath.Glob("testdata/HPA*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	all := rules.All()
	var table strings.Builder
	fmt.Fprintf(&table, "%-30s", "fixture")
	for _, r := range all {
		fmt.Fprintf(&table, " %s", r.ID)
	}
	table.WriteString("\n")
	hasBad, hasGood := map[string]bool{}, map[string]bool{}
	for _, f := range fixtures {
		name := strings.TrimSuffix(filepath.Base(f), ".yaml")
		own, kind, _ := strings.Cut(name, "-")
		fired := map[string]bool{}
		for _, fd := range rules.Check(load(t, f), manifestOptions()) {
			fired[fd.ID] = true
		}
		switch {
		case strings.HasPrefix(kind, "bad"):
			hasBad[own] = true
			if !fired[own] {
				t.Errorf("%s: %s did not fire on its bad fixture", name, own)
			}
		case strings.HasPrefix(kind, "good"):
			hasGood[own] = true
			if fired[own] {
				t.Errorf("%s: %s fired on its good fixture", name, own)
			}
		}
		fmt.Fprintf(&table, "%-30s", name)
		for _, r := range all {
			mark := "   .  "
			if fired[r.ID] {
				mark = " fired"
			}
			fmt.Fprintf(&table, " %s", mark)
		}
		table.WriteString("\n")
	}
	for _, r := range all {
		if !hasBad[r.ID] || !hasGood[r.ID] {
			t.Errorf("%s has no bad or no good fixture in testdata/", r.ID)
		}
	}
	golden.Check(t, "testdata/rules.golden", []byte(table.String()))
}

// TestFindingsOfTheBadFixtures pins each bad fixture's findings in words, so that a message
// that goes wrong shows.
func TestFindingsOfTheBadFixtures(t *testing.T) {
	fixtures, err := filepath.Glob("testdata/HPA*-bad*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, f := range fixtures {
		fmt.Fprintf(&b, "== %s\n", filepath.Base(f))
		for _, fd := range rules.Check(load(t, f), manifestOptions()) {
			fmt.Fprintf(&b, "%s %s %s %s: %s\n", fd.ID, fd.Severity, fd.Object, fd.Path, fd.Message)
		}
	}
	golden.Check(t, "testdata/findings.golden", []byte(b.String()))
}

func TestRulesHaveStableUniqueIDsAndText(t *testing.T) {
	seen := map[string]bool{}
	for i, r := range rules.All() {
		if want := fmt.Sprintf("HPA%03d", i+1); r.ID != want {
			t.Errorf("rule %d has ID %s, want %s (IDs are numbered in order and never reused)", i, r.ID, want)
		}
		if seen[r.ID] {
			t.Errorf("%s twice", r.ID)
		}
		seen[r.ID] = true
		if r.Title == "" || r.Why == "" || r.Fix == "" || r.Peers == "" || r.Severity.Rank() == 0 {
			t.Errorf("%s lacks a title, why, fix, peers or severity: %+v", r.ID, r)
		}
	}
}

func TestReplicasSetIsCheckedOnlyInManifests(t *testing.T) {
	objs := load(t, "testdata/HPA007-bad.yaml")
	for _, fd := range rules.Check(objs, rules.DefaultOptions()) {
		if fd.ID == "HPA007" {
			t.Errorf("HPA007 fired on objects read from a cluster, where every workload has spec.replicas: %s", fd.Message)
		}
	}
}

func scaling(window int32, sel autoscalingv2.ScalingPolicySelect, policies ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(window), SelectPolicy: ptr.To(sel), Policies: policies}
}

func percent(v, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: v, PeriodSeconds: period}
}

func pods(v, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: v, PeriodSeconds: period}
}

func TestTimeToReach(t *testing.T) {
	const sync = 15 * time.Second
	for _, tc := range []struct {
		name     string
		rules    *autoscalingv2.HPAScalingRules
		from, to int32
		want     time.Duration
		ok       bool
	}{
		// 100 90 81 72 64 57 51 45 40 36 32 28 25 22 19 17 15 13 11 9 8 7 6 5 4 3 2: 26 steps a
		// minute apart, the first at once (the truncation of 90% is upstream's).
		{"scaleDown 10% per 60s, no window: 100 -> 2 in 25 min", scaling(0, autoscalingv2.MaxChangePolicySelect, percent(10, 60)), 100, 2, 25 * time.Minute, true},
		{"the window delays the first step", scaling(300, autoscalingv2.MaxChangePolicySelect, percent(10, 60)), 100, 2, 30 * time.Minute, true},
		// 2 -> 6 (4 pods) -> 12 (100%) -> 24 -> 48 -> 96 -> 100, one step per sync.
		{"the default scaleUp: 2 -> 100 in 5 syncs after the first", scaling(0, autoscalingv2.MaxChangePolicySelect, pods(4, 15), percent(100, 15)), 2, 100, 5 * sync, true},
		// Min: 2 -> 3 (1 pod) ... one pod a sync.
		{"selectPolicy Min takes the smaller change", scaling(0, autoscalingv2.MinChangePolicySelect, pods(1, 15), percent(100, 15)), 2, 10, 7 * sync, true},
		// A period longer than the sync: the changes of the period count (1 pod per 60s).
		{"one pod per minute", scaling(0, autoscalingv2.MaxChangePolicySelect, pods(1, 60)), 2, 5, 2 * time.Minute, true},
		{"Disabled never reaches", scaling(0, autoscalingv2.DisabledPolicySelect, pods(1, 15)), 2, 5, 0, false},
		{"already there", scaling(0, autoscalingv2.MaxChangePolicySelect, pods(1, 15)), 3, 3, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, ok := rules.TimeToReach(tc.rules, tc.from, tc.to, sync)
			if got != tc.want || ok != tc.ok {
				t.Errorf("TimeToReach = %v, %v; want %v, %v", got, ok, tc.want, tc.ok)
			}
		})
	}
}

func TestNeverBinds(t *testing.T) {
	for _, tc := range []struct {
		name     string
		rules    *autoscalingv2.HPAScalingRules
		i        int
		up       bool
		wantBy   int
		wantDead bool
	}{
		{"1 pod under Max beside 100% of the same period", scaling(0, autoscalingv2.MaxChangePolicySelect, pods(1, 60), percent(100, 60)), 0, true, 1, true},
		{"4 pods binds at 2 and 3 replicas", scaling(0, autoscalingv2.MaxChangePolicySelect, pods(4, 60), percent(100, 60)), 0, true, 0, false},
		{"100% binds from 5 replicas", scaling(0, autoscalingv2.MaxChangePolicySelect, pods(4, 60), percent(100, 60)), 1, true, 0, false},
		{"policies of other periods are not compared", scaling(0, autoscalingv2.MaxChangePolicySelect, pods(1, 15), percent(100, 60)), 0, true, 0, false},
		{"under Min the larger change never binds", scaling(0, autoscalingv2.MinChangePolicySelect, pods(1, 60), percent(100, 60)), 1, true, 0, true},
		// Going down from 3 to 10 replicas, 50% removes at least as many as 1 pod, and more.
		{"scaleDown: 1 pod under Max beside 50% never binds", scaling(0, autoscalingv2.MaxChangePolicySelect, pods(1, 60), percent(50, 60)), 0, false, 1, true},
		{"scaleDown: 50% binds from 10 replicas beside 4 pods", scaling(0, autoscalingv2.MaxChangePolicySelect, pods(4, 60), percent(50, 60)), 1, false, 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			by, dead := rules.NeverBinds(tc.rules, tc.i, 2, 10, tc.up)
			if dead != tc.wantDead || (dead && by != tc.wantBy) {
				t.Errorf("NeverBinds = %d, %v; want %d, %v", by, dead, tc.wantBy, tc.wantDead)
			}
		})
	}
}

// An HPA with the largest maxReplicas is checked in bounded time (a replica counter at the
// largest int32 wrapped, and NeverBinds looped for ever), and a policy slower than a day says
// so.
func TestTheLargestCountsAreCheckedInBoundedTime(t *testing.T) {
	objs, err := manifest.Decode("huge.yaml", []byte(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: huge, namespace: shop}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: 2
  maxReplicas: 2147483647
  behavior:
    scaleUp:
      policies: [{type: Pods, value: 1, periodSeconds: 1800}, {type: Percent, value: 1, periodSeconds: 1800}]
`))
	if err != nil {
		t.Fatal(err)
	}
	var read rules.Objects
	read.Add(objs[0].Object)
	var got []string
	for _, f := range rules.Check(read, rules.DefaultOptions()) {
		if f.ID == "HPA013" {
			got = append(got, f.Message)
		}
	}
	want := []string{"scaleUp 1 pod per 1800s or 1% per 1800s (Max): 2 -> 2147483647 pods takes more than a day"}
	if !slices.Equal(got, want) {
		t.Errorf("HPA013 said %q, want %q", got, want)
	}
}

// TestATargetMissingFromManifestsWithoutANamespaceSaysSo: files that name no namespace are
// read in none, which the finding must not print as namespace "".
func TestATargetMissingFromManifestsWithoutANamespaceSaysSo(t *testing.T) {
	for _, fd := range rules.Check(load(t, "testdata/no-namespace-without-target.yaml"), manifestOptions()) {
		if fd.ID != "HPA004" {
			continue
		}
		if want := "Deployment web is not among the objects read: no file given holds it (pass the one that does with another -f)"; fd.Message != want {
			t.Errorf("HPA004 says %q, want %q", fd.Message, want)
		}
		return
	}
	t.Error("HPA004 did not fire")
}
