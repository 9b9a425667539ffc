package output

import (
	"bytes"
	"strings"
	"testing"

	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
)

// As kubectl's: a second object printed is preceded by "---", and an object without its
// apiVersion and kind is refused rather than printed unversioned.
func TestYAMLPrinterSeparatesObjectsAndRefusesOneWithoutKind(t *testing.T) {
	var b bytes.Buffer
	p := &YAMLPrinter{}
	for range 2 {
		if err := p.PrintObj(v1alpha1.NewExplanation("shop", "web"), &b); err != nil {
			t.Fatal(err)
		}
	}
	docs := strings.Split(b.String(), "---\n")
	if len(docs) != 2 || docs[0] != docs[1] || !strings.HasPrefix(docs[0], "apiVersion: hpa.kubectl-hpa.io/v1alpha1\nkind: Explanation\nmetadata:\n  name: web\n  namespace: shop\n") {
		t.Errorf("two explanations printed as %q, want two documents leading with apiVersion, kind and metadata", b.String())
	}
	if err := p.PrintObj(&v1alpha1.Explanation{}, &b); err == nil || !strings.Contains(err.Error(), "missing apiVersion or kind") {
		t.Errorf("an object without apiVersion and kind: error %v", err)
	}
}
