package run

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// hpaCountNotes returns the controller's Count callback: it notes a run that watches no
// HPA at the start, and every change of the count after.
func (o *Options) hpaCountNotes(r *renderer) func(int) {
	var (
		mu      sync.Mutex
		started bool
		last    int
	)
	where := fmt.Sprintf("in namespace %q", o.Controller.Namespace)
	if o.Controller.Namespace == metav1.NamespaceAll {
		where = "in any namespace"
	}
	if o.Selector != "" {
		where += fmt.Sprintf(" matching -l %s", o.Selector)
	}
	return func(n int) {
		mu.Lock()
		defer mu.Unlock()
		// A new term's controller counts again from its own start.
		if (started && n == last) || (!started && n > 0) {
			started, last = true, n
			return
		}
		started, last = true, n
		switch n {
		case 0:
			r.note(time.Now(), fmt.Sprintf("no HPA %s: nothing to do; watching for HPAs to appear", where))
		case 1:
			r.note(time.Now(), fmt.Sprintf("watching 1 HPA %s", where))
		default:
			r.note(time.Now(), fmt.Sprintf("watching %d HPAs %s", n, where))
		}
	}
}

// noteOtherWriter says, in a dry run, that another kubectl hpa run holds the Lease: it
// writes these HPAs, from its own history, so what happens may differ from what this run
// shows. A Lease that cannot be read (RBAC, none) says nothing.
func (o *Options) noteOtherWriter(ctx context.Context, kube kubernetes.Interface, r *renderer) {
	if o.LeaseNamespace == "" || o.LeaseName == "" {
		return
	}
	l, err := kube.CoordinationV1().Leases(o.LeaseNamespace).Get(ctx, o.LeaseName, metav1.GetOptions{})
	if err != nil || l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity == "" || l.Spec.RenewTime == nil || l.Spec.LeaseDurationSeconds == nil {
		return
	}
	if time.Since(l.Spec.RenewTime.Time) > time.Duration(*l.Spec.LeaseDurationSeconds)*time.Second {
		return
	}
	since := ""
	if l.Spec.AcquireTime != nil {
		since = " since " + l.Spec.AcquireTime.UTC().Format(time.RFC3339)
	}
	r.note(time.Now(), fmt.Sprintf("dry run beside a writer: Lease %s/%s is held by %s%s, which writes these HPAs from its own history; what happens may differ from the decisions shown here",
		o.LeaseNamespace, o.LeaseName, *l.Spec.HolderIdentity, since))
}
