package explain

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	kubefake "k8s.io/client-go/kubernetes/fake"

	"github.com/kubectl-hpa/kubectl-hpa/internal/testbuild"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/completion"
)

func hpaNamed(ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA(ns, name)
}

// complete runs cobra's hidden completion command the way kubectl_complete-hpa does.
func complete(t *testing.T, newKube func() (kubernetes.Interface, string, error), args ...string) string {
	t.Helper()
	var out bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &bytes.Buffer{}}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewOptions(configFlags, streams)
	o.newKube = newKube
	root.AddCommand(newCmd(o), completion.NewCmdCompletion(streams))
	root.SetOut(&out)
	root.SetErr(&bytes.Buffer{})
	root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, args...))
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestExplainCompletesHPANamesOfTheNamespace(t *testing.T) {
	kube := kubefake.NewClientset(hpaNamed("shop", "web"), hpaNamed("shop", "worker"), hpaNamed("shop", "api"), hpaNamed("other", "web-other"))
	newKube := func() (kubernetes.Interface, string, error) { return kube, "shop", nil }
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"prefix filters and sorts", []string{"explain", "w"}, "web\nworker\n:4\n"},
		{"empty prefix lists all", []string{"explain", ""}, "api\nweb\nworker\n:4\n"},
		{"second argument completes nothing", []string{"explain", "web", ""}, ":4\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := complete(t, newKube, tt.args...)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("completion (-want +got):\n%s", diff)
			}
		})
	}
	for _, a := range kube.Actions() {
		if a.GetVerb() != "list" {
			t.Errorf("completion did %s %s", a.GetVerb(), a.GetResource())
		}
	}
}

func TestExplainCompletionReportsAnErrorDirectiveWhenTheClusterIsUnreachable(t *testing.T) {
	got := complete(t, func() (kubernetes.Interface, string, error) { return nil, "", errors.New("no kubeconfig") }, "explain", "")
	if !strings.HasPrefix(got, ":1\n") {
		t.Errorf("got %q, want the error directive :1", got)
	}
}
