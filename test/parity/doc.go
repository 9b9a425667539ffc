// Package parity holds differential tests against upstream Kubernetes v1.37.2, in their own
// module so that k8s.io/kubernetes never becomes a dependency of product code:
//
//   - TestCalculatorParity decides 10,000 random single-metric scenarios with upstream's
//     ReplicaCalculator and with our core's Decide, and requires the same replica count, metric
//     status and error;
//   - TestReconcileParity runs upstream's HorizontalController with fake clients over 500 random
//     HPAs for three rounds each, and requires our Decide and Apply to write the same scale and
//     status (conditions included);
//   - TestValidationParityOnChosenHPAs and TestValidationParityOnRandomHPAs check
//     plugin/validation against the API server's own path on create (v2 defaults, conversion,
//     ValidateHorizontalPodAutoscaler with the registry's options): the same verdict, valid or
//     not, and the same refused field paths with the same error types, on a table of valid and
//     invalid HPAs and 2,000 random ones, with the HPAScaleToZero gate on and off;
//   - BenchmarkUpstreamResourceReplicas measures upstream's calculator on BenchmarkDecide's workload.
//
// Run with `make test-parity`. Every failure prints the seed of each disagreeing case and a dump;
// replay one with `go test -run TestCalculatorParity -seed=N` (or TestReconcileParity; PARITY_SEED=N
// works too) from this directory, or a whole run with -master-seed.
package parity
