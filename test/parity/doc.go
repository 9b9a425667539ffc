// Package parity holds differential tests: random scenarios are decided both by upstream's
// HPA replica calculator (k8s.io/kubernetes v1.37.2) and by kubectl-hpa's decision core, and
// every result must agree. It lives in its own module so that k8s.io/kubernetes never becomes
// a dependency of product code.
//
// Run with `make test-parity`; replay one scenario with `go test -run TestCalculatorParity -seed=N`
// (or PARITY_SEED=N) from this directory.
package parity
