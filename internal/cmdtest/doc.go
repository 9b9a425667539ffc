// Package cmdtest holds what the tests of more than one kubectl hpa command share: a cluster
// of fakes with one HPA, its Deployment's scale, pods and metrics (Fixture), a kubeconfig, a
// buffer safe to read while a command writes to it, and golden files. Tests only.
package cmdtest
