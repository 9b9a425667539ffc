package output

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"

	"go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/runtime"
)

// YAMLPrinter prints an object as `kubectl get -o yaml` prints one: apiVersion, kind, then
// metadata. cli-runtime's YAMLPrinter sorts every map's keys (it converts the JSON with
// sigs.k8s.io/yaml), which reads right for API objects (apiVersion, kind, metadata, spec,
// status), but put kind in the middle of an Explanation, after arithmetic, behavior and
// cluster. This printer keeps the top-level fields in the order of the type, as -o json
// prints them, with apiVersion first; below them every map is sorted, and everything is
// written by the same YAML encoder as kubectl's. Objects after the first are preceded by "---".
type YAMLPrinter struct {
	printed bool
}

// PrintObj writes obj as YAML to w.
func (p *YAMLPrinter) PrintObj(obj runtime.Object, w io.Writer) error {
	if obj.GetObjectKind().GroupVersionKind().Empty() {
		return errors.New("missing apiVersion or kind; try GetObjectKind().SetGroupVersionKind() if you know the type")
	}
	data, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	// A MapSlice keeps the order of the keys, at every level; the values come from a plain
	// map, whose own maps the encoder sorts, as sigs.k8s.io/yaml's. Both decode numbers as
	// sigs.k8s.io/yaml does, keeping their types.
	var order yaml.MapSlice
	var values map[string]any
	if err := errors.Join(yaml.Unmarshal(data, &order), yaml.Unmarshal(data, &values)); err != nil {
		return fmt.Errorf("converting %s to YAML: %w", obj.GetObjectKind().GroupVersionKind().Kind, err)
	}
	fields := make(yaml.MapSlice, 0, len(order))
	for _, f := range order {
		key, _ := f.Key.(string)
		fields = append(fields, yaml.MapItem{Key: key, Value: values[key]})
	}
	rank := func(f yaml.MapItem) int {
		switch f.Key {
		case "apiVersion":
			return 0
		case "kind":
			return 1
		}
		return 2
	}
	slices.SortStableFunc(fields, func(a, b yaml.MapItem) int { return rank(a) - rank(b) })
	out, err := yaml.Marshal(fields)
	if err != nil {
		return err
	}
	if p.printed {
		out = append([]byte("---\n"), out...)
	}
	p.printed = true
	_, err = w.Write(out)
	return err
}
