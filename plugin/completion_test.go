package plugin

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
	o := NewExplainOptions(configFlags, streams)
	o.newKube = newKube
	root.AddCommand(newCmdExplain(o), NewCmdCompletion(streams))
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

func TestCompletionPrintsAScriptPerShell(t *testing.T) {
	for shell, marker := range map[string]string{"bash": "__start_kubectl-hpa", "zsh": "#compdef kubectl-hpa", "fish": "complete -c kubectl-hpa", "powershell": "Register-ArgumentCompleter"} {
		t.Run(shell, func(t *testing.T) {
			r := runRoot(t, "completion", shell)
			if r.code != 0 || !strings.Contains(r.stdout, marker) {
				t.Errorf("exit %d, output lacks %q; stderr %s", r.code, marker, r.stderr)
			}
		})
	}
	if r := runRoot(t, "completion", "tcsh"); r.code != ExitUsage {
		t.Errorf("unknown shell: exit %d, want %d", r.code, ExitUsage)
	}
}

// runRoot runs the real command tree through Execute.
func runRoot(t *testing.T, args ...string) result {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	code := Execute(t.Context(), streams, args, nil)
	return result{stdout: out.String(), stderr: errOut.String(), code: code}
}

func TestSimulateCompletesHPANamesAndFiles(t *testing.T) {
	kube := kubefake.NewClientset(hpaNamed("shop", "web"), hpaNamed("shop", "api"))
	var out bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &bytes.Buffer{}}
	configFlags := genericclioptions.NewConfigFlags(true)
	root := &cobra.Command{Use: "kubectl-hpa", SilenceUsage: true, SilenceErrors: true}
	configFlags.AddFlags(root.PersistentFlags())
	o := NewSimulateOptions(configFlags, streams)
	o.newKube = func() (kubernetes.Interface, string, error) { return kube, "shop", nil }
	root.AddCommand(newCmdSimulate(o))
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
