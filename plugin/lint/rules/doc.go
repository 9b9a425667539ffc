// Package rules checks HorizontalPodAutoscaler specs, and the objects beside them, for what keeps
// an HPA from doing its job: rules the usual linters (kube-score, Polaris, kube-linter, Datree)
// have, and rules only an exact controller can check (scaling policies, stabilization windows,
// tolerance, requests as the core counts them, other autoscalers and disruption budgets acting on
// the same pods). It is pure: objects in, findings out, whether the objects were read from
// manifests or from a cluster. It imports only the standard library, k8s.io/api,
// k8s.io/apimachinery, k8s.io/utils and this module's controller/replicas and
// plugin/validation.
package rules
