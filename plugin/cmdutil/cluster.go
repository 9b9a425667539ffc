package cmdutil

import (
	"errors"
	"fmt"
	"os"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// errNoKubeconfig is the cause when there is no kubeconfig, no --server and no in-cluster
// configuration: client-go would otherwise fall back to http://localhost:8080 and fail
// with a connection refused that says nothing about the missing file.
var errNoKubeconfig = errors.New("no kubeconfig found")

// RESTConfig is ConfigFlags.ToRESTConfig, refusing to fall back to localhost:8080 when no
// kubeconfig was found. Its failures exit with ExitUsage: the configuration is the input.
func RESTConfig(flags *genericclioptions.ConfigFlags) (*rest.Config, error) {
	if flags.APIServer == nil || *flags.APIServer == "" {
		loader := flags.ToRawKubeConfigLoader()
		raw, err := loader.RawConfig()
		if err == nil && len(raw.Clusters) == 0 {
			if _, icErr := rest.InClusterConfig(); icErr != nil {
				return nil, &ExitError{Code: ExitUsage, Err: noKubeconfigError(loader.ConfigAccess())}
			}
		}
	}
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, &ExitError{Code: ExitUsage, Err: fmt.Errorf("loading the kubeconfig: %w", err)}
	}
	return cfg, nil
}

// noKubeconfigError says where kubeconfigs were looked for and what to do.
func noKubeconfigError(access clientcmd.ConfigAccess) error {
	looked := access.GetLoadingPrecedence()
	if f := access.GetExplicitFile(); f != "" {
		looked = []string{f}
	}
	env := "KUBECONFIG is not set"
	if v, ok := os.LookupEnv(clientcmd.RecommendedConfigPathEnvVar); ok {
		env = fmt.Sprintf("KUBECONFIG=%q", v)
	}
	return fmt.Errorf("%w (looked in %s; %s) and not running in a pod: set KUBECONFIG or pass --kubeconfig FILE, or --server URL with credentials",
		errNoKubeconfig, strings.Join(looked, ", "), env)
}

// CheckAPIServer asks the server for /version, as kubectl version does: it tells a server
// that is not a Kubernetes API server (a plain web server answers 404, which would
// otherwise read as "namespace not found" or "no metrics API") and bad credentials or an
// unreachable address before anything else is attempted. A /version the RBAC of the
// cluster hides (403) proves nothing either way and is let through.
func CheckAPIServer(dc discovery.ServerVersionInterface, host string) error {
	if dc == nil {
		return nil
	}
	_, err := dc.ServerVersion()
	switch {
	case err == nil, apierrors.IsForbidden(err):
		return nil
	case apierrors.IsNotFound(err), isUnparsableVersion(err):
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("the server at %s is not a Kubernetes API server (GET /version: %w): check --server, --context or the kubeconfig", host, err)}
	}
	return APIExitError("asking the API server at "+host+" for its version", err)
}

// isUnparsableVersion is a 200 answer to /version that is not a version (a web page).
func isUnparsableVersion(err error) bool {
	var status apierrors.APIStatus
	return !errors.As(err, &status) && !unreachable(err) && strings.Contains(err.Error(), "unable to parse the server version")
}

// NamespaceMissing returns the wrong-namespace error explain and run give when namespace
// does not exist, or nil (it exists, or whether it does could not be read). explicit is
// whether -n named it (kubectl's enforceNamespace): then asking for -n would not help.
func NamespaceMissing(getErr error, namespace string, explicit bool) error {
	if !apierrors.IsNotFound(getErr) {
		return nil
	}
	return &ExitError{Code: ExitWrongNamespace, Err: errors.New(namespaceMissing(namespace, explicit) + advice(explicit))}
}

// namespaceMissing says that namespace does not exist, and where it came from when -n did
// not name it.
func namespaceMissing(namespace string, explicit bool) string {
	if explicit {
		return fmt.Sprintf("namespace %q does not exist", namespace)
	}
	return fmt.Sprintf("namespace %q, used as no -n was given, does not exist", namespace)
}

// advice is what to do about a missing namespace, nothing else known.
func advice(explicit bool) string {
	if explicit {
		return ": check the name given to -n (kubectl get namespaces lists them)"
	}
	return ": pass the HPA's namespace with -n NAMESPACE"
}

// Namespace is the namespace the command works in (-n, else the kubeconfig's context's) and
// whether it was given, as each command's Complete reads it.
func Namespace(configFlags *genericclioptions.ConfigFlags) (ns string, explicit bool, err error) {
	ns, explicit, err = configFlags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", false, UsageErrorf("reading the namespace from the kubeconfig: %w", err)
	}
	return ns, explicit, nil
}
