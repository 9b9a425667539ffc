package cluster

import (
	"crypto/x509"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Users outside the plugin's group: unlike KubeconfigFor's, they hold no permission but those
// a test binds to them, which is how least-privilege roles are put to the test.

// RbacUserKubeconfig writes (once) a kubeconfig authenticating with a client certificate as
// user in groups (never the plugin's group, so no cluster-admin binding applies). The file
// name is derived from user, so each user gets one file.
func (c *Cluster) RbacUserKubeconfig(user string, groups ...string) (string, error) {
	for _, g := range groups {
		if g == pluginGroup || g == systemMastersGroup {
			return "", fmt.Errorf("cluster: user %s may not be in group %s, which is bound to cluster-admin", user, g)
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	name := "rbac-user-" + strings.NewReplacer(":", "-", "/", "-").Replace(user)
	path := c.kubeconfig(name)
	if _, err := os.Stat(path); err == nil {
		return path, nil
	}
	kp, err := issueCert(filepath.Join(c.dir, "pki"), name, c.pki.ca, certSpec{
		commonName: user, orgs: groups, usage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil {
		return "", err
	}
	return path, c.writeKubeconfig(name, kp)
}

// InClusterFiles writes what the kubelet mounts into a pod for its ServiceAccount (token,
// ca.crt, namespace) into dir, and returns the environment that points client-go's
// in-cluster configuration at this cluster's API server.
func (c *Cluster) InClusterFiles(dir, namespace, token string) ([]string, error) {
	for name, data := range map[string][]byte{"token": []byte(token), "ca.crt": c.pki.ca.certPEM, "namespace": []byte(namespace)} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, fmt.Errorf("cluster: writing the in-cluster %s: %w", name, err)
		}
	}
	return []string{"KUBERNETES_SERVICE_HOST=127.0.0.1", "KUBERNETES_SERVICE_PORT=" + strconv.Itoa(c.cfg.APIPort)}, nil
}

// RbacTokenKubeconfig writes a kubeconfig named name that authenticates with a bearer token
// (a ServiceAccount's, from a TokenRequest), trusts the cluster's CA and defaults to namespace,
// as a pod's in-cluster configuration does.
func (c *Cluster) RbacTokenKubeconfig(name, namespace, token string) (string, error) {
	cfg := clientcmdapi.NewConfig()
	server := "https://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.cfg.APIPort))
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: c.pki.ca.certPEM}
	cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: token}
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: name, Namespace: namespace}
	cfg.CurrentContext = "e2e"
	path := c.kubeconfig("rbac-token-" + name)
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		return "", fmt.Errorf("cluster: writing %s token kubeconfig: %w", name, err)
	}
	return path, nil
}
