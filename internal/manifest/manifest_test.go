package manifest_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kubectl-hpa/kubectl-hpa/internal/manifest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
)

const hpa = `apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: web
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: web
  maxReplicas: 10
`

func kinds(objs []manifest.Object) string {
	var out []string
	for _, o := range objs {
		switch t := o.Object.(type) {
		case *autoscalingv2.HorizontalPodAutoscaler:
			out = append(out, "HPA:"+t.Name)
		case *appsv1.Deployment:
			out = append(out, "Deployment:"+t.Name)
		case *appsv1.StatefulSet:
			out = append(out, "StatefulSet:"+t.Name)
		case *policyv1.PodDisruptionBudget:
			out = append(out, "PDB:"+t.Name)
		case *unstructured.Unstructured:
			out = append(out, t.GetKind()+":"+t.GetName())
		}
	}
	return strings.Join(out, " ")
}

func TestDecode(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
		lines            []int
	}{
		{"one HPA", hpa, "HPA:web", []int{1}},
		{"several documents, empty ones and other kinds skipped", "---\n" + hpa + "---\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n---\napiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n", "HPA:web StatefulSet:db", []int{2, 19}},
		{"a List's items", "apiVersion: v1\nkind: List\nitems:\n- apiVersion: policy/v1\n  kind: PodDisruptionBudget\n  metadata:\n    name: web\n- apiVersion: keda.sh/v1alpha1\n  kind: ScaledObject\n  metadata:\n    name: web\n", "PDB:web ScaledObject:web", []int{4, 8}},
		{"JSON", `{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"}}`, "Deployment:web", []int{1}},
		{"an unknown field of another kind is not read", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  futureField: 1\n", "Deployment:web", []int{1}},
		{"comments only", "# nothing\n", "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, err := manifest.Decode("f.yaml", []byte(tc.data))
			if err != nil {
				t.Fatal(err)
			}
			if got := kinds(objs); got != tc.want {
				t.Errorf("objects %q, want %q", got, tc.want)
			}
			for i, o := range objs {
				if i < len(tc.lines) && o.Line != tc.lines[i] {
					t.Errorf("object %d at line %d, want %d", i, o.Line, tc.lines[i])
				}
			}
		})
	}
}

func TestDecodeErrorsNameFileLineAndField(t *testing.T) {
	for _, tc := range []struct {
		name, data, want string
	}{
		{"an unknown HPA field", "---\n" + strings.Replace(hpa, "  maxReplicas: 10\n", "  maxReplicas: 10\n  minReplica: 2\n", 1), `f.yaml:12: HorizontalPodAutoscaler: unknown field "spec.minReplica" (field names are case-sensitive)`},
		{"a mistyped HPA field", strings.Replace(hpa, "maxReplicas: 10", "maxReplicas: ten", 1), "f.yaml:10: HorizontalPodAutoscaler: field spec.maxReplicas: a string where a int32 belongs"},
		{"a syntax error", "apiVersion: v1\nkind: [\n", "f.yaml:2: did not find expected node content"},
		{"no kind", "apiVersion: v1\nmetadata: {}\n", "f.yaml:1: an object without apiVersion or kind"},
		{"a scalar document", "hello\n", "f.yaml:1: a document that is not an object (a mapping with apiVersion and kind)"},
		{"an older HPA version", strings.Replace(hpa, "autoscaling/v2", "autoscaling/v2beta2", 1), "f.yaml:1: apiVersion autoscaling/v2beta2: lint reads autoscaling/v2 HorizontalPodAutoscalers (the API server serves every HPA as autoscaling/v2; write this one so)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := manifest.Decode("f.yaml", []byte(tc.data))
			var me *manifest.Error
			if !errors.As(err, &me) {
				t.Fatalf("error %v, want a *manifest.Error", err)
			}
			if err.Error() != tc.want {
				t.Errorf("error\n%s\nwant\n%s", err, tc.want)
			}
		})
	}
}

func TestReadDirectoriesFilesAndStdin(t *testing.T) {
	dir := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(dir, "b"), 0o755))
	must(os.WriteFile(filepath.Join(dir, "a.yaml"), []byte(hpa), 0o644))
	must(os.WriteFile(filepath.Join(dir, "b", "c.yml"), []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n"), 0o644))
	must(os.WriteFile(filepath.Join(dir, "b", "notes.txt"), []byte("not: read\n"), 0o644))
	objs, err := manifest.Read([]string{dir, "-"}, strings.NewReader("apiVersion: apps/v1\nkind: StatefulSet\nmetadata:\n  name: db\n"))
	must(err)
	if got, want := kinds(objs), "HPA:web Deployment:web StatefulSet:db"; got != want {
		t.Errorf("objects %q, want %q", got, want)
	}
	if objs[1].File != filepath.Join(dir, "b", "c.yml") || objs[2].File != "-" {
		t.Errorf("files %q %q", objs[1].File, objs[2].File)
	}
	if _, err := manifest.Read([]string{filepath.Join(dir, "missing.yaml")}, nil); err == nil || !strings.Contains(err.Error(), "missing.yaml: no such file or directory") {
		t.Errorf("a missing file: %v", err)
	}
}

// FuzzDecode: any input decodes to objects of the kinds lint reads, each with a line inside the
// input, which lint's rules check, or to one *manifest.Error naming the file; never a panic.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(hpa))
	f.Add([]byte("apiVersion: v1\nkind: List\nitems:\n- apiVersion: apps/v1\n  kind: Deployment\n  metadata: {name: a}\n"))
	f.Add([]byte("---\n---\n{}\n"))
	f.Add([]byte("a: &x [*x]\n"))
	f.Add([]byte("apiVersion: autoscaling/v2\nkind: HorizontalPodAutoscaler\nmetadata: {name: a}\nspec:\n  maxReplicas: 2147483647\n  behavior:\n    scaleUp:\n      policies: [{type: Pods, value: 1, periodSeconds: 1800}, {type: Percent, value: 1, periodSeconds: 1800}]\n    scaleDown:\n      policies: [{type: Percent, value: 1, periodSeconds: 1800}]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		objs, err := manifest.Decode("fuzz.yaml", data)
		if err != nil {
			var me *manifest.Error
			if !errors.As(err, &me) || me.File != "fuzz.yaml" {
				t.Fatalf("error %v is not a *manifest.Error naming the file", err)
			}
			return
		}
		lines := strings.Count(string(data), "\n") + 1
		var read rules.Objects
		for _, o := range objs {
			if o.Object == nil || o.Line < 1 || o.Line > lines {
				t.Fatalf("object %T at line %d of %d", o.Object, o.Line, lines)
			}
			if !read.Add(o.Object) {
				t.Fatalf("object %T is of a kind lint does not read", o.Object)
			}
		}
		// What the reader accepts, lint's rules check without a panic (any HPA spec, however
		// large its counts: their loops are bounded).
		rules.Check(read, rules.DefaultOptions())
	})
}
