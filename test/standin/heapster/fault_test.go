package heapsterstandin

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// faultScenario has two web pods with a qps series in "default" and one in "other".
func faultScenario() Scenario {
	sc := Scenario{BatchTime: now, Pods: []Pod{webPod("web-1", 100), webPod("web-2", 200), webPod("web-3", 300)}}
	sc.Pods[2].Namespace = "other"
	for i := range sc.Pods {
		sc.Pods[i].Series = map[string][]Point{"custom/qps": {at(-30, int64(i+1))}}
	}
	return sc
}

const (
	listPath  = "/apis/metrics/v1alpha1/namespaces/%s/pods?labelSelector=app%%3Dweb"
	modelPath = "/api/v1/model/namespaces/%s/pod-list/%s/metrics/custom/qps"
)

func pathIn(format, ns string, pods ...string) string {
	if len(pods) == 0 {
		return strings.Replace(format, "%s", ns, 1)
	}
	return strings.Replace(strings.Replace(format, "%s", ns, 1), "%s", strings.Join(pods, ","), 1)
}

func item(name string, batch time.Time, cpu string) string {
	return `{"metadata":{"name":"` + name + `","namespace":"default","creationTimestamp":"2018-06-01T10:00:07Z"},"timestamp":"` +
		batch.Format(time.RFC3339) + `","window":"1m0s","containers":[{"name":"c0","usage":{"cpu":"` + cpu + `","memory":"8Mi"}}]}`
}

func series(ts time.Time, v string) string {
	return `{"metrics":[{"timestamp":"` + ts.Format(time.RFC3339) + `","value":` + v + `}],"latestTimestamp":"` + ts.Format(time.RFC3339) + `"}`
}

const emptySeries = `{"metrics":[],"latestTimestamp":"0001-01-01T00:00:00Z"}`

func TestFaultsShapeTheAnswersAboutTheirNamespaceOnly(t *testing.T) {
	ts := now.Add(-30 * time.Second)
	healthyList := `{"metadata":{},"items":[` + item("web-1", now, "100m") + `,` + item("web-2", now, "200m") + `]}`
	healthyModel := `{"items":[` + series(ts, "1") + `,` + series(ts, "2") + `]}`
	tests := []struct {
		name  string
		fault Fault
		path  string
		// wantCode and wantBody are the faulted answer; wantJSON says whether to compare
		// it as JSON rather than text.
		wantCode int
		wantBody string
		wantJSON bool
	}{{
		name: "garbage answers 200 with an HTML page", fault: Fault{Kind: FaultGarbage},
		path: pathIn(listPath, "default"), wantCode: http.StatusOK, wantBody: DefaultGarbageBody,
	}, {
		name: "garbage answers the model API with the body given", fault: Fault{Kind: FaultGarbage, Body: "panic: nil map"},
		path: pathIn(modelPath, "default", "web-1"), wantCode: http.StatusOK, wantBody: "panic: nil map",
	}, {
		name: "status answers 500 with the default body", fault: Fault{Kind: FaultStatus},
		path: pathIn(listPath, "default"), wantCode: http.StatusInternalServerError, wantBody: DefaultStatusBody + "\n",
	}, {
		name: "status answers the status and body given", fault: Fault{Kind: FaultStatus, Status: http.StatusServiceUnavailable, Body: "sink down"},
		path: pathIn(modelPath, "default", "web-1"), wantCode: http.StatusServiceUnavailable, wantBody: "sink down\n",
	}, {
		name: "a negative item delta drops the last pods of the list", fault: Fault{Kind: FaultItemCount, ItemDelta: -1},
		path: pathIn(listPath, "default"), wantCode: http.StatusOK, wantJSON: true,
		wantBody: `{"metadata":{},"items":[` + item("web-1", now, "100m") + `]}`,
	}, {
		name: "dropping more items than there are leaves none", fault: Fault{Kind: FaultItemCount, ItemDelta: -5},
		path: pathIn(listPath, "default"), wantCode: http.StatusOK, wantJSON: true,
		wantBody: `{"metadata":{},"items":[]}`,
	}, {
		name: "a positive item delta repeats pods already listed", fault: Fault{Kind: FaultItemCount, ItemDelta: 3},
		path: pathIn(listPath, "default"), wantCode: http.StatusOK, wantJSON: true,
		wantBody: `{"metadata":{},"items":[` + item("web-1", now, "100m") + `,` + item("web-2", now, "200m") + `,` +
			item("web-1", now, "100m") + `,` + item("web-2", now, "200m") + `,` + item("web-1", now, "100m") + `]}`,
	}, {
		name: "a positive item delta adds empty model series beyond the pods asked for", fault: Fault{Kind: FaultItemCount, ItemDelta: 1},
		path: pathIn(modelPath, "default", "web-1", "web-2"), wantCode: http.StatusOK, wantJSON: true,
		wantBody: `{"items":[` + series(ts, "1") + `,` + series(ts, "2") + `,` + emptySeries + `]}`,
	}, {
		name: "a negative item delta answers fewer model items than pods asked for", fault: Fault{Kind: FaultItemCount, ItemDelta: -1},
		path: pathIn(modelPath, "default", "web-1", "web-2"), wantCode: http.StatusOK, wantJSON: true,
		wantBody: `{"items":[` + series(ts, "1") + `]}`,
	}, {
		name: "stale dates the batch earlier", fault: Fault{Kind: FaultStale, Age: 20 * time.Minute},
		path: pathIn(listPath, "default"), wantCode: http.StatusOK, wantJSON: true,
		wantBody: `{"metadata":{},"items":[` + item("web-1", now.Add(-20*time.Minute), "100m") + `,` + item("web-2", now.Add(-20*time.Minute), "200m") + `]}`,
	}, {
		name: "stale dates model points earlier, before the start filter", fault: Fault{Kind: FaultStale, Age: 3 * time.Minute},
		path: pathIn(modelPath, "default", "web-1", "web-2") + "?start=2018-06-01T09:55:07Z", wantCode: http.StatusOK, wantJSON: true,
		wantBody: `{"items":[` + series(ts.Add(-3*time.Minute), "1") + `,` + series(ts.Add(-3*time.Minute), "2") + `]}`,
	}, {
		name: "stale model points older than the start are not answered", fault: Fault{Kind: FaultStale, Age: 20 * time.Minute},
		path: pathIn(modelPath, "default", "web-1") + "?start=2018-06-01T09:55:07Z", wantCode: http.StatusOK, wantJSON: true,
		wantBody: `{"items":[` + emptySeries + `]}`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sc := faultScenario()
			srv, err := New(clocktesting.NewFakePassiveClock(now), sc)
			if err != nil {
				t.Fatal(err)
			}
			if err := srv.SetFault("default", tc.fault); err != nil {
				t.Fatal(err)
			}
			code, body := get(t, srv, tc.path)
			if code != tc.wantCode {
				t.Errorf("status %d, want %d: %s", code, tc.wantCode, body)
			}
			if tc.wantJSON {
				if diff := cmp.Diff(decoded(t, tc.wantBody), decoded(t, body)); diff != "" {
					t.Errorf("body mismatch (-want +got):\n%s", diff)
				}
			} else if body != tc.wantBody {
				t.Errorf("body %q, want %q", body, tc.wantBody)
			}

			// Another namespace is served as if nothing were wrong.
			_, other := get(t, srv, pathIn(listPath, "other"))
			want := `{"metadata":{},"items":[` + strings.ReplaceAll(item("web-3", now, "300m"), `"default"`, `"other"`) + `]}`
			if diff := cmp.Diff(decoded(t, want), decoded(t, other)); diff != "" {
				t.Errorf("another namespace was affected (-want +got):\n%s", diff)
			}
			if code, body := get(t, srv, "/healthz"); code != http.StatusOK || body != "ok" {
				t.Errorf("healthz answered %d %q", code, body)
			}

			// Cleared, the namespace is served normally again.
			srv.ClearFault("default")
			for path, want := range map[string]string{pathIn(listPath, "default"): healthyList, pathIn(modelPath, "default", "web-1", "web-2"): healthyModel} {
				if _, body := get(t, srv, path); !cmp.Equal(decoded(t, want), decoded(t, body)) {
					t.Errorf("after ClearFault, %s answered %s, want %s", path, body, want)
				}
			}
			if got := srv.Stats("default").Requests; got != 3 {
				t.Errorf("Stats(default).Requests = %d, want 3", got)
			}
		})
	}
}

func TestSlowFaultHoldsTheAnswerUntilTheDelayPasses(t *testing.T) {
	clk := clocktesting.NewFakeClock(now)
	srv, err := New(clk, faultScenario())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.SetFault("default", Fault{Kind: FaultSlow, Delay: time.Minute}); err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, pathIn(listPath, "default"), nil))
	}()
	for !clk.HasWaiters() {
		time.Sleep(time.Millisecond)
	}
	select {
	case <-done:
		t.Fatal("the slow answer was sent before the delay passed")
	default:
	}
	clk.Step(time.Minute)
	<-done
	// The answer is computed when it is sent, so it is made at the time after the delay.
	want := `{"metadata":{},"items":[` + item("web-1", now, "100m") + `,` + item("web-2", now, "200m") + `]}`
	want = strings.ReplaceAll(want, `"creationTimestamp":"2018-06-01T10:00:07Z"`, `"creationTimestamp":"2018-06-01T10:01:07Z"`)
	if rec.Code != http.StatusOK || !cmp.Equal(decoded(t, want), decoded(t, rec.Body.String())) {
		t.Errorf("got %d %s, want 200 %s", rec.Code, rec.Body.String(), want)
	}
	if diff := cmp.Diff(Stats{Requests: 1}, srv.Stats("default")); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
}

func TestSlowFaultCountsAnswersTheClientGaveUpOn(t *testing.T) {
	srv, err := New(nil, faultScenario())
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.SetFault("default", Fault{Kind: FaultSlow, Delay: time.Hour}); err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(srv)
	defer hs.Close()
	for i, path := range []string{pathIn(listPath, "default"), pathIn(modelPath, "default", "web-1")} {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, hs.URL+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		errc := make(chan error, 1)
		go func() {
			resp, err := hs.Client().Do(req)
			if err == nil {
				resp.Body.Close()
			}
			errc <- err
		}()
		// The client gives up once the server holds the request: a deadline could pass on a
		// busy machine before the request arrives, and then there is nothing to abandon.
		waitFor(t, func() bool { return srv.Stats("default").Requests == i+1 })
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("GET %s: error %v, want the client's cancellation", path, err)
		}
	}
	// The server notices the closed connections on its own schedule.
	waitFor(t, func() bool { return srv.Stats("default").Abandoned == 2 })
	if diff := cmp.Diff(Stats{Requests: 2, Abandoned: 2}, srv.Stats("default")); diff != "" {
		t.Errorf("stats (-want +got):\n%s", diff)
	}
	if code, _ := get(t, srv, pathIn(listPath, "other")); code != http.StatusOK {
		t.Errorf("another namespace answered %d", code)
	}
}

func TestInvalidFaultsAreRefused(t *testing.T) {
	tests := []struct {
		name    string
		ns      string
		fault   Fault
		wantErr string
	}{
		{"an unknown kind", "default", Fault{Kind: "flaky"}, `unknown fault kind "flaky"`},
		{"an item count fault without a delta", "default", Fault{Kind: FaultItemCount}, "non-zero itemDelta"},
		{"a stale fault without an age", "default", Fault{Kind: FaultStale}, "positive age"},
		{"a slow fault without a delay", "default", Fault{Kind: FaultSlow}, "positive delay"},
		{"a status that is no error", "default", Fault{Kind: FaultStatus, Status: 200}, "status 200 is not an HTTP error"},
		{"a fault without a namespace", "", Fault{Kind: FaultGarbage}, "a fault has no namespace"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			srv, err := New(nil, Scenario{})
			if err != nil {
				t.Fatal(err)
			}
			err = srv.SetFault(tc.ns, tc.fault)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tc.wantErr)
			}
			if len(srv.Scenario().Faults) != 0 {
				t.Errorf("a refused fault is served: %+v", srv.Scenario().Faults)
			}
		})
	}
}

func TestFaultsTravelThroughTheScenarioJSON(t *testing.T) {
	in := Scenario{Faults: map[string]Fault{"a": {Kind: FaultSlow, Delay: 3 * time.Second}, "b": {Kind: FaultStatus, Status: 502, Body: "x"}}}
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseScenario(data)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(in, got); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	cp := got.Clone()
	cp.Faults["a"] = Fault{Kind: FaultGarbage}
	if got.Faults["a"].Kind != FaultSlow {
		t.Errorf("a clone shares its faults with the original")
	}
	if _, err := ParseScenario([]byte(`{"faults":{"a":{"kind":"stale"}}}`)); err == nil || !strings.Contains(err.Error(), "namespace a: fault stale needs a positive age") {
		t.Errorf("ParseScenario of an invalid fault: error %v", err)
	}
}

// waitFor polls cond until it holds; a minute without is a failure, not a hang.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("the condition never held")
		}
		time.Sleep(time.Millisecond)
	}
}
