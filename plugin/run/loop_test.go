package run

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/kubectl-hpa/kubectl-hpa/controller/monitor"
)

func TestProfilesAreServedOnlyWithProfiling(t *testing.T) {
	cases := []struct {
		name      string
		profiling bool
		want      map[string]int
	}{
		{"without profiling", false, map[string]int{"/metrics": http.StatusOK, "/healthz": http.StatusOK, "/debug/pprof/heap": http.StatusNotFound}},
		{"with profiling", true, map[string]int{"/metrics": http.StatusOK, "/healthz": http.StatusOK, "/debug/pprof/heap": http.StatusOK, "/debug/pprof/": http.StatusOK}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			l := &loop{}
			l.mon.Store(monitor.New())
			h := l.handler(tc.profiling)
			for path, want := range tc.want {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
				if rec.Code != want {
					t.Errorf("GET %s = %d, want %d", path, rec.Code, want)
				}
			}
		})
	}
}
