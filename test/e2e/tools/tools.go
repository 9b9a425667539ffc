//go:build tools

// Package tools pins the control-plane commands built by hack/build-testbin.sh.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
