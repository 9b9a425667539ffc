package plugin

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
)

const completionLong = `Print a shell completion script for kubectl-hpa.

kubectl (1.26 and later) completes plugin commands by running kubectl_complete-hpa from PATH,
which this project ships (krew installs it). To complete the kubectl-hpa binary itself, load
the script this command prints:

  bash:  source <(kubectl-hpa completion bash)
  zsh:   kubectl-hpa completion zsh > "${fpath[1]}/_kubectl-hpa"
  fish:  kubectl-hpa completion fish | source`

// NewCmdCompletion builds "kubectl hpa completion bash|zsh|fish|powershell".
func NewCmdCompletion(streams genericiooptions.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:                   "completion bash|zsh|fish|powershell",
		DisableFlagsInUseLine: true,
		Short:                 "Print a shell completion script",
		Long:                  completionLong,
		ValidArgs:             []string{"bash", "zsh", "fish", "powershell"},
		Args: func(cmd *cobra.Command, args []string) error {
			switch {
			case len(args) == 0:
				return usageErrorf("a shell is required: kubectl hpa completion bash|zsh|fish|powershell")
			case len(args) > 1:
				return usageErrorf("unexpected argument %q: kubectl hpa completion takes one shell", args[1])
			}
			return cobra.OnlyValidArgs(cmd, args)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			root := cmd.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(streams.Out, true)
			case "zsh":
				return root.GenZshCompletion(streams.Out)
			case "fish":
				return root.GenFishCompletion(streams.Out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(streams.Out)
			}
			return usageErrorf("unknown shell %q: use bash, zsh, fish or powershell", args[0])
		},
	}
	withUsageExitCodes(cmd)
	return cmd
}

// kubeFromFlags returns a client and the namespace the kubeconfig flags select.
func kubeFromFlags(configFlags *genericclioptions.ConfigFlags) func() (kubernetes.Interface, string, error) {
	return func() (kubernetes.Interface, string, error) {
		cfg, err := restConfig(configFlags)
		if err != nil {
			return nil, "", err
		}
		ns, _, err := configFlags.ToRawKubeConfigLoader().Namespace()
		if err != nil {
			return nil, "", err
		}
		kube, err := kubernetes.NewForConfig(cfg)
		return kube, ns, err
	}
}

// completeHPANames completes the first argument with the names of the HPAs in the
// namespace the kubeconfig flags select.
func completeHPANames(newKube func() (kubernetes.Interface, string, error)) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
	return func(cmd *cobra.Command, args []string, toComplete string) ([]string, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		kube, ns, err := newKube()
		if err != nil {
			cobra.CompDebugln(fmt.Sprintf("building a client: %v", err), true)
			return nil, cobra.ShellCompDirectiveError
		}
		ctx := cmd.Context()
		if ctx == nil {
			ctx = context.Background()
		}
		names, err := hpaNames(ctx, kube, ns, toComplete)
		if err != nil {
			cobra.CompDebugln(fmt.Sprintf("listing HPAs in %s: %v", ns, err), true)
			return nil, cobra.ShellCompDirectiveError
		}
		return names, cobra.ShellCompDirectiveNoFileComp
	}
}

// hpaNames lists the names of HPAs in namespace starting with prefix, sorted.
func hpaNames(ctx context.Context, kube kubernetes.Interface, namespace, prefix string) ([]string, error) {
	list, err := kube.AutoscalingV2().HorizontalPodAutoscalers(namespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	var out []string
	for _, h := range list.Items {
		if strings.HasPrefix(h.Name, prefix) {
			out = append(out, h.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}
