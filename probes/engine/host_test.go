package main

import (
	"testing"

	"github.com/cilium/ebpf/link"
)

// What a dropped process alone used is forgotten; what a live one still uses is kept.
func TestForgetUnusedKeepsWhatLiveProcessesUse(t *testing.T) {
	shared := UprobeSpec{ID: 1, Path: "/jdk/libjvm.so", Symbol: "jni_A", Object: "io", site: "1:2\x00jni_A"}
	mine := UprobeSpec{ID: 1025, Path: "/proc/9/root/jdk2/libjvm.so", Symbol: "jni_B", Object: "io",
		site: "3:4\x00jni_B", Args: []UsdtArg{{Kind: 1, Size: 8}}}
	e := &engine{
		pidUprobes: map[int][]UprobeSpec{7: {shared}, 9: {shared, mine}},
		sites:      map[string]Site{shared.key(): {}, mine.key(): {}},
		exes:       map[string]*link.Executable{shared.Path: nil, mine.Path: nil},
		usdtDone:   map[string]string{"io\x001025": "x"},
	}
	e.forgetUnused()
	if len(e.sites) != 2 || len(e.exes) != 2 || len(e.usdtDone) != 1 {
		t.Fatalf("forgot what pid 9 uses: %v %v %v", e.sites, e.exes, e.usdtDone)
	}
	delete(e.pidUprobes, 9)
	e.forgetUnused()
	if _, ok := e.sites[shared.key()]; !ok || len(e.sites) != 1 {
		t.Errorf("sites %v", e.sites)
	}
	if _, ok := e.exes[shared.Path]; !ok || len(e.exes) != 1 {
		t.Errorf("exes %v", e.exes)
	}
	if len(e.usdtDone) != 0 {
		t.Errorf("usdt records %v", e.usdtDone)
	}
}

// A site is keyed by its file's identity: two paths to one file are one site.
func TestSitesAreKeyedByTheFile(t *testing.T) {
	a, b := fileIdentity("/proc/self/exe"), fileIdentity("/proc/self/root/proc/self/exe")
	if a == "" || a != b {
		t.Errorf("identities %q %q", a, b)
	}
	if fileIdentity("/no/such/file") != "" {
		t.Error("a missing file has an identity")
	}
}
