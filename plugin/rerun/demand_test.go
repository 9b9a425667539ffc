package rerun

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kubectl-hpa/kubectl-hpa/controller"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

func TestTheDemandOfARecordingIsItsUsageSummedOverPodsAtEverySync(t *testing.T) {
	rec := recordRun(t, controller.DryRunNone, loads)
	curve, err := Demand(rec, "")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{load.CPU}, curve.Metrics); diff != "" {
		t.Errorf("metrics (-want +got):\n%s", diff)
	}
	// The world spreads the load evenly over its pods (in whole millicores); where the metrics
	// API failed (-1), the previous total holds.
	var want, got []float64
	var last float64
	for i, l := range loads {
		if n := int64(rec.Syncs[i].Scale.SpecReplicas); l >= 0 {
			last = float64(l / n * n)
		}
		want = append(want, last)
		p := curve.Points[i]
		got = append(got, p.Values[load.CPU])
		if p.At != rec.Syncs[i].Now.Sub(rec.Syncs[0].Now) || p.Line != rec.Syncs[i].Line {
			t.Errorf("point %d at %v (line %d), want the sync's time %v (line %d)", i, p.At, p.Line, rec.Syncs[i].Now.Sub(rec.Syncs[0].Now), rec.Syncs[i].Line)
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cpu totals per sync (-want +got):\n%s", diff)
	}
}

func TestAMetricThatNeverAnsweredHasNoDemand(t *testing.T) {
	rec := recordRun(t, controller.DryRunNone, []int64{-1, -1})
	_, err := Demand(rec, "")
	if want := "mem: metric cpu of shop/web has no value at any sync (every read failed)"; err == nil || err.Error() != want {
		t.Errorf("error %v, want %s", err, want)
	}
}

func TestARecordingOfSeveralHPAsNeedsOneNamed(t *testing.T) {
	rec := recordRun(t, controller.DryRunNone, loads[:2])
	other := rec.Syncs[1]
	other.Key = "shop/api"
	rec.Syncs = append(rec.Syncs, other)
	if _, err := Demand(rec, ""); err == nil || !strings.Contains(err.Error(), "the recording holds 2 HPAs ([shop/api shop/web]): name one") {
		t.Errorf("error %v, want the HPAs listed", err)
	}
	if _, err := Demand(rec, "shop/api"); err != nil {
		t.Errorf("naming one: %v", err)
	}
}

// TestARecordingsDemandPlaysThroughTheSimulator: the spec a recording gives simulates as is,
// on the recorded configuration, starting where the recording did.
func TestARecordingsDemandPlaysThroughTheSimulator(t *testing.T) {
	rec := recordRun(t, controller.DryRunNone, loads)
	spec, err := SimSpec(rec, "shop/web")
	if err != nil {
		t.Fatal(err)
	}
	if spec.Workload.Replicas != 2 || spec.Model.Controller != rec.Header.Config() || !spec.Start.Equal(rec.Syncs[0].Now) ||
		spec.Duration != rec.Syncs[len(rec.Syncs)-1].Now.Sub(rec.Syncs[0].Now)+15*time.Second {
		t.Errorf("spec %+v does not start from the recording", spec)
	}
	res, err := sim.Run(t.Context(), spec)
	if err != nil {
		t.Fatal(err)
	}
	sum := res.Variants[0].Summary
	if sum.ScaleUps == 0 || sum.ScaleDowns == 0 {
		t.Errorf("the recorded demand simulated without scaling both ways: %+v", sum)
	}
}
