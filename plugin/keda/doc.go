// Package keda reads KEDA's ScaledObjects (keda.sh/v1alpha1, as unstructured objects: no KEDA
// module is imported) and says what KEDA adds around an HPA one of them owns: which trigger
// feeds each metric, a metric KEDA answers with its fallback value, the counts KEDA scales to
// itself (0 to 1 and back), and a pause in force. Every fact is KEDA v2.20's behaviour, read
// from its source (controllers/keda/hpa.go, pkg/fallback/fallback.go,
// pkg/scaling/executor/scale_scaledobjects.go); nothing here talks to a cluster.
package keda
