package controller

import (
	"slices"
	"testing"
	"time"

	"k8s.io/client-go/util/workqueue"
	testingclock "k8s.io/utils/clock/testing"
)

func TestNamespacePassesRequeueEachNamespacesHPAsToItsInstants(t *testing.T) {
	const p = 15 * time.Second
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	type requeue struct {
		at   time.Duration // since t0
		key  string
		want time.Duration // the wait When gives
	}
	tests := []struct {
		name     string
		requeues []requeue
	}{
		{
			name: "the first requeue of a namespace waits a period and anchors its instants",
			requeues: []requeue{
				{at: 0, key: "a/one", want: p},
			},
		},
		{
			name: "an HPA requeued later in the same pass waits for the namespace's instant, not a whole period",
			requeues: []requeue{
				{at: 0, key: "a/one", want: p},
				{at: 40 * time.Millisecond, key: "a/two", want: p - 40*time.Millisecond},
				{at: 3 * time.Second, key: "a/three", want: p - 3*time.Second},
			},
		},
		{
			name: "an HPA synced at an instant is due exactly a period later, however long its sync took",
			requeues: []requeue{
				{at: 0, key: "a/one", want: p},
				{at: p + 250*time.Millisecond, key: "a/one", want: p - 250*time.Millisecond},
			},
		},
		{
			name: "an HPA synced off the instants joins the next one at least a quarter of a period away",
			requeues: []requeue{
				{at: 0, key: "a/one", want: p},
				{at: 5 * time.Second, key: "a/new", want: 10 * time.Second},
				{at: 11 * time.Second, key: "a/edited", want: 4 * time.Second},
				{at: 12 * time.Second, key: "a/edited-later", want: p + 3*time.Second},
			},
		},
		{
			name: "namespaces keep instants of their own",
			requeues: []requeue{
				{at: 0, key: "a/one", want: p},
				{at: 2 * time.Second, key: "b/one", want: p},
				{at: 3 * time.Second, key: "a/two", want: p - 3*time.Second},
				{at: 4 * time.Second, key: "b/two", want: p - 2*time.Second},
			},
		},
		{
			name: "a namespace none of whose HPAs was requeued for two periods starts afresh",
			requeues: []requeue{
				{at: 0, key: "a/one", want: p},
				{at: 0, key: "b/one", want: p},
				{at: 20 * time.Second, key: "b/one", want: 10 * time.Second},
				{at: 2*p + 7*time.Second, key: "b/one", want: 8 * time.Second},
				{at: 2*p + 7*time.Second, key: "a/one", want: p},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := testingclock.NewFakePassiveClock(t0)
			passes := newNamespacePasses(p, clk)
			for _, r := range tt.requeues {
				clk.SetTime(t0.Add(r.at))
				if got := passes.When(r.key); got != r.want {
					t.Errorf("%s requeued at t0+%s waits %s, want %s", r.key, r.at, got, r.want)
				}
			}
		})
	}
}

// TestNamespacePassesBringANamespacesHPAsDueTogetherInTheWorkQueue drives client-go's work
// queue as the loop does: HPAs of one namespace synced at different times, and requeued by the
// informer's resync meanwhile, all become due at the namespace's next instant, together.
func TestNamespacePassesBringANamespacesHPAsDueTogetherInTheWorkQueue(t *testing.T) {
	const p = 15 * time.Second
	t0 := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	clk := testingclock.NewFakeClock(t0)
	q := workqueue.NewTypedRateLimitingQueueWithConfig[string](newNamespacePasses(p, clk), workqueue.TypedRateLimitingQueueConfig[string]{Clock: clk})
	defer q.ShutDown()
	sync := func(key string) {
		t.Helper()
		q.Add(key)
		got, _ := q.Get()
		if got != key {
			t.Fatalf("got %s from the queue, want %s", got, key)
		}
		q.Done(key)
		q.AddRateLimited(key)
	}
	sync("a/one")
	clk.Step(4 * time.Second)
	sync("a/created-later")
	sync("b/other")
	clk.Step(2 * time.Second)
	q.AddRateLimited("a/one") // the informer's resync
	clk.Step(p - 6*time.Second - time.Millisecond)
	time.Sleep(50 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Fatalf("%d HPAs due a millisecond before namespace a's instant, want none", n)
	}
	clk.Step(time.Millisecond)
	var due []string
	deadline := time.Now().Add(5 * time.Second)
	for len(due) < 2 && time.Now().Before(deadline) {
		if q.Len() == 0 {
			time.Sleep(time.Millisecond)
			continue
		}
		key, _ := q.Get()
		due = append(due, key)
		q.Done(key)
	}
	slices.Sort(due)
	if want := []string{"a/created-later", "a/one"}; !slices.Equal(due, want) {
		t.Fatalf("due at namespace a's instant: %q, want %q", due, want)
	}
	time.Sleep(50 * time.Millisecond)
	if n := q.Len(); n != 0 {
		t.Errorf("%d more HPAs due at namespace a's instant (b's is 4 s later), want none", n)
	}
}
