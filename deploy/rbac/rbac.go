// Package rbac holds the least-privilege ClusterRoles of this directory as their files are
// written, embedded in the binary: `kubectl hpa rbac` prints them to a user who has the plugin
// but not this repository (krew installs the binary only). kubectl apply -f deploy/rbac/ reads
// only the YAML files, so this file does not get in the way.
package rbac

import _ "embed" // the manifests below

var (
	//go:embed clusterrole-explain.yaml
	explainManifest string
	//go:embed clusterrole-run.yaml
	runManifest string
)

// Role is one ClusterRole a user applies (examples/ holds bindings to adapt, not roles to apply).
type Role struct {
	// Command is the kubectl hpa command whose permissions the role holds: "explain" (which
	// covers run --dry-run=client too) or "run".
	Command string
	// File is the manifest's file name in deploy/rbac/.
	File string
	// Manifest is the file's content, comments included.
	Manifest string
}

// Roles returns the ClusterRoles in the order deploy/rbac/README.md lists them: explain, run.
func Roles() []Role {
	return []Role{
		{Command: "explain", File: "clusterrole-explain.yaml", Manifest: explainManifest},
		{Command: "run", File: "clusterrole-run.yaml", Manifest: runManifest},
	}
}
