package run

import (
	"bytes"
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

// notesOptions are run options for namespace shop writing to buffers (stdout, stderr).
func notesOptions(output, selector string) (*Options, *bytes.Buffer, *bytes.Buffer) {
	var out, errOut bytes.Buffer
	o := NewOptions(genericclioptions.NewConfigFlags(false), genericiooptions.IOStreams{Out: &out, ErrOut: &errOut})
	o.Output, o.Selector = output, selector
	o.Controller.Namespace, o.LeaseNamespace = "shop", "shop"
	o.isTerminal = func() bool { return false }
	return o, &out, &errOut
}

var rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ`)

func untimed(s string) []string {
	s = rfc3339.ReplaceAllString(s, "TIME")
	if s == "" {
		return nil
	}
	return strings.Split(strings.TrimSuffix(s, "\n"), "\n")
}

func TestRunSaysWhenItWatchesNoHPAAndEveryChangeAfter(t *testing.T) {
	tests := []struct {
		name     string
		selector string
		counts   []int
		want     []string
	}{
		{"an empty namespace is said at the start, and each change after", "", []int{0, 1, 1, 0},
			[]string{`TIME no HPA in namespace "shop": nothing to do; watching for HPAs to appear`, `TIME watching 1 HPA in namespace "shop"`, `TIME no HPA in namespace "shop": nothing to do; watching for HPAs to appear`}},
		{"a selector matching nothing names the selector", "team=web", []int{0},
			[]string{`TIME no HPA in namespace "shop" matching -l team=web: nothing to do; watching for HPAs to appear`}},
		{"HPAs at the start are not a note, a change is", "", []int{2, 2, 3},
			[]string{`TIME watching 3 HPAs in namespace "shop"`}},
		{"a new Lease term counting the same again says nothing", "", []int{0, 0},
			[]string{`TIME no HPA in namespace "shop": nothing to do; watching for HPAs to appear`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, out, _ := notesOptions("", tt.selector)
			count := o.hpaCountNotes(newRenderer(o, "metrics.k8s.io/v1beta1", func() {}))
			for _, n := range tt.counts {
				count(n)
			}
			if diff := cmp.Diff(tt.want, untimed(out.String())); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunNotesGoToStderrWithOutputJSON(t *testing.T) {
	o, out, errOut := notesOptions("json", "")
	o.hpaCountNotes(newRenderer(o, "metrics.k8s.io/v1beta1", func() {}))(0)
	if out.Len() != 0 {
		t.Errorf("stdout is for Explanations only, got %q", out.String())
	}
	if want := `kubectl hpa run: no HPA in namespace "shop": nothing to do; watching for HPAs to appear` + "\n"; errOut.String() != want {
		t.Errorf("stderr %q, want %q", errOut.String(), want)
	}
}

func TestADryRunSaysWhenAnotherRunHoldsTheLease(t *testing.T) {
	acquired := metav1.NewMicroTime(time.Date(2026, 11, 30, 11, 0, 0, 0, time.UTC))
	lease := func(holder string, renewed time.Time) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "kubectl-hpa"},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(15)),
				AcquireTime: &acquired, RenewTime: ptr.To(metav1.NewMicroTime(renewed))}}
	}
	tests := []struct {
		name  string
		lease *coordinationv1.Lease
		want  []string
	}{
		{"a holder renewing the Lease", lease("ops-1_abc", time.Now()),
			[]string{"TIME dry run beside a writer: Lease shop/kubectl-hpa is held by ops-1_abc since TIME, which writes these HPAs from its own history; what happens may differ from the decisions shown here"}},
		{"a Lease that expired says nothing", lease("ops-1_abc", time.Now().Add(-time.Hour)), nil},
		{"a released Lease says nothing", lease("", time.Now()), nil},
		{"no Lease says nothing", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			kube := fake.NewClientset()
			if tt.lease != nil {
				kube = fake.NewClientset(tt.lease)
			}
			o, out, _ := notesOptions("", "")
			o.noteOtherWriter(context.Background(), kube, newRenderer(o, "metrics.k8s.io/v1beta1", func() {}))
			if diff := cmp.Diff(tt.want, untimed(out.String())); diff != "" {
				t.Errorf("notes (-want +got):\n%s", diff)
			}
		})
	}
}
