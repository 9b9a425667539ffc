package monitor

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestHandlerServesMetricsAndHealth(t *testing.T) {
	cases := []struct {
		name     string
		healthy  func() error
		path     string
		wantCode int
		wantBody string
	}{
		{"metrics carry upstream names", nil, "/metrics", http.StatusOK, "horizontal_pod_autoscaler_controller_num_horizontal_pod_autoscalers 1"},
		{"workqueue metrics are exported", nil, "/metrics", http.StatusOK, `workqueue_depth{name="horizontalpodautoscaler"} 0`},
		{"healthy loop", func() error { return nil }, "/healthz", http.StatusOK, "ok"},
		{"loop not running", func() error { return errors.New("caches not synced") }, "/healthz", http.StatusServiceUnavailable, "caches not synced"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			m := New()
			m.HPAAdded()
			m.WorkqueueProvider().NewDepthMetric("horizontalpodautoscaler")
			srv := httptest.NewServer(m.Handler(tc.healthy))
			defer srv.Close()
			resp, err := http.Get(srv.URL + tc.path)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != tc.wantCode || !strings.Contains(string(body), tc.wantBody) {
				t.Errorf("GET %s = %d %q, want %d containing %q", tc.path, resp.StatusCode, body, tc.wantCode, tc.wantBody)
			}
		})
	}
}
