// Package manifest reads Kubernetes manifests strictly for kubectl hpa lint: files, directories
// (recursively, *.yaml, *.yml and *.json) and standard input; several documents per file
// (Kustomize's and Helm's rendered output) and List kinds. It decodes the kinds lint reads and
// skips the others. An HPA with a field autoscaling/v2 does not have, or a document that does
// not parse, is an error naming the file, the line and the field.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/internal/fileerr"
	"github.com/kubectl-hpa/kubectl-hpa/internal/yamlline"
)

// Stdin is the path that names standard input.
const Stdin = "-"

// Object is one object read, and where it was read from.
type Object struct {
	// Object is an *autoscalingv2.HorizontalPodAutoscaler, *appsv1.Deployment,
	// *appsv1.StatefulSet, *appsv1.ReplicaSet, *policyv1.PodDisruptionBudget, or an
	// *unstructured.Unstructured VerticalPodAutoscaler (autoscaling.k8s.io) or KEDA
	// ScaledObject (keda.sh).
	Object runtime.Object
	// File is the path it was read from ("-" for standard input), Line the line its
	// document (or List item) starts at.
	File string
	Line int
	// Node is its YAML, for the line of a field (LineOf).
	Node *yaml.Node
}

// LineOf is the line of an API field path (spec.metrics[0].resource) in the object, or the
// object's first line.
func (o Object) LineOf(fieldPath string) int {
	if o.Node == nil {
		return o.Line
	}
	return yamlline.OfField(o.Node, fieldPath)
}

// Error is a manifest that cannot be read: its file, line (0 when none) and what is wrong.
type Error = fileerr.Error

// Read reads every path in order: a file, a directory (its *.yaml, *.yml and *.json files,
// recursively, in lexical order) or "-" for stdin. The first error ends the read.
func Read(paths []string, stdin io.Reader) ([]Object, error) {
	var out []Object
	for _, p := range paths {
		if p == Stdin {
			data, err := io.ReadAll(stdin)
			if err != nil {
				return nil, &Error{File: p, Err: fmt.Errorf("reading standard input: %w", err)}
			}
			objs, err := Decode(p, data)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
			continue
		}
		files, err := filesOf(p)
		if err != nil {
			return nil, err
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, &Error{File: f, Err: errors.New(unwrapPathError(err))}
			}
			objs, err := Decode(f, data)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

// filesOf is p itself when it is a file, or its manifests when it is a directory.
func filesOf(p string) ([]string, error) {
	info, err := os.Stat(p)
	if err != nil {
		return nil, &Error{File: p, Err: errors.New(unwrapPathError(err))}
	}
	if !info.IsDir() {
		return []string{p}, nil
	}
	var files []string
	err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		switch strings.ToLower(filepath.Ext(path)) {
		case ".yaml", ".yml", ".json":
			if !d.IsDir() {
				files = append(files, path)
			}
		}
		return nil
	})
	if err != nil {
		return nil, &Error{File: p, Err: errors.New(unwrapPathError(err))}
	}
	if len(files) == 0 {
		return nil, &Error{File: p, Err: errors.New("no *.yaml, *.yml or *.json file in the directory")}
	}
	return files, nil
}

func unwrapPathError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Decode reads the documents of one file's data, named file in errors.
func Decode(file string, data []byte) ([]Object, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var out []Object
	for {
		var doc yaml.Node
		err := dec.Decode(&doc)
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			line, msg := yamlline.OfSyntaxError(err)
			l := 0
			_, _ = fmt.Sscan(line, &l)
			return nil, &Error{File: file, Line: l, Err: errors.New(msg)}
		}
		objs, err := decodeNode(file, &doc)
		if err != nil {
			return nil, err
		}
		out = append(out, objs...)
	}
}

// decodeNode decodes one document or List item.
func decodeNode(file string, n *yaml.Node) ([]Object, error) {
	if n.Kind == yaml.DocumentNode {
		if len(n.Content) == 0 {
			return nil, nil
		}
		n = n.Content[0]
	}
	if n.Kind == yaml.ScalarNode && n.Tag == "!!null" {
		// An empty document: Helm renders them for disabled templates.
		return nil, nil
	}
	if n.Kind != yaml.MappingNode {
		return nil, &Error{File: file, Line: n.Line, Err: errors.New("a document that is not an object (a mapping with apiVersion and kind)")}
	}
	var tm struct {
		APIVersion string `json:"apiVersion"`
		Kind       string `json:"kind"`
	}
	data, err := toJSON(n)
	if err != nil {
		return nil, &Error{File: file, Line: n.Line, Err: err}
	}
	if err := sigsyaml.Unmarshal(data, &tm); err != nil {
		line, msg := yamlline.OfDecodeError(n, &tm, err)
		return nil, &Error{File: file, Line: line, Err: errors.New(msg)}
	}
	if tm.APIVersion == "" || tm.Kind == "" {
		return nil, &Error{File: file, Line: n.Line, Err: errors.New("an object without apiVersion or kind")}
	}
	gv, err := schema.ParseGroupVersion(tm.APIVersion)
	if err != nil {
		return nil, &Error{File: file, Line: yamlline.OfPath(n, "apiVersion"), Err: fmt.Errorf("apiVersion %q: %w", tm.APIVersion, err)}
	}
	if strings.HasSuffix(tm.Kind, "List") {
		return decodeList(file, n)
	}
	obj, strict, err := newObject(gv, tm.Kind)
	if err != nil {
		return nil, &Error{File: file, Line: yamlline.OfPath(n, "apiVersion"), Err: err}
	}
	if obj == nil {
		return nil, nil
	}
	unmarshal := sigsyaml.Unmarshal
	if strict {
		unmarshal = sigsyaml.UnmarshalStrict
	}
	if err := unmarshal(data, obj); err != nil {
		line, msg := yamlline.OfDecodeError(n, obj, err)
		return nil, &Error{File: file, Line: line, Err: fmt.Errorf("%s: %s", tm.Kind, msg)}
	}
	return []Object{{Object: obj, File: file, Line: n.Line, Node: n}}, nil
}

// decodeList decodes the items of a List (v1 List, or a kind's own list as kubectl get -o yaml
// prints).
func decodeList(file string, n *yaml.Node) ([]Object, error) {
	var out []Object
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value != "items" {
			continue
		}
		items := n.Content[i+1]
		if items.Kind == yaml.ScalarNode && items.Tag == "!!null" {
			return nil, nil
		}
		if items.Kind != yaml.SequenceNode {
			return nil, &Error{File: file, Line: items.Line, Err: errors.New("items: want a list of objects")}
		}
		for _, item := range items.Content {
			objs, err := decodeNode(file, item)
			if err != nil {
				return nil, err
			}
			out = append(out, objs...)
		}
	}
	return out, nil
}

// toJSON is the node as JSON, through YAML (sigs.k8s.io/yaml's conversion, which the API
// machinery's decoders expect).
func toJSON(n *yaml.Node) ([]byte, error) {
	y, err := yaml.Marshal(n)
	if err != nil {
		return nil, fmt.Errorf("re-encoding the document: %w", err)
	}
	j, err := sigsyaml.YAMLToJSON(y)
	if err != nil {
		_, msg := yamlline.OfSyntaxError(err)
		return nil, errors.New(msg)
	}
	return j, nil
}

// newObject is an empty object of a kind lint reads (nil for other kinds), and whether it is
// decoded strictly: HPAs are, the objects beside them are not (their manifests may carry fields
// of a newer Kubernetes than this build knows, which lint does not read anyway).
func newObject(gv schema.GroupVersion, kind string) (runtime.Object, bool, error) {
	switch {
	case kind == "HorizontalPodAutoscaler" && gv.Group == "autoscaling":
		if gv.Version != "v2" {
			return nil, false, fmt.Errorf("apiVersion %s: lint reads autoscaling/v2 HorizontalPodAutoscalers (the API server serves every HPA as autoscaling/v2; write this one so)", gv)
		}
		return &autoscalingv2.HorizontalPodAutoscaler{}, true, nil
	case gv.Group == "apps" && gv.Version == "v1":
		switch kind {
		case "Deployment":
			return &appsv1.Deployment{}, false, nil
		case "StatefulSet":
			return &appsv1.StatefulSet{}, false, nil
		case "ReplicaSet":
			return &appsv1.ReplicaSet{}, false, nil
		}
	case gv.Group == "policy" && gv.Version == "v1" && kind == "PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, false, nil
	case gv.Group == "autoscaling.k8s.io" && kind == "VerticalPodAutoscaler",
		gv.Group == "keda.sh" && kind == "ScaledObject":
		return &unstructured.Unstructured{}, false, nil
	}
	return nil, false, nil
}
