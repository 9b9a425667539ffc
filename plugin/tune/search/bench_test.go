package search

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas/benchload"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
)

// daysLoad is days of demand in 10-minute steps between 200m and 6 cores: a daily wave with
// a spike every few hours (plugin/sim's benchmark load, repeated).
func daysLoad(days int) string {
	var b strings.Builder
	for m := 0; m <= days*24*60; m += 10 {
		h := float64(m%(24*60)) / 60
		cpu := 200 + 2900*(1-math.Cos(2*math.Pi*h/24))
		if m%180 == 90 {
			cpu += 2000
		}
		fmt.Fprintf(&b, "%d,%d\n", m*60, int(cpu))
	}
	return b.String()
}

// benchmarkTune is issue 28's speed goal: DefaultBudget (240) candidates, each a full run of
// days at a 15 s sync period (5,760 syncs a day), on GOMAXPROCS workers. ns/op is the wall
// time; cpu-ns/op the CPU time of every worker.
func benchmarkTune(b *testing.B, days int) {
	spec := simSpec(b, daysLoad(days), 2)
	space, err := NewSpace(cpuHPA(50, 2, 40), replicas.DefaultConfig(), nil)
	if err != nil {
		b.Fatal(err)
	}
	p := Problem{Space: space, Spec: spec, Objective: Balanced, Constraints: Constraints{MaxAboveFraction: 0.01, MaxRescalesPerHour: -1}, Validation: validation.DefaultOptions()}
	b.ReportAllocs()
	var played int
	cpu, _ := benchload.ProcessCPU()
	for b.Loop() {
		res, err := Run(context.Background(), p)
		if err != nil {
			b.Fatal(err)
		}
		played = len(res.Candidates)
	}
	benchload.CPUPerOp(b, cpu)
	b.ReportMetric(float64(played), "candidates/op")
	b.ReportMetric(float64(played)*spec.Duration.Seconds()/(spec.Model.SyncPeriod+spec.Model.SyncDuration).Seconds(), "syncs/op")
}

func BenchmarkTuneDay(b *testing.B) { benchmarkTune(b, 1) }

func BenchmarkTuneWeek(b *testing.B) { benchmarkTune(b, 7) }
