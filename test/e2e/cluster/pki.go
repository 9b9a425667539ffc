package cluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// keyPair is a certificate with its private key, in memory and on disk as PEM.
type keyPair struct {
	cert     *x509.Certificate
	key      crypto.Signer
	certPEM  []byte
	keyPEM   []byte
	certFile string
	keyFile  string
}

// certSpec describes one certificate to issue.
type certSpec struct {
	commonName string
	orgs       []string
	ips        []net.IP
	dnsNames   []string
	usage      []x509.ExtKeyUsage
}

// pki holds every certificate the control plane and its stand-ins use. ECDSA P-256 keys keep
// generation to a few milliseconds, so each cluster gets fresh ones and no openssl is needed.
type pki struct {
	ca             *keyPair
	frontProxyCA   *keyPair
	apiServer      *keyPair
	admin          *keyPair
	plugin         *keyPair
	controllerMgr  *keyPair
	nodeStandIn    *keyPair
	metricsServer  *keyPair
	frontProxy     *keyPair
	kubelet        *keyPair
	heapster       *keyPair
	saKeyFile      string
	saPublicKeyPEM string
}

// Identities of the clients, as the API server (and so the audit log) sees them.
const (
	// PluginUser is the user the plugin's kubeconfig authenticates as; its requests are the
	// ones the e2e tests count in the audit log.
	PluginUser          = "e2e:kubectl-hpa"
	adminUser           = "e2e:admin"
	controllerMgrUser   = "e2e:kube-controller-manager"
	nodeStandInUser     = "e2e:node-standin"
	metricsServerUser   = "e2e:metrics-server"
	pluginGroup         = "e2e:plugin"
	systemMastersGroup  = "system:masters"
	frontProxyClientCN  = "front-proxy-client"
	certValidity        = 7 * 24 * time.Hour
	certBackdate        = time.Hour
	pkiDirPermissions   = 0o700
	pkiFilePermissions  = 0o600
	certFilePermissions = 0o644
)

func newPKI(dir string, ip net.IP) (*pki, error) {
	if err := os.MkdirAll(dir, pkiDirPermissions); err != nil {
		return nil, fmt.Errorf("creating pki directory: %w", err)
	}
	var p pki
	var err error
	if p.ca, err = newCA(dir, "ca", "e2e-ca"); err != nil {
		return nil, err
	}
	if p.frontProxyCA, err = newCA(dir, "front-proxy-ca", "e2e-front-proxy-ca"); err != nil {
		return nil, err
	}
	server := x509.ExtKeyUsageServerAuth
	client := x509.ExtKeyUsageClientAuth
	issue := []struct {
		dst  **keyPair
		ca   *keyPair
		name string
		spec certSpec
	}{
		{&p.apiServer, p.ca, "apiserver", certSpec{
			commonName: "kube-apiserver",
			ips:        []net.IP{net.IPv4(127, 0, 0, 1), ip, net.IPv4(10, 0, 0, 1)},
			dnsNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local"},
			usage:      []x509.ExtKeyUsage{server},
		}},
		{&p.admin, p.ca, "admin", certSpec{commonName: adminUser, orgs: []string{systemMastersGroup}, usage: []x509.ExtKeyUsage{client}}},
		{&p.plugin, p.ca, "plugin", certSpec{commonName: PluginUser, orgs: []string{pluginGroup}, usage: []x509.ExtKeyUsage{client}}},
		{&p.controllerMgr, p.ca, "kube-controller-manager", certSpec{commonName: controllerMgrUser, orgs: []string{systemMastersGroup}, usage: []x509.ExtKeyUsage{client}}},
		{&p.nodeStandIn, p.ca, "node-standin", certSpec{commonName: nodeStandInUser, orgs: []string{systemMastersGroup}, usage: []x509.ExtKeyUsage{client}}},
		{&p.metricsServer, p.ca, "metrics-server", certSpec{commonName: metricsServerUser, orgs: []string{systemMastersGroup}, usage: []x509.ExtKeyUsage{client}}},
		{&p.frontProxy, p.frontProxyCA, "front-proxy-client", certSpec{commonName: frontProxyClientCN, usage: []x509.ExtKeyUsage{client}}},
		{&p.heapster, p.ca, "heapster", certSpec{commonName: heapsterUser, usage: []x509.ExtKeyUsage{client}}},
		{&p.kubelet, p.ca, "kubelet", certSpec{commonName: "e2e-kubelet", ips: []net.IP{ip}, usage: []x509.ExtKeyUsage{server}}},
	}
	for _, is := range issue {
		kp, err := issueCert(dir, is.name, is.ca, is.spec)
		if err != nil {
			return nil, err
		}
		*is.dst = kp
	}
	if err := p.writeServiceAccountKey(dir); err != nil {
		return nil, err
	}
	return &p, nil
}

func (p *pki) writeServiceAccountKey(dir string) error {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return fmt.Errorf("generating service account key: %w", err)
	}
	der, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return fmt.Errorf("encoding service account key: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return fmt.Errorf("encoding service account public key: %w", err)
	}
	p.saKeyFile = filepath.Join(dir, "sa.key")
	if err := os.WriteFile(p.saKeyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: der}), pkiFilePermissions); err != nil {
		return fmt.Errorf("writing service account key: %w", err)
	}
	p.saPublicKeyPEM = filepath.Join(dir, "sa.pub")
	if err := os.WriteFile(p.saPublicKeyPEM, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), certFilePermissions); err != nil {
		return fmt.Errorf("writing service account public key: %w", err)
	}
	return nil
}

func newCA(dir, name, commonName string) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating %s key: %w", name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.Add(-certBackdate),
		NotAfter:              now.Add(certValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	return finishCert(dir, name, tmpl, tmpl, key, key)
}

func issueCert(dir, name string, ca *keyPair, spec certSpec) (*keyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, fmt.Errorf("generating %s key: %w", name, err)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: spec.commonName, Organization: spec.orgs},
		NotBefore:    now.Add(-certBackdate),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  spec.usage,
		IPAddresses:  spec.ips,
		DNSNames:     spec.dnsNames,
	}
	return finishCert(dir, name, tmpl, ca.cert, key, ca.key)
}

func finishCert(dir, name string, tmpl, parent *x509.Certificate, key *ecdsa.PrivateKey, signer crypto.Signer) (*keyPair, error) {
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, &key.PublicKey, signer)
	if err != nil {
		return nil, fmt.Errorf("signing %s certificate: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing %s certificate: %w", name, err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, fmt.Errorf("encoding %s key: %w", name, err)
	}
	kp := &keyPair{
		cert:     cert,
		key:      key,
		certPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		certFile: filepath.Join(dir, name+".crt"),
		keyFile:  filepath.Join(dir, name+".key"),
	}
	if err := os.WriteFile(kp.certFile, kp.certPEM, certFilePermissions); err != nil {
		return nil, fmt.Errorf("writing %s certificate: %w", name, err)
	}
	if err := os.WriteFile(kp.keyFile, kp.keyPEM, pkiFilePermissions); err != nil {
		return nil, fmt.Errorf("writing %s key: %w", name, err)
	}
	return kp, nil
}

// serial returns a random 128-bit serial number; crypto/rand never fails on Linux.
func serial() *big.Int {
	n, _ := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	return n
}
