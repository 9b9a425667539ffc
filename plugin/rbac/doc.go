// Package rbac is "kubectl hpa rbac": it prints the least-privilege ClusterRoles of
// deploy/rbac/ (embedded from those files), ready for kubectl apply -f -, so that a user who
// installed only the plugin can grant exactly what explain and run use.
package rbac
