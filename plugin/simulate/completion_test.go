package simulate

import (
	"bytes"
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
)

func hpaNamed(ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	return testbuild.HPA(ns, name)
}

func TestSimulateCompletesHPANamesAndFiles(t *testing.T) {
	kube := kubefake.NewClientset(hpaNamed("shop", "web"), hpaNamed("shop", "api"))
	var out bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &bytes.Buffer{}}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewOptions(configFlags, streams)
	o.newKube = func() (kubernetes.Interface, string, error) { return kube, "shop", nil }
	root.AddCommand(newCmd(o))
	root.SetOut(&out)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"simulate", "w"}, "web\n:4\n"},
		{[]string{"simulate", "web", "--load", ""}, "csv\nyaml\nyml\n:8\n"},
		{[]string{"simulate", "web", "--plot", ""}, "svg\npng\n:8\n"},
	} {
		out.Reset()
		root.SetArgs(append([]string{cobra.ShellCompRequestCmd}, tt.args...))
		if err := root.Execute(); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.want, out.String()); diff != "" {
			t.Errorf("%v (-want +got):\n%s", tt.args, diff)
		}
	}
}
