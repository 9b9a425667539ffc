package sim

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas/benchload"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/sim/load"
)

// dayLoad is a day of demand in 10-minute steps between 200m and 6 cores: a daily wave
// with a spike every few hours, the shape that keeps an HPA busy.
func dayLoad(b testing.TB) load.Curve {
	var sb strings.Builder
	sb.WriteString("time,cpu\n")
	for m := 0; m < 24*60; m += 10 {
		h := float64(m) / 60
		cpu := 200 + 2900*(1-math.Cos(2*math.Pi*h/24))
		if m%180 == 90 {
			cpu += 2000
		}
		fmt.Fprintf(&sb, "%d,%d\n", m*60, int(cpu))
	}
	c, err := load.Parse("day.csv", []byte(sb.String()))
	if err != nil {
		b.Fatal(err)
	}
	return c
}

// BenchmarkSimulate24h4Variants is issue 13's speed goal: a day at a 15 s sync period
// (5,761 syncs) for four variants, under a second. cpu-ns/op is the CPU time of all four
// (two cores share it); ns/op the wall time, which a loaded machine inflates.
func BenchmarkSimulate24h4Variants(b *testing.B) {
	five := int32(300)
	sixty := int32(60)
	pods := autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 60}
	s := Spec{
		Model:    DefaultModel(),
		Load:     dayLoad(b),
		Workload: Workload{Replicas: 2, Pod: podSpec("200m")},
		Variants: []Variant{
			{Name: "as is", HPA: cpuHPA(50, 1, 40, nil)},
			{Name: "target 70%", HPA: cpuHPA(70, 1, 40, nil)},
			{Name: "slow down", HPA: cpuHPA(50, 2, 40, &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &five, Policies: []autoscalingv2.HPAScalingPolicy{pods}},
			})},
			{Name: "fast", HPA: cpuHPA(50, 1, 40, &autoscalingv2.HorizontalPodAutoscalerBehavior{
				ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: &sixty},
			})},
		},
		Duration: 24 * time.Hour,
	}
	b.ReportAllocs()
	var syncs int
	cpu, _ := benchload.ProcessCPU()
	for b.Loop() {
		res, err := Run(context.Background(), s)
		if err != nil {
			b.Fatal(err)
		}
		syncs = 0
		for _, v := range res.Variants {
			syncs += len(v.Steps)
		}
	}
	benchload.CPUPerOp(b, cpu)
	b.ReportMetric(float64(syncs), "syncs/op")
}
