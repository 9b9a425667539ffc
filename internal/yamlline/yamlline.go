// Package yamlline finds the line of a YAML document an error is about: a strict decode's
// unknown or mistyped field (the JSON decoder under sigs.k8s.io/yaml does not know lines), a
// validation error's field path, or a parse error's own line.
package yamlline

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

var (
	unknownFieldRE = regexp.MustCompile(`unknown field "([^"]+)"`)
	structFieldRE  = regexp.MustCompile(`cannot unmarshal (\w+) into Go struct field [A-Za-z0-9_]+\.([A-Za-z0-9_.]+) of type (\S+)`)
	syntaxLineRE   = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// OfSyntaxError splits the error of a YAML parse into the line it names ("" when it names
// none) and the rest of its message.
func OfSyntaxError(err error) (line, msg string) {
	msg = strings.TrimPrefix(err.Error(), "yaml: ")
	if m := syntaxLineRE.FindStringSubmatch(msg); m != nil {
		return m[1], m[2]
	}
	return "", msg
}

// OfDecodeError finds the line a strict decode failed at (the JSON decoder under
// sigs.k8s.io/yaml does not know lines) and words the error.
func OfDecodeError(root *yaml.Node, into any, err error) (int, string) {
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "error unmarshaling JSON: ")
	msg = strings.TrimPrefix(msg, "while decoding JSON: ")
	msg = strings.TrimPrefix(msg, "json: ")
	if m := unknownFieldRE.FindStringSubmatch(msg); m != nil {
		// The decoder names the field without its path: find it by walking the document
		// along the type it decodes into.
		if line, path, ok := unknownKey(root, reflect.TypeOf(into), ""); ok {
			return line, fmt.Sprintf("unknown field %q (field names are case-sensitive)", path)
		}
		return lineOfKey(root, m[1]), fmt.Sprintf("unknown field %q (field names are case-sensitive)", m[1])
	}
	if m := structFieldRE.FindStringSubmatch(msg); m != nil {
		return OfPath(root, strings.Split(m[2], ".")...), fmt.Sprintf("field %s: a %s where a %s belongs", m[2], m[1], m[3])
	}
	return OfPath(root), msg
}

// OfField is the line of an API field path such as spec.metrics[0].resource (a validation
// error's field), as OfPath finds it.
func OfField(root *yaml.Node, fieldPath string) int {
	return OfPath(root, fieldPathSegments(fieldPath)...)
}

// fieldPathSegments splits spec.metrics[0].resource into spec, metrics, [0], resource.
func fieldPathSegments(p string) []string {
	var out []string
	for _, part := range strings.Split(p, ".") {
		name, idx, hasIdx := strings.Cut(part, "[")
		if name != "" {
			out = append(out, name)
		}
		for hasIdx {
			var i string
			i, idx, _ = strings.Cut(idx, "]")
			out = append(out, "["+i+"]")
			_, idx, hasIdx = strings.Cut(idx, "[")
		}
	}
	return out
}

// OfPath returns the line of the deepest node along path (keys, and [i] for list items; a key
// may also be found in any item of a list, for paths that carry no index), or the document's
// first line.
func OfPath(root *yaml.Node, path ...string) int {
	n := root
	if n.Kind == yaml.DocumentNode && len(n.Content) > 0 {
		n = n.Content[0]
	}
	best := n.Line
	var walk func(n *yaml.Node, path []string) bool
	walk = func(n *yaml.Node, path []string) bool {
		if len(path) == 0 {
			return true
		}
		seg := path[0]
		switch n.Kind {
		case yaml.MappingNode:
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == seg {
					best = max(best, n.Content[i].Line)
					return walk(n.Content[i+1], path[1:])
				}
			}
		case yaml.SequenceNode:
			if strings.HasPrefix(seg, "[") {
				i, err := strconv.Atoi(strings.Trim(seg, "[]"))
				if err == nil && i >= 0 && i < len(n.Content) {
					best = max(best, n.Content[i].Line)
					return walk(n.Content[i], path[1:])
				}
				return false
			}
			for _, item := range n.Content {
				if walk(item, path) {
					return true
				}
			}
		}
		return false
	}
	walk(n, path)
	return best
}

// lineOfKey returns the line of the first mapping key named key, in document order.
func lineOfKey(root *yaml.Node, key string) int {
	var find func(n *yaml.Node) int
	find = func(n *yaml.Node) int {
		if n.Kind == yaml.MappingNode {
			for i := 0; i+1 < len(n.Content); i += 2 {
				if n.Content[i].Value == key {
					return n.Content[i].Line
				}
				if l := find(n.Content[i+1]); l > 0 {
					return l
				}
			}
			return 0
		}
		for _, c := range n.Content {
			if l := find(c); l > 0 {
				return l
			}
		}
		return 0
	}
	if l := find(root); l > 0 {
		return l
	}
	return max(root.Line, 1)
}

// unknownKey finds the first mapping key in n (in document order) that type t has no JSON field
// for, with its line and path. Types that decode from a scalar (quantities, times) end the walk.
func unknownKey(n *yaml.Node, t reflect.Type, path string) (int, string, bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if n.Kind == yaml.DocumentNode {
		for _, c := range n.Content {
			if line, p, ok := unknownKey(c, t, path); ok {
				return line, p, true
			}
		}
		return 0, "", false
	}
	switch {
	case t.Kind() == reflect.Struct && n.Kind == yaml.MappingNode:
		fields := map[string]reflect.Type{}
		jsonFields(t, fields)
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			p := key
			if path != "" {
				p = path + "." + key
			}
			ft, known := fields[key]
			if !known {
				return n.Content[i].Line, p, true
			}
			if line, up, ok := unknownKey(n.Content[i+1], ft, p); ok {
				return line, up, true
			}
		}
	case t.Kind() == reflect.Slice && n.Kind == yaml.SequenceNode:
		for i, c := range n.Content {
			if line, p, ok := unknownKey(c, t.Elem(), fmt.Sprintf("%s[%d]", path, i)); ok {
				return line, p, true
			}
		}
	case t.Kind() == reflect.Map && n.Kind == yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			if line, p, ok := unknownKey(n.Content[i+1], t.Elem(), path+"."+n.Content[i].Value); ok {
				return line, p, true
			}
		}
	}
	return 0, "", false
}

// jsonFields collects a struct's JSON field names and types, inlined structs' included.
func jsonFields(t reflect.Type, out map[string]reflect.Type) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("json"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case name == "" && (f.Anonymous || strings.Contains(opts, "inline")):
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				jsonFields(ft, out)
			}
		case name == "":
			out[f.Name] = f.Type
		default:
			out[name] = f.Type
		}
	}
}
