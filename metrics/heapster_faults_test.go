package metrics

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/metrics/sampleset"
	heapsterstandin "github.com/kubectl-hpa/kubectl-hpa/test/standin/heapster"
)

// TestHeapsterFaultsFailTheReadWithTheCause drives every fault of the stand-in through the
// service proxy and a direct URL: each read fails, never returning partial samples, with
// an error naming where Heapster was asked, what was wrong and what to do.
func TestHeapsterFaultsFailTheReadWithTheCause(t *testing.T) {
	tests := []struct {
		name  string
		fault heapsterstandin.Fault
		pods  bool // ask for the custom metric instead of cpu
		// wantErr must all appear, through the proxy and directly.
		wantErr []string
	}{{
		name:  "a garbage body is quoted with the path that answered it",
		fault: heapsterstandin.Fault{Kind: heapsterstandin.FaultGarbage},
		wantErr: []string{"the answer to GET /apis/metrics/v1alpha1/namespaces/test-namespace/pods is not a PodMetricsList",
			`body starts "<html><head><title>502 Bad Gateway`},
	}, {
		name: "a garbage model answer is quoted", fault: heapsterstandin.Fault{Kind: heapsterstandin.FaultGarbage, Body: "panic: nil map"}, pods: true,
		wantErr: []string{"/pod-list/test-pod-0,test-pod-1/metrics/qps is not a MetricResultList", `body starts "panic: nil map"`},
	}, {
		name: "more items than pods is refused naming the repeated pod", fault: heapsterstandin.Fault{Kind: heapsterstandin.FaultItemCount, ItemDelta: 1},
		wantErr: []string{"pod test-pod-0 is listed twice"},
	}, {
		name: "no items at all is refused", fault: heapsterstandin.Fault{Kind: heapsterstandin.FaultItemCount, ItemDelta: -2},
		wantErr: []string{"no metrics returned from heapster", `for pods in test-namespace matching "name=test-pod"`},
	}, {
		name: "fewer model items than pods asked is refused", fault: heapsterstandin.Fault{Kind: heapsterstandin.FaultItemCount, ItemDelta: -1}, pods: true,
		wantErr: []string{"requested metrics for 2 pods, got metrics for 1"},
	}, {
		name: "more model items than pods asked is refused", fault: heapsterstandin.Fault{Kind: heapsterstandin.FaultItemCount, ItemDelta: 2}, pods: true,
		wantErr: []string{"requested metrics for 2 pods, got metrics for 4"},
	}, {
		name: "stale samples are refused naming the pod and the flag", fault: heapsterstandin.Fault{Kind: heapsterstandin.FaultStale, Age: 20 * time.Minute},
		wantErr: []string{"the sample of pod test-pod-0 is stale", "is 20m0s old, more than --metrics-max-age=10m0s"},
	}, {
		name: "a 500 is reported with its body", fault: heapsterstandin.Fault{Kind: heapsterstandin.FaultStatus},
		wantErr: []string{"500", heapsterstandin.DefaultStatusBody},
	}, {
		name: "a slow answer is abandoned after the timeout", fault: heapsterstandin.Fault{Kind: heapsterstandin.FaultSlow, Delay: time.Hour},
		wantErr: []string{"timed out after 200ms (--metrics-timeout), the request was abandoned", "raise --metrics-timeout"},
	}, {
		name: "a slow model answer is abandoned after the timeout", fault: heapsterstandin.Fault{Kind: heapsterstandin.FaultSlow, Delay: time.Hour}, pods: true,
		wantErr: []string{"timed out after 200ms (--metrics-timeout)"},
	}}
	for _, tc := range tests {
		for _, direct := range []bool{false, true} {
			via := "via the service proxy"
			wantWhere := "heapster via service proxy kube-system/http:heapster:"
			if direct {
				via, wantWhere = "directly", "heapster at http://127.0.0.1:"
			}
			t.Run(tc.name+" "+via, func(t *testing.T) {
				sc := cpuScenario(2, [][]int64{{100}, {300}}, time.Time{})
				for _, p := range qpsScenario(2, [][]point{{{5, -1}}, {{7, -1}}}).Pods {
					sc.Pods[indexOf(sc.Pods, p.Name)].Series = p.Series
				}
				sc.Faults = map[string]heapsterstandin.Fault{testNamespace: tc.fault}
				f := heapsterFixture{now: minute(0), pods: 2, scenario: sc, direct: direct, timeout: 200 * time.Millisecond}
				c := f.client(t)
				var err error
				var got *sampleset.Set
				if tc.pods {
					got, _, err = c.PodsMetric(context.Background(), testNamespace, "qps", testSelector, nil)
				} else {
					got, _, err = c.PodResource(context.Background(), testNamespace, corev1.ResourceCPU, testSelector, "")
				}
				if err == nil {
					t.Fatalf("no error, samples %v", got.Map())
				}
				msg := err.Error()
				if strings.Contains(msg, "\n") {
					t.Errorf("the error is not one line: %q", msg)
				}
				for _, w := range append([]string{wantWhere}, tc.wantErr...) {
					if !strings.Contains(msg, w) {
						t.Errorf("error %q does not contain %q", msg, w)
					}
				}
				if got != nil {
					t.Errorf("samples returned beside the error: %v", got)
				}
				if !IsSourceFailure(err) {
					t.Errorf("IsSourceFailure(%v) = false, want true", err)
				}
			})
		}
	}
}

func indexOf(pods []heapsterstandin.Pod, name string) int {
	for i, p := range pods {
		if p.Name == name {
			return i
		}
	}
	return -1
}
