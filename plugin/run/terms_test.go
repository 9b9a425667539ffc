package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubectl-hpa/kubectl-hpa/controller/lease"
)

// TestATermAfterALostLeaseReadsThePodsTheFirstListed: every term of the Lease reads one pod
// cache, so a term after a lost Lease decides at once instead of listing every pod again
// (at 5,000 HPAs over 50,000 pods, half a minute without a decision).
func TestATermAfterALostLeaseReadsThePodsTheFirstListed(t *testing.T) {
	api, podLists := emptyNamespaceAPI(t, "shop")
	o, _, _ := notesOptions("", "")
	l := newLoop(o, unreadMetrics{}, newRenderer(o, "metrics.k8s.io/v1beta1", func() {}), nil)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	cfg := &rest.Config{Host: api.URL}
	if err := l.keepPods(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	for term := range 3 {
		leading, lose := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- l.runTerm(leading, cfg, "ops-1_abc", lease.Term{Leading: leading}) }()
		deadline := time.Now().Add(10 * time.Second)
		for c := l.active.Load(); c == nil || c.Healthz() != nil; c = l.active.Load() {
			if time.Now().After(deadline) {
				t.Fatalf("term %d: the controller did not start within 10s", term+1)
			}
			time.Sleep(10 * time.Millisecond)
		}
		lose()
		if err := <-done; err != nil {
			t.Fatalf("term %d: %v", term+1, err)
		}
	}
	if n := podLists.Load(); n != 1 {
		t.Errorf("3 terms listed the pods %d times, want once", n)
	}
}

// emptyNamespaceAPI serves namespace's HPAs and pods, none of either, and counts the pod
// lists. A watch is held open until the client leaves; a watch that would send the initial
// list (client-go's watch-list) is refused, so that the informers list.
func emptyNamespaceAPI(t *testing.T, namespace string) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var podLists atomic.Int32
	podsPath := "/api/v1/namespaces/" + namespace + "/pods"
	lists := map[string]string{
		podsPath: `{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1"},"items":[]}`,
		"/apis/autoscaling/v2/namespaces/" + namespace + "/horizontalpodautoscalers": `{"kind":"HorizontalPodAutoscalerList","apiVersion":"autoscaling/v2","metadata":{"resourceVersion":"1"},"items":[]}`,
	}
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		list, ok := lists[r.URL.Path]
		q := r.URL.Query()
		switch {
		case !ok:
			http.NotFound(w, r)
		case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
			w.WriteHeader(http.StatusBadRequest)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"BadRequest","code":400}`))
		case q.Get("watch") == "true":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			<-r.Context().Done()
		default:
			if r.URL.Path == podsPath {
				podLists.Add(1)
			}
			_, _ = w.Write([]byte(list))
		}
	}))
	t.Cleanup(api.Close)
	return api, &podLists
}
