// Package options is "kubectl hpa options": the flags every command accepts (the kubeconfig's,
// cluster access, klog's -v and --vmodule), listed once here instead of under each command's
// help, as kubectl options lists kubectl's (k8s.io/kubectl/pkg/cmd/options).
package options
