package cmdutil

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/kubernetes"
)

// KubeFromFlags returns a client and the namespace the kubeconfig flags select.
func KubeFromFlags(configFlags *genericclioptions.ConfigFlags) func() (kubernetes.Interface, string, error) {
	return func() (kubernetes.Interface, string, error) {
		cfg, err := RESTConfig(configFlags)
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

// CompleteHPANames completes the first argument with the names of the HPAs in the
// namespace the kubeconfig flags select.
func CompleteHPANames(newKube func() (kubernetes.Interface, string, error)) func(*cobra.Command, []string, string) ([]string, cobra.ShellCompDirective) {
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
	slices.Sort(out)
	return out, nil
}
