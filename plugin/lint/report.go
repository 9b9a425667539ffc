package lint

import (
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubectl-hpa/kubectl-hpa/internal/manifest"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/api/v1alpha1"
	"github.com/kubectl-hpa/kubectl-hpa/plugin/lint/rules"
)

// ReportKind is the kind of lint's -o json|yaml, in the group and version of the plugin's other
// schemas (output.SchemeGroupVersion).
const ReportKind = "LintReport"

// Report is what lint found: the versioned schema of -o json and -o yaml.
type Report struct {
	metav1.TypeMeta `json:",inline"`
	Summary         Summary `json:"summary"`
	// HPAs are the HPAs checked, in the order read, each with where it was read.
	HPAs []CheckedHPA `json:"hpas"`
	// Findings, per HPA in the order of HPAs, worst first within each.
	Findings []Finding `json:"findings"`
}

// Summary counts the HPAs and the findings by severity.
type Summary struct {
	HPAs     int `json:"hpas"`
	Errors   int `json:"errors"`
	Warnings int `json:"warnings"`
	Infos    int `json:"infos"`
}

// CheckedHPA is an HPA checked and where it was read.
type CheckedHPA struct {
	rules.ObjectRef
	Source *Location `json:"source,omitempty"`
}

// Finding is a rule's finding and where in the manifests its field is.
type Finding struct {
	rules.Finding
	// Source is the file and line of the finding's field (of the object it names).
	Source *Location `json:"source,omitempty"`
}

// Location is a position in the manifests.
type Location struct {
	File string `json:"file"`
	Line int    `json:"line"`
}

// GetObjectKind and DeepCopyObject make a Report a runtime.Object for the YAML printer.
func (r *Report) GetObjectKind() schema.ObjectKind { return &r.TypeMeta }

// DeepCopyObject copies the report.
func (r *Report) DeepCopyObject() runtime.Object {
	out := *r
	out.HPAs = make([]CheckedHPA, len(r.HPAs))
	for i, h := range r.HPAs {
		out.HPAs[i] = CheckedHPA{ObjectRef: h.ObjectRef, Source: h.Source.copy()}
	}
	out.Findings = make([]Finding, len(r.Findings))
	for i, f := range r.Findings {
		out.Findings[i] = Finding{Finding: f.Finding, Source: f.Source.copy()}
	}
	return &out
}

func (s *Location) copy() *Location {
	if s == nil {
		return nil
	}
	c := *s
	return &c
}

// check runs the rules on the objects read and places each finding in the manifests.
func check(read []manifest.Object, opts rules.Options) *Report {
	var objs rules.Objects
	where := map[rules.ObjectRef]manifest.Object{}
	for _, o := range read {
		if !objs.Add(o.Object) {
			continue
		}
		meta, err := apimeta.Accessor(o.Object)
		if err != nil {
			continue
		}
		ref := rules.ObjectRef{Kind: o.Object.GetObjectKind().GroupVersionKind().Kind, Namespace: meta.GetNamespace(), Name: meta.GetName()}
		if _, seen := where[ref]; !seen {
			where[ref] = o
		}
	}
	return report(objs, opts, nil, func(ref rules.ObjectRef, path string) *Location {
		o, ok := where[ref]
		if !ok {
			return nil
		}
		return &Location{File: o.File, Line: o.LineOf(path)}
	})
}

// report runs the rules on objs and reports the HPAs checked says (every HPA when nil): the
// others are read so that the rules see them beside the checked ones. sourceOf places a
// field in the manifests (nil for objects read from a cluster).
func report(objs rules.Objects, opts rules.Options, checked func(rules.ObjectRef) bool, sourceOf func(ref rules.ObjectRef, path string) *Location) *Report {
	if checked == nil {
		checked = func(rules.ObjectRef) bool { return true }
	}
	if sourceOf == nil {
		sourceOf = func(rules.ObjectRef, string) *Location { return nil }
	}
	r := &Report{TypeMeta: metav1.TypeMeta{APIVersion: v1alpha1.SchemeGroupVersion.String(), Kind: ReportKind}, HPAs: []CheckedHPA{}, Findings: []Finding{}}
	for _, h := range objs.HPAs {
		ref := rules.ObjectRef{Kind: "HorizontalPodAutoscaler", Namespace: h.Namespace, Name: h.Name}
		if checked(ref) {
			r.HPAs = append(r.HPAs, CheckedHPA{ObjectRef: ref, Source: sourceOf(ref, "")})
		}
	}
	r.Summary.HPAs = len(r.HPAs)
	for _, f := range rules.Check(objs, opts) {
		if !checked(f.HPA) {
			continue
		}
		r.Findings = append(r.Findings, Finding{Finding: f, Source: sourceOf(f.Object, f.Path)})
		switch f.Severity {
		case rules.SeverityError:
			r.Summary.Errors++
		case rules.SeverityWarning:
			r.Summary.Warnings++
		default:
			r.Summary.Infos++
		}
	}
	return r
}
