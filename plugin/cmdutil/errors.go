package cmdutil

import (
	"crypto/tls"
	"errors"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// APIExitError maps an API error met while doing something to an exit code, keeping the
// message actionable. doing is lowercase ("getting horizontalpodautoscaler shop/web").
func APIExitError(doing string, err error) *ExitError {
	switch {
	case apierrors.IsForbidden(err):
		if perm, user, ok := deniedPermission(err); ok {
			return &ExitError{Code: ExitForbidden, Err: &forbiddenError{doing: doing, perm: perm, user: user, role: ExplainRole, err: err}}
		}
		return &ExitError{Code: ExitForbidden, Err: fmt.Errorf("%s: %w (ask your cluster admin for get/list on horizontalpodautoscalers, pods, events, the target's scale subresource and the metrics APIs)", doing, err)}
	case apierrors.IsUnauthorized(err):
		return &ExitError{Code: ExitUnauthorized, Err: fmt.Errorf("%s: %w (check your kubeconfig credentials, --context and --user)", doing, err)}
	}
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %w (the API server's certificate is not trusted by the kubeconfig's certificate-authority: fix certificate-authority or certificate-authority-data; verification is never skipped unless the kubeconfig sets insecure-skip-tls-verify)", doing, err)}
	}
	if unreachable(err) {
		return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %w (is the API server reachable? check the kubeconfig, --context or --server)", doing, err)}
	}
	return &ExitError{Code: ExitFailure, Err: fmt.Errorf("%s: %w", doing, err)}
}

// unreachable reports whether err is a failure to reach the API server at all (network, TLS),
// rather than an answer from it.
func unreachable(err error) bool {
	var urlErr *url.Error
	return errors.As(err, &urlErr)
}

// ClusterAccessError is err classified by APIExitError when it is about reaching the
// cluster at all (credentials, RBAC, network, TLS), and nil otherwise: such a failure met
// while doing something else (choosing a metrics source) must be reported as what it is.
func ClusterAccessError(doing string, err error) error {
	if apierrors.IsUnauthorized(err) || apierrors.IsForbidden(err) || unreachable(err) {
		return APIExitError(doing, err)
	}
	return nil
}
