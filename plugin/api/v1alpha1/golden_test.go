package v1alpha1

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// TestGoldenOutputsDecodeStrictly holds the types to what the commands print: every object of
// this API group in the commands' golden files (-o json, a whole file or one object a line)
// decodes into its kind's type with unknown fields refused, and encodes back to the same JSON.
func TestGoldenOutputsDecodeStrictly(t *testing.T) {
	kinds := map[string]func() any{
		KindExplanation: func() any { return &Explanation{} },
		KindList:        func() any { return &List{} },
		KindSimulation:  func() any { return &Simulation{} },
		KindTimeline:    func() any { return &Timeline{} },
		KindTuning:      func() any { return &Tuning{} },
	}
	files, err := filepath.Glob("../../*/testdata/*.golden")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
			continue // text, YAML or SVG
		}
		dec := json.NewDecoder(bytes.NewReader(data))
		for i := 0; ; i++ {
			var raw json.RawMessage
			if err := dec.Decode(&raw); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Errorf("%s: object %d: %v", f, i, err)
				break
			}
			var tm struct{ APIVersion, Kind string }
			if err := json.Unmarshal(raw, &tm); err != nil || tm.APIVersion != SchemeGroupVersion.String() {
				continue
			}
			newObj, ok := kinds[tm.Kind]
			if !ok {
				continue
			}
			seen[tm.Kind]++
			obj := newObj()
			strict := json.NewDecoder(bytes.NewReader(raw))
			strict.DisallowUnknownFields()
			if err := strict.Decode(obj); err != nil {
				t.Errorf("%s: object %d (%s): %v", f, i, tm.Kind, err)
				continue
			}
			back, err := json.Marshal(obj)
			if err != nil {
				t.Fatal(err)
			}
			var want, got any
			if err := json.Unmarshal(raw, &want); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal(back, &got); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(want, got) {
				t.Errorf("%s: object %d (%s) does not encode back to what was decoded:\n%s", f, i, tm.Kind, back)
			}
		}
	}
	t.Logf("objects decoded by kind: %v", seen)
	for _, k := range []string{KindExplanation, KindList, KindSimulation, KindTimeline, KindTuning} {
		if seen[k] == 0 {
			t.Errorf("no golden file holds a %s: the test would not see its schema drift", k)
		}
	}
}
