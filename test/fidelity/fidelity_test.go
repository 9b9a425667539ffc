package fidelity

import (
	"path/filepath"
	"reflect"
	"testing"
	"time"
)

func TestRunLengthKeepsEachRunsValueStartAndLength(t *testing.T) {
	for _, tc := range []struct {
		name string
		seq  []int32
		want []Run
	}{
		{"empty", nil, nil},
		{"one value", []int32{3, 3, 3}, []Run{{3, 0, 3}}},
		{"up and down", []int32{2, 2, 4, 8, 8, 2}, []Run{{2, 0, 2}, {4, 2, 1}, {8, 3, 2}, {2, 5, 1}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := RunLength(tc.seq)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("RunLength(%v) = %v, want %v", tc.seq, got, tc.want)
			}
		})
	}
}

func TestReadRefusesAnotherVersionAndReadsWhatWriteWrote(t *testing.T) {
	dir := t.TempDir()
	want := &Recording{Version: Version, Scenario: "s", Start: time.Date(2026, 12, 1, 19, 0, 0, 0, time.UTC), PerSecond: []int32{2, 4}}
	path := filepath.Join(dir, "s.json")
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Read = %+v, want %+v", got, want)
	}
	want.Version = Version + 1
	if err := Write(path, want); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(path); err == nil {
		t.Errorf("Read accepted version %d", Version+1)
	}
}
