package cluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// KEDADirEnv names the directory of KEDA's module (github.com/kedacore/keda/v2) in the module
// cache, which make test-e2e downloads (KEDA_VERSION) before the tests enter their network
// namespace. KEDA's operator itself does not run here: its go.mod (v2.20.2) requires 354 modules.
const KEDADirEnv = "KUBECTL_HPA_KEDA_DIR"

// KEDAVersion is the version of KEDA's module whose CRD the tests install.
func KEDAVersion() string {
	_, v, _ := strings.Cut(os.Getenv(KEDADirEnv), "@")
	return v
}

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// InstallKEDACRD installs KEDA's own ScaledObject CRD, as its module ships it
// (config/crd/bases/keda.sh_scaledobjects.yaml of the module KEDADirEnv names), and returns once keda.sh/v1alpha1 is served.
func (c *Cluster) InstallKEDACRD(ctx context.Context) error {
	dir := os.Getenv(KEDADirEnv)
	if dir == "" {
		return fmt.Errorf("%s is not set: run the tests with make test-e2e, which downloads KEDA's module", KEDADirEnv)
	}
	doc, err := os.ReadFile(filepath.Join(dir, "config", "crd", "bases", "keda.sh_scaledobjects.yaml"))
	if err != nil {
		return err
	}
	crd := &unstructured.Unstructured{}
	j, err := yaml.YAMLToJSON(doc)
	if err != nil {
		return fmt.Errorf("KEDA's ScaledObject CRD: %w", err)
	}
	if err := crd.UnmarshalJSON(j); err != nil {
		return fmt.Errorf("KEDA's ScaledObject CRD: %w", err)
	}
	dyn, err := c.Dynamic()
	if err != nil {
		return err
	}
	if _, err := dyn.Resource(crdGVR).Create(ctx, crd, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating KEDA's ScaledObject CRD: %w", err)
	}
	return c.waitFor(ctx, "keda.sh/v1alpha1 served", time.Minute, func(context.Context) error {
		_, err := c.client.Discovery().ServerResourcesForGroupVersion("keda.sh/v1alpha1")
		return err
	})
}
