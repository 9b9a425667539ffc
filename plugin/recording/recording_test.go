package recording

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/kubectl-hpa/kubectl-hpa/controller/replicas"
)

// encode writes one recording of a term and syncs to memory.
func encode(t testing.TB, syncs ...Sync) []byte {
	t.Helper()
	var buf bytes.Buffer
	w, err := NewWriter("mem", &buf, false, testHeader())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Term(Term{Term: 1, Start: t0}); err != nil {
		t.Fatal(err)
	}
	for _, s := range syncs {
		if err := w.Sync(s); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func jsonOf(t testing.TB, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestARecordedSyncGivesBackEveryInputAndTheSameDecision(t *testing.T) {
	for name, r := range reconciles() {
		t.Run(name, func(t *testing.T) {
			data := encode(t, SyncOf(r))
			rec, err := Read("mem", bytes.NewReader(data))
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Syncs) != 1 || len(rec.Terms) != 1 {
				t.Fatalf("read %d terms and %d syncs, want 1 and 1", len(rec.Terms), len(rec.Syncs))
			}
			s := rec.Syncs[0]
			if s.Line != 3 {
				t.Errorf("sync on line %d, want 3", s.Line)
			}
			if diff := cmp.Diff(r.Input.History, s.History.Core()); diff != "" {
				t.Errorf("history held (-recorded +read), nil and empty must stay apart:\n%s", diff)
			}
			if s.HPA.ManagedFields != nil {
				t.Errorf("managed fields recorded: %v", s.HPA.ManagedFields)
			}
			if got, want := rec.Header.Config(), r.Input.Config; got != want {
				t.Errorf("config read %+v, want %+v", got, want)
			}
			if got, want := s.PodsError.Err(), r.PodsErr; (got == nil) != (want == nil) || (got != nil && got.Error() != want.Error()) {
				t.Errorf("pods error read %v, want %v", got, want)
			}

			in := s.Input(rec.Header.Config())
			if got, want := errorText(in.ScaleErr), errorText(r.Input.ScaleErr); got != want {
				t.Errorf("scale error read %q, want %q", got, want)
			}
			var se *replicas.ScaleError
			if r.Input.ScaleErr != nil && errors.As(r.Input.ScaleErr, &se) {
				var got *replicas.ScaleError
				if !errors.As(in.ScaleErr, &got) || got.Stage != se.Stage {
					t.Errorf("scale error stage lost: read %#v, want stage %v", in.ScaleErr, se.Stage)
				}
			}
			d := replicas.Decide(in)
			o := replicas.Apply(in, d, s.ScaleWriteError.Err())
			kept := d.History
			if s.DryRunReason == "" && s.ScaleWriteError == nil {
				kept = o.History
			}
			if got, want := jsonOf(t, ResultOf(d, o, kept)), jsonOf(t, s.Result); got != want {
				t.Errorf("the decision from the read inputs differs from the recorded one:\n got %s\nwant %s", got, want)
			}
			if again := encode(t, s); !bytes.Equal(again, data) {
				t.Errorf("re-encoding the read sync changes it:\n got %s\nwant %s", again, data)
			}
		})
	}
}

func TestCreateCompressesByTheSuffixAndOpenReadsBoth(t *testing.T) {
	r := reconciles()["cpu scale-up with a held history"]
	for _, name := range []string{"rec.jsonl", "rec.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			w, err := Create(path, testHeader())
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Term(Term{Term: 1, Start: t0}); err != nil {
				t.Fatal(err)
			}
			if err := w.Sync(SyncOf(r)); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Fatal(err)
			}
			if err := w.Close(); err != nil {
				t.Errorf("a second Close: %v", err)
			}
			if err := w.Sync(SyncOf(r)); err == nil || !strings.Contains(err.Error(), "closed") {
				t.Errorf("Sync after Close: %v, want the recording is closed", err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if gz := bytes.HasPrefix(raw, []byte{0x1f, 0x8b}); gz != strings.HasSuffix(name, ".gz") {
				t.Errorf("gzip magic present = %v for %s", gz, name)
			}
			rec, err := Load(path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Syncs) != 1 || rec.Syncs[0].Result.DesiredReplicas != r.Decision.DesiredReplicas {
				t.Errorf("read back %+v", rec.Syncs)
			}
		})
	}
}

func TestFlushPutsEveryEntrySoFarOnDiskCompressedOrNot(t *testing.T) {
	r := reconciles()["cpu scale-up with a held history"]
	for _, name := range []string{"rec.jsonl", "rec.jsonl.gz"} {
		t.Run(name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), name)
			w, err := Create(path, testHeader())
			if err != nil {
				t.Fatal(err)
			}
			defer w.Close()
			_ = w.Term(Term{Term: 1, Start: t0})
			_ = w.Sync(SyncOf(r))
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			// Read while the writer is still open, as after a crash: a gzip stream without its
			// end decodes up to the flush and then reports the missing end.
			rec, err := Load(path, nil)
			if strings.HasSuffix(name, ".gz") {
				if err == nil || !strings.Contains(err.Error(), "unexpected EOF") {
					t.Fatalf("an unfinished gzip stream: %v, want unexpected EOF", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Syncs) != 1 {
				t.Errorf("read %d syncs after Flush, want 1", len(rec.Syncs))
			}
		})
	}
}

type failingWriter struct{ n int }

func (f *failingWriter) Write(p []byte) (int, error) {
	if f.n--; f.n < 0 {
		return 0, errors.New("no space left on device")
	}
	return len(p), nil
}

func TestTheWritersFirstErrorIsReportedAndKept(t *testing.T) {
	out := &failingWriter{n: 0}
	w, err := NewWriter("full.jsonl", out, false, testHeader())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Flush(); err == nil || err.Error() != "writing the recording full.jsonl: no space left on device" {
		t.Fatalf("Flush: %v", err)
	}
	if err := w.Sync(SyncOf(reconciles()["the pods unlisted"])); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("Sync after a failed flush: %v, want the first error again", err)
	}
	if err := w.Close(); err == nil || !strings.Contains(err.Error(), "no space left on device") {
		t.Errorf("Close: %v, want the first error again", err)
	}
}

func TestReadSaysWhichFileLineAndFieldIsWrong(t *testing.T) {
	good := encode(t, SyncOf(reconciles()["cpu scale-up with a held history"]))
	lines := strings.SplitAfter(string(good), "\n")
	header, term, sync := lines[0], lines[1], lines[2]
	replace := func(s, old, with string) string {
		if !strings.Contains(s, old) {
			t.Fatalf("%q not in %s", old, s)
		}
		return strings.Replace(s, old, with, 1)
	}
	tests := []struct {
		name, data, want string
	}{
		{"empty file", "", "rec.jsonl: empty: a recording starts with its header line"},
		{"newer schema version", replace(header, `"version":1`, `"version":2,"newField":true`) + term,
			"rec.jsonl:1: field version: recording written by a newer kubectl-hpa: schema version 2 is newer than this kubectl-hpa reads (1); replay it with a newer kubectl-hpa"},
		{"version zero", replace(header, `"version":1`, `"version":0`), "rec.jsonl:1: field version: 0 is not a schema version (they start at 1)"},
		{"version not a number", replace(header, `"version":1`, `"version":"1"`), `rec.jsonl:1: field version: "1" is not a whole number`},
		{"another kind of file", `{"apiVersion":"v1","kind":"Pod"}` + "\n", `rec.jsonl:1: not a kubectl hpa run --record file: apiVersion "v1", kind "Pod" (want hpa.kubectl-hpa.io/v1alpha1, Recording)`},
		{"not JSON", "hello\n", "rec.jsonl:1: not a recording header: not valid JSON at byte 1: invalid character 'h' looking for beginning of value"},
		{"unknown header field", replace(header, `"dryRun"`, `"dryRunn"`), "rec.jsonl:1: field dryRunn: unknown to this schema version"},
		{"a field of the wrong type", header + term + replace(sync, `"key":"shop/web"`, `"key":7`), "rec.jsonl:3: field key: number is not a valid string"},
		{"nested field of the wrong type", header + term + replace(sync, `"specReplicas":3`, `"specReplicas":"3"`), "rec.jsonl:3: field scale.specReplicas: string is not a valid int32"},
		{"bad duration", header + term + replace(sync, `"window":"15.5s"`, `"window":"soon"`), `rec.jsonl:3: time: invalid duration "soon"`},
		{"unknown kind", header + `{"kind":"Nap"}` + "\n", `rec.jsonl:2: field kind: "Nap" is not Term or Sync`},
		{"sync outside a term", header + sync, "rec.jsonl:2: field term: 1 is not the term started last (a Term entry comes before its syncs)"},
		{"terms out of order", header + term + term, "rec.jsonl:3: field term: 1 does not follow term 1"},
		{"sync without an HPA", header + term + replace(sync, `"hpa":{`, `"hpa":null,"x":{`), "rec.jsonl:3: field x: unknown to this schema version"},
		{"metrics not matching the spec", header + term + replace(sync, `"metrics":[{"podSamples"`, `"metrics":[{},{"podSamples"`), "rec.jsonl:3: field metrics: has 2 entries for the HPA's 1 spec.metrics"},
		{"two values on a line", header + term + strings.TrimSuffix(sync, "\n") + "{}\n", "rec.jsonl:3: not valid JSON at byte "},
		{"a blank line", header + "\n" + term, "rec.jsonl:2: empty line: every line is one JSON object"},
		{"a header cut short", header[:len(header)/2], "rec.jsonl:1: not a recording header: not valid JSON"},
		{"a bad last line that ends whole", header + term + sync[:len(sync)/2] + "\n", "rec.jsonl:3: not valid JSON"},
		{"bad scale error stage", header + term + replace(replace(sync, `"scale":{"specReplicas":3,"statusReplicas":3,"selector":"app=web"}`, `"scaleError":{"stage":"Later","message":"x"}`), `,"pods":[`, `,"podz":[`), "rec.jsonl:3: field podz: unknown to this schema version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Read("rec.jsonl", strings.NewReader(tt.data))
			if err == nil {
				t.Fatal("read without an error")
			}
			if !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error\n got %s\nwant %s", err, tt.want)
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("error spans lines: %q", err)
			}
			if _, ok := errors.AsType[*ParseError](err); !ok {
				t.Errorf("error %T is not a *ParseError", err)
			}
		})
	}
}

// TestALastLineCutShortIsLeftOut reads the recording of a run stopped by force while it wrote
// its last line: the lines before it are read, and the cut line is named.
func TestALastLineCutShortIsLeftOut(t *testing.T) {
	good := string(encode(t, SyncOf(reconciles()["cpu scale-up with a held history"])))
	lines := strings.SplitAfter(good, "\n")
	header, term, sync := lines[0], lines[1], lines[2]
	tests := []struct {
		name        string
		data        string
		syncs, line int
	}{
		{name: "after a whole sync", data: header + term + sync + sync[:len(sync)/2], syncs: 1, line: 4},
		{name: "right after the header", data: header + term[:len(term)/2], line: 2},
		{name: "a file that ends whole has none", data: header + term + sync, syncs: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, err := Read("rec.jsonl", strings.NewReader(tt.data))
			if err != nil {
				t.Fatal(err)
			}
			if len(rec.Syncs) != tt.syncs || rec.CutLine != tt.line {
				t.Errorf("%d syncs, line %d cut; want %d syncs, line %d cut", len(rec.Syncs), rec.CutLine, tt.syncs, tt.line)
			}
		})
	}
}

func TestANewerVersionIsFoundWithErrorsIs(t *testing.T) {
	_, err := Read("r", strings.NewReader(`{"apiVersion":"hpa.kubectl-hpa.io/v1alpha1","kind":"Recording","version":7}`))
	if !errors.Is(err, ErrNewerVersion) {
		t.Errorf("error %v does not wrap ErrNewerVersion", err)
	}
}

func TestSyncsKeepTheirFileOrder(t *testing.T) {
	var syncs []Sync
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range reconciles() {
			if !yield(k) {
				return
			}
		}
	}) {
		syncs = append(syncs, SyncOf(reconciles()[name]))
	}
	rec, err := Read("mem", bytes.NewReader(encode(t, syncs...)))
	if err != nil {
		t.Fatal(err)
	}
	for i, s := range rec.Syncs {
		if s.Line != i+3 {
			t.Errorf("sync %d on line %d, want %d", i, s.Line, i+3)
		}
	}
}

func TestASyncRecordsPodsByNameWhateverTheCacheOrder(t *testing.T) {
	in := replicas.Input{HPA: testHPA(), Now: t0, Config: replicas.DefaultConfig(),
		Pods: []*corev1.Pod{testPod("web-2", true, t0), testPod("web-0", true, t0), testPod("web-1", false, t0)}}
	s := SyncOf(Reconcile{Key: "shop/web", Input: in})
	var got []string
	for _, p := range s.Pods {
		got = append(got, p.Name)
	}
	if want := []string{"web-0", "web-1", "web-2"}; !slices.Equal(got, want) {
		t.Errorf("recorded pods %v, want %v", got, want)
	}
	if in.Pods[0].Name != "web-2" {
		t.Errorf("the decision's input was reordered: %s first", in.Pods[0].Name)
	}
}

// failAfter serves data, then fails as a broken disk or a cut pipe would.
type failAfter struct {
	data []byte
	err  error
}

func (f *failAfter) Read(p []byte) (int, error) {
	if len(f.data) == 0 {
		return 0, f.err
	}
	n := copy(p, f.data)
	f.data = f.data[n:]
	return n, nil
}

// TestAReaderHandsOutASyncBeforeReadingTheNext: a replay holds one sync of the file, not the
// file, so a sync is handed out before the line after it is read.
func TestAReaderHandsOutASyncBeforeReadingTheNext(t *testing.T) {
	r := reconciles()["cpu scale-up with a held history"]
	data := encode(t, SyncOf(r), SyncOf(r))
	second := bytes.LastIndexByte(data[:len(data)-1], '\n') + 1
	broken := errors.New("disk gone")
	rd, err := NewReader("rec.jsonl", &failAfter{data: data[:second], err: broken})
	if err != nil {
		t.Fatal(err)
	}
	s, err := rd.Next()
	if err != nil {
		t.Fatalf("the first sync: %v", err)
	}
	if s.Line != 3 || s.Index != 0 || s.Key != SyncOf(r).Key {
		t.Errorf("first sync %s on line %d, index %d; want %s on line 3, index 0", s.Key, s.Line, s.Index, SyncOf(r).Key)
	}
	if len(rd.Terms) != 1 {
		t.Errorf("%d terms read, want 1", len(rd.Terms))
	}
	_, err = rd.Next()
	if pe, ok := errors.AsType[*ParseError](err); !ok || !errors.Is(err, broken) || pe.Line != 4 {
		t.Errorf("after the first sync: %v, want a ParseError on line 4 wrapping %v", err, broken)
	}
}

func TestLoadKeepsTheChosenHPAsAndNamesEveryOne(t *testing.T) {
	var syncs []Sync
	for _, key := range []string{"shop/web", "shop/api", "blog/web", "shop/web"} {
		s := SyncOf(reconciles()["cpu scale-up with a held history"])
		s.Key = key
		syncs = append(syncs, s)
	}
	path := filepath.Join(t.TempDir(), "rec.jsonl")
	if err := os.WriteFile(path, encode(t, syncs...), 0o600); err != nil {
		t.Fatal(err)
	}
	rec, err := Load(path, func(key string) bool { return strings.HasSuffix(key, "/web") })
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"shop/web", "shop/api", "blog/web"}; !slices.Equal(rec.Keys, want) {
		t.Errorf("keys %v, want every HPA in the order of its first sync %v", rec.Keys, want)
	}
	var got []string
	for _, s := range rec.Syncs {
		got = append(got, fmt.Sprintf("%d:%s", s.Index, s.Key))
	}
	if want := []string{"0:shop/web", "2:blog/web", "3:shop/web"}; !slices.Equal(got, want) {
		t.Errorf("kept %v, want %v (each with its place among the file's syncs)", got, want)
	}
}
