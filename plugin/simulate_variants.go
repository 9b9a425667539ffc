package plugin

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/validation/field"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/controller/validation"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
)

// baselineName names the variant that is the HPA as it is.
const baselineName = "current"

// variant is one HPA spec to simulate: the HPA as it is, or with changes.
type variant struct {
	name    string
	changes []string // what was changed, as given ("cpu=60%", "file fast.yaml")
	hpa     *autoscalingv2.HorizontalPodAutoscaler
}

// variantKeys are the keys --variant knows besides the HPA's metrics, in the order help lists them.
var variantKeys = []string{
	"min", "max", "tolerance",
	"scaleUp.stabilizationWindowSeconds", "scaleUp.selectPolicy", "scaleUp.policies", "scaleUp.tolerance",
	"scaleDown.stabilizationWindowSeconds", "scaleDown.selectPolicy", "scaleDown.policies", "scaleDown.tolerance",
}

var variantName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9_.]*[a-z0-9])?$`)

// parseVariant parses --variant NAME=KEY=VALUE,KEY=VALUE,... into a changed copy of base,
// validated as the API server would validate it.
func parseVariant(base *autoscalingv2.HorizontalPodAutoscaler, s string, opts validation.Options) (variant, error) {
	name, overrides, ok := strings.Cut(s, "=")
	if !ok || name == "" || overrides == "" {
		return variant{}, usageErrorf("--variant %q: want NAME=KEY=VALUE[,KEY=VALUE...], e.g. fast=cpu=60%%,max=20,scaleUp.policies=Pods:8/15s", s)
	}
	if !variantName.MatchString(name) {
		return variant{}, usageErrorf("--variant %q: the name %q must be lower-case letters, digits, '-', '_' or '.'", s, name)
	}
	v := variant{name: name, hpa: base.DeepCopy()}
	flag := "variant " + name
	for _, kv := range strings.Split(overrides, ",") {
		key, value, ok := strings.Cut(kv, "=")
		if !ok || key == "" || value == "" {
			return variant{}, usageErrorf("--variant %s: %q: want KEY=VALUE", name, kv)
		}
		if err := applyOverride(v.hpa, flag, key, value); err != nil {
			return variant{}, err
		}
		v.changes = append(v.changes, kv)
	}
	if errs := validation.Validate(v.hpa, opts); len(errs) > 0 {
		return variant{}, usageErrorf("--variant %s: the API server would refuse it: %s", name, describeFieldErrors(errs))
	}
	return v, nil
}

// applyOverride sets one KEY=VALUE of a --variant in hpa.
func applyOverride(hpa *autoscalingv2.HorizontalPodAutoscaler, flag, key, value string) error {
	bad := func(format string, args ...any) error {
		return usageErrorf("--%s: %s=%s: %s", flag, key, value, fmt.Sprintf(format, args...))
	}
	direction, ruleField, isRule := strings.Cut(key, ".")
	switch {
	case key == "min" || key == "minReplicas":
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return bad("not a whole number")
		}
		hpa.Spec.MinReplicas = ptrTo(int32(n))
		return nil
	case key == "max" || key == "maxReplicas":
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return bad("not a whole number")
		}
		hpa.Spec.MaxReplicas = int32(n)
		return nil
	case key == "tolerance":
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return bad("not a number: %v", err)
		}
		rules(hpa, "scaleUp").Tolerance = &q
		rules(hpa, "scaleDown").Tolerance = ptrTo(q.DeepCopy())
		return nil
	case isRule && (direction == "scaleUp" || direction == "scaleDown"):
		r := rules(hpa, direction)
		switch ruleField {
		case "stabilizationWindowSeconds":
			secs, err := parseSeconds(value)
			if err != nil {
				return bad("%v", err)
			}
			r.StabilizationWindowSeconds = &secs
			return nil
		case "selectPolicy":
			p := autoscalingv2.ScalingPolicySelect(value)
			r.SelectPolicy = &p
			return nil
		case "policies":
			ps, err := parsePolicies(value)
			if err != nil {
				return bad("%v", err)
			}
			r.Policies = ps
			return nil
		case "tolerance":
			q, err := resource.ParseQuantity(value)
			if err != nil {
				return bad("not a number: %v", err)
			}
			r.Tolerance = &q
			return nil
		}
	}
	if _, err := findMetric(hpa, key); err != nil {
		if !errors.As(err, new(*noSuchMetricError)) {
			return usageErrorf("--%s: %s=%s: %v", flag, key, value, err)
		}
		var metrics []string
		for i, m := range hpa.Spec.Metrics {
			metrics = append(metrics, fmt.Sprintf("%d=%s", i, output.ShortName(m)))
		}
		return usageErrorf("--%s: unknown key %q: known keys are %s, or a metric of this HPA by name or index (%s)",
			flag, key, strings.Join(variantKeys, ", "), strings.Join(metrics, ", "))
	}
	w, err := parseWhatIf(flag, key+"="+value)
	if err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	if _, err := setTarget(hpa, w); err != nil {
		return &ExitError{Code: ExitUsage, Err: err}
	}
	return nil
}

// rules returns hpa's scaling rules of one direction, creating behavior and the rules when
// absent: the API's defaults then fill the fields not given, as for an HPA written so.
func rules(hpa *autoscalingv2.HorizontalPodAutoscaler, direction string) *autoscalingv2.HPAScalingRules {
	if hpa.Spec.Behavior == nil {
		hpa.Spec.Behavior = &autoscalingv2.HorizontalPodAutoscalerBehavior{}
	}
	p := &hpa.Spec.Behavior.ScaleUp
	if direction == "scaleDown" {
		p = &hpa.Spec.Behavior.ScaleDown
	}
	if *p == nil {
		*p = &autoscalingv2.HPAScalingRules{}
	}
	return *p
}

// parseSeconds reads whole seconds, given bare (60) or as a duration (60s, 1m).
func parseSeconds(s string) (int32, error) {
	if n, err := strconv.ParseInt(s, 10, 32); err == nil {
		return int32(n), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return 0, fmt.Errorf("%q is neither whole seconds nor a duration such as 60s or 5m", s)
	}
	if d%time.Second != 0 {
		return 0, fmt.Errorf("%q is not a whole number of seconds", s)
	}
	return int32(d / time.Second), nil
}

// parsePolicies reads TYPE:VALUE/PERIOD;... such as Pods:8/15s;Percent:200/15s. The type is kept
// as given: validation names an unknown one with the types allowed.
func parsePolicies(s string) ([]autoscalingv2.HPAScalingPolicy, error) {
	var out []autoscalingv2.HPAScalingPolicy
	for _, one := range strings.Split(s, ";") {
		typ, rest, ok1 := strings.Cut(one, ":")
		value, period, ok2 := strings.Cut(rest, "/")
		if !ok1 || !ok2 {
			return nil, fmt.Errorf("policy %q: want TYPE:VALUE/PERIOD, e.g. Pods:4/15s or Percent:100/15s", one)
		}
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("policy %q: value %q is not a whole number", one, value)
		}
		secs, err := parseSeconds(period)
		if err != nil {
			return nil, fmt.Errorf("policy %q: period: %w", one, err)
		}
		out = append(out, autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.HPAScalingPolicyType(typ), Value: int32(n), PeriodSeconds: secs})
	}
	return out, nil
}

// describeFieldErrors puts a validation's refusals on one line.
func describeFieldErrors(errs field.ErrorList) string {
	parts := make([]string, len(errs))
	for i, e := range errs {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "; ")
}

// readHPAFile decodes the one autoscaling/v2 HorizontalPodAutoscaler in a YAML or JSON file
// strictly (an unknown or misspelt field is an error) and validates it as the API server
// would, in namespace ns when the file names none. Every error names the file and the line.
func readHPAFile(path, ns string, opts validation.Options) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usageErrorf("%v", err)
	}
	return decodeHPA(path, data, ns, opts)
}

func decodeHPA(path string, data []byte, ns string, opts validation.Options) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, usageErrorf("%s: empty: want one autoscaling/v2 HorizontalPodAutoscaler", path)
		}
		msg := strings.TrimPrefix(err.Error(), "yaml: ")
		if m := yamlLineRE.FindStringSubmatch(msg); m != nil {
			return nil, usageErrorf("%s:%s: %s", path, m[1], m[2])
		}
		return nil, usageErrorf("%s: %s", path, msg)
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		return nil, usageErrorf("%s:%d: a second document: give one HorizontalPodAutoscaler per file", path, second.Line)
	}
	var hpa autoscalingv2.HorizontalPodAutoscaler
	if err := sigsyaml.UnmarshalStrict(data, &hpa); err != nil {
		line, msg := locateDecodeError(&root, &hpa, err)
		return nil, usageErrorf("%s:%d: %s", path, line, msg)
	}
	if hpa.APIVersion != "autoscaling/v2" || hpa.Kind != "HorizontalPodAutoscaler" {
		return nil, usageErrorf("%s:%d: apiVersion %q, kind %q: want autoscaling/v2 HorizontalPodAutoscaler", path, lineOf(&root, []string{"kind"}), hpa.APIVersion, hpa.Kind)
	}
	if hpa.Namespace == "" {
		hpa.Namespace = ns
	}
	if errs := validation.Validate(&hpa, opts); len(errs) > 0 {
		e := errs[0]
		more := ""
		if len(errs) > 1 {
			more = fmt.Sprintf(" (and %d more: %s)", len(errs)-1, describeFieldErrors(errs[1:]))
		}
		return nil, usageErrorf("%s:%d: the API server would refuse it: %s%s", path, lineOf(&root, fieldPathSegments(e.Field)), e.Error(), more)
	}
	return &hpa, nil
}

// variantFromFile is --variant-file [NAME=]FILE: the whole spec from the file, named NAME or
// after the file.
func variantFromFile(arg, ns string, opts validation.Options) (variant, error) {
	name, path, ok := strings.Cut(arg, "=")
	if !ok {
		path = arg
		name = strings.TrimSuffix(filepath.Base(path), filepath.Ext(path))
	}
	if !variantName.MatchString(name) {
		return variant{}, usageErrorf("--variant-file %s: the variant name %q must be lower-case letters, digits, '-', '_' or '.' (name it: --variant-file NAME=FILE)", arg, name)
	}
	hpa, err := readHPAFile(path, ns, opts)
	if err != nil {
		return variant{}, err
	}
	return variant{name: name, changes: []string{"file " + path}, hpa: hpa}, nil
}

var (
	unknownFieldRE = regexp.MustCompile(`unknown field "([^"]+)"`)
	structFieldRE  = regexp.MustCompile(`cannot unmarshal (\w+) into Go struct field [A-Za-z0-9_]+\.([A-Za-z0-9_.]+) of type (\S+)`)
	yamlLineRE     = regexp.MustCompile(`^line (\d+): (.*)$`)
)

// locateDecodeError finds the line a strict decode failed at (the JSON decoder under
// sigs.k8s.io/yaml does not know lines) and words the error.
func locateDecodeError(root *yaml.Node, into any, err error) (int, string) {
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
		return lineOf(root, strings.Split(m[2], ".")), fmt.Sprintf("field %s: a %s where a %s belongs", m[2], m[1], m[3])
	}
	return lineOf(root, nil), msg
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

// lineOf returns the line of the deepest node along path (keys, and [i] for list items; a key
// may also be found in any item of a list, for paths that carry no index), or the document's
// first line.
func lineOf(root *yaml.Node, path []string) int {
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
