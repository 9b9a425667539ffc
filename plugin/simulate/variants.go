package simulate

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	sigsyaml "sigs.k8s.io/yaml"

	"github.com/kubectl-hpa/kubectl-hpa/internal/yamlline"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/cmdutil"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/output"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/validation"
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
		return variant{}, cmdutil.UsageErrorf("--variant %q: want NAME=KEY=VALUE[,KEY=VALUE...], e.g. fast=cpu=60%%,max=20,scaleUp.policies=Pods:8/15s", s)
	}
	if !variantName.MatchString(name) {
		return variant{}, cmdutil.UsageErrorf("--variant %q: the name %q must be lower-case letters, digits, '-', '_' or '.'", s, name)
	}
	v := variant{name: name, hpa: base.DeepCopy()}
	for _, kv := range strings.Split(overrides, ",") {
		key, value, ok := strings.Cut(kv, "=")
		if !ok || key == "" || value == "" {
			return variant{}, cmdutil.UsageErrorf("--variant %s: %q: want KEY=VALUE", name, kv)
		}
		if err := applyOverride(v.hpa, name, key, value); err != nil {
			return variant{}, err
		}
		v.changes = append(v.changes, kv)
	}
	if errs := validation.Validate(v.hpa, opts); len(errs) > 0 {
		return variant{}, cmdutil.UsageErrorf("--variant %s: the API server would refuse it: %s", name, describeFieldErrors(errs))
	}
	return v, nil
}

// applyOverride sets one KEY=VALUE of --variant NAME=... in hpa: a bound, a behavior field,
// or a metric's target. Its errors start with the flag as typed: --variant NAME=KEY=VALUE.
func applyOverride(hpa *autoscalingv2.HorizontalPodAutoscaler, name, key, value string) error {
	bad := func(format string, args ...any) error {
		return cmdutil.UsageErrorf("--variant %s=%s=%s: %s", name, key, value, fmt.Sprintf(format, args...))
	}
	if known, err := applySpecOverride(hpa, key, value, bad); known {
		return err
	}
	return applyTargetOverride(hpa, name, key, value, bad)
}

// applySpecOverride sets min, max, tolerance or a scaleUp./scaleDown. field; known is false
// for any other key. bad words a value that does not parse.
func applySpecOverride(hpa *autoscalingv2.HorizontalPodAutoscaler, key, value string, bad func(string, ...any) error) (known bool, err error) {
	direction, ruleField, isRule := strings.Cut(key, ".")
	switch {
	case key == "min" || key == "minReplicas":
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return true, bad("not a whole number")
		}
		hpa.Spec.MinReplicas = ptr.To(int32(n))
		return true, nil
	case key == "max" || key == "maxReplicas":
		n, err := strconv.ParseInt(value, 10, 32)
		if err != nil {
			return true, bad("not a whole number")
		}
		hpa.Spec.MaxReplicas = int32(n)
		return true, nil
	case key == "tolerance":
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return true, bad("not a number: %v", err)
		}
		rules(hpa, "scaleUp").Tolerance = &q
		rules(hpa, "scaleDown").Tolerance = ptr.To(q.DeepCopy())
		return true, nil
	case isRule && (direction == "scaleUp" || direction == "scaleDown"):
		return applyRuleOverride(hpa, direction, ruleField, value, bad)
	}
	return false, nil
}

// applyRuleOverride sets one field of the scaling rules of direction; known is false for a
// field --variant does not set.
func applyRuleOverride(hpa *autoscalingv2.HorizontalPodAutoscaler, direction, ruleField, value string, bad func(string, ...any) error) (known bool, err error) {
	switch ruleField {
	case "stabilizationWindowSeconds":
		secs, err := parseSeconds(value)
		if err != nil {
			return true, bad("%v", err)
		}
		rules(hpa, direction).StabilizationWindowSeconds = &secs
		return true, nil
	case "selectPolicy":
		p := autoscalingv2.ScalingPolicySelect(value)
		rules(hpa, direction).SelectPolicy = &p
		return true, nil
	case "policies":
		ps, err := parsePolicies(value)
		if err != nil {
			return true, bad("%v", err)
		}
		rules(hpa, direction).Policies = ps
		return true, nil
	case "tolerance":
		q, err := resource.ParseQuantity(value)
		if err != nil {
			return true, bad("not a number: %v", err)
		}
		rules(hpa, direction).Tolerance = &q
		return true, nil
	}
	return false, nil
}

// applyTargetOverride sets the target of the metric key names, by name or index; a key that
// names no metric is an unknown key, and the error lists the known ones. bad words an error.
func applyTargetOverride(hpa *autoscalingv2.HorizontalPodAutoscaler, name, key, value string, bad func(string, ...any) error) error {
	if _, err := cmdutil.FindMetric(hpa, key); err != nil {
		if !errors.As(err, new(*cmdutil.NoSuchMetricError)) {
			return bad("%v", err)
		}
		var metrics []string
		for i, m := range hpa.Spec.Metrics {
			metrics = append(metrics, fmt.Sprintf("%d=%s", i, output.ShortName(m)))
		}
		return bad("unknown key %q: known keys are %s, or a metric of this HPA by name or index (%s)",
			key, strings.Join(variantKeys, ", "), strings.Join(metrics, ", "))
	}
	w, err := cmdutil.ParseWhatIf("variant", name+"=", key+"="+value)
	if err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
	}
	if _, err := cmdutil.SetTarget(hpa, w); err != nil {
		return &cmdutil.ExitError{Code: cmdutil.ExitUsage, Err: err}
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
		return nil, cmdutil.UsageErrorf("%v", err)
	}
	return decodeHPA(path, data, ns, opts)
}

func decodeHPA(path string, data []byte, ns string, opts validation.Options) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	var root yaml.Node
	dec := yaml.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(&root); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, cmdutil.UsageErrorf("%s: empty: want one autoscaling/v2 HorizontalPodAutoscaler", path)
		}
		line, msg := yamlline.OfSyntaxError(err)
		if line != "" {
			return nil, cmdutil.UsageErrorf("%s:%s: %s", path, line, msg)
		}
		return nil, cmdutil.UsageErrorf("%s: %s", path, msg)
	}
	var second yaml.Node
	if err := dec.Decode(&second); err == nil {
		return nil, cmdutil.UsageErrorf("%s:%d: a second document: give one HorizontalPodAutoscaler per file", path, second.Line)
	}
	// The kind first: another version's fields would otherwise read as misspelt ones.
	var tm metav1.TypeMeta
	if err := sigsyaml.Unmarshal(data, &tm); err == nil && tm.Kind == "HorizontalPodAutoscaler" && tm.APIVersion != "autoscaling/v2" {
		return nil, cmdutil.UsageErrorf("%s:%d: apiVersion %s: simulate reads autoscaling/v2 HorizontalPodAutoscalers (the API server serves every HPA as autoscaling/v2; write this one so)",
			path, yamlline.OfPath(&root, "apiVersion"), tm.APIVersion)
	}
	var hpa autoscalingv2.HorizontalPodAutoscaler
	if err := sigsyaml.UnmarshalStrict(data, &hpa); err != nil {
		line, msg := yamlline.OfDecodeError(&root, &hpa, err)
		return nil, cmdutil.UsageErrorf("%s:%d: %s", path, line, msg)
	}
	if hpa.APIVersion != "autoscaling/v2" || hpa.Kind != "HorizontalPodAutoscaler" {
		return nil, cmdutil.UsageErrorf("%s:%d: apiVersion %q, kind %q: want autoscaling/v2 HorizontalPodAutoscaler", path, yamlline.OfPath(&root, "kind"), hpa.APIVersion, hpa.Kind)
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
		return nil, cmdutil.UsageErrorf("%s:%d: the API server would refuse it: %s%s", path, yamlline.OfField(&root, e.Field), e.Error(), more)
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
		return variant{}, cmdutil.UsageErrorf("--variant-file %s: the variant name %q must be lower-case letters, digits, '-', '_' or '.' (name it: --variant-file NAME=FILE)", arg, name)
	}
	hpa, err := readHPAFile(path, ns, opts)
	if err != nil {
		return variant{}, err
	}
	return variant{name: name, changes: []string{"file " + path}, hpa: hpa}, nil
}

// ApplyVariant is base with overrides (--variant's KEY=VALUE[,KEY=VALUE...], named name in
// its messages) applied, validated as the API server would validate it.
func ApplyVariant(base *autoscalingv2.HorizontalPodAutoscaler, name, overrides string, opts validation.Options) (*autoscalingv2.HorizontalPodAutoscaler, error) {
	v, err := parseVariant(base, name+"="+overrides, opts)
	if err != nil {
		return nil, err
	}
	return v.hpa, nil
}
