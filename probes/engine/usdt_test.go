package main

import (
	"debug/elf"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"testing"
)

func TestUsdtPC(t *testing.T) {
	// no .stapsdt.base, or a note without a base: the pc as written
	if got := usdtPC(0x8d3781, 0x1066ab7, 0, false); got != 0x8d3781 {
		t.Errorf("no section: %#x", got)
	}
	if got := usdtPC(0x8d3781, 0, 0x2000, true); got != 0x8d3781 {
		t.Errorf("no note base: %#x", got)
	}
	// the section moved by +0x1000 since the note was written (prelink): so did every site
	if got := usdtPC(0x8d3781, 0x1066ab7, 0x1067ab7, true); got != 0x8d4781 {
		t.Errorf("moved base: %#x", got)
	}
}

// link-time address -> file offset through the PT_LOAD segments (a data segment's vaddr and
// offset differ: a semaphore lives there)
func TestFileOffset(t *testing.T) {
	e := &elfInfo{loads: []elf.ProgHeader{
		{Type: elf.PT_LOAD, Off: 0x251000, Vaddr: 0x251000, Filesz: 0xd52029},
		{Type: elf.PT_LOAD, Off: 0x12254f8, Vaddr: 0x12264f8, Filesz: 0xebde8},
	}}
	if off, ok := e.fileOffset(0x8d3781); !ok || off != 0x8d3781 {
		t.Errorf("text: %#x %v", off, ok)
	}
	if off, ok := e.fileOffset(0x1226500); !ok || off != 0x1225500 {
		t.Errorf("data: %#x %v", off, ok)
	}
	if _, ok := e.fileOffset(0x1226500 + 0xebde8); ok {
		t.Error("past the data segment's file part (bss) mapped to the file")
	}
}

func TestClassifySite(t *testing.T) {
	cases := []struct {
		code  []byte
		insn  string
		class string
	}{
		{[]byte{0x90, 0xc3}, "nop", "emulated"},
		// a site that is not a nop (a damaged note): said, not moved
		{[]byte{0x48, 0x89, 0xf7}, "mov %rsi,%rdi", "single-stepped"},
	}
	for _, c := range cases {
		var s Site
		classifySite(&s, c.code, 0x1000)
		if s.Insn != c.insn || s.Class != c.class || s.Shift != 0 {
			t.Errorf("% x: got %q %s +%d (%s)", c.code, s.Insn, s.Class, s.Shift, s.Why)
		}
	}
}

// A group with a USDT site is attached by file offset, symbols too (their placed offset),
// with the semaphores beside; a group of symbols only is attached as before.
func TestGroupsByAddress(t *testing.T) {
	e := &engine{plan: Plan{Uprobes: []UprobeSpec{
		{ID: 1, Path: "/l.so", Symbol: "jni_A", Object: "jni", Program: "p"},
		{ID: 2, Path: "/l.so", Symbol: "hotspot_jni:B__entry", Object: "jni", Program: "p",
			Kind: "usdt", Address: 0x5000},
		{ID: 3, Path: "/l.so", Symbol: "hotspot_jni:B__entry", Object: "jni", Program: "p",
			Kind: "usdt", Address: 0x6000},
		{ID: 4, Path: "/l.so", Symbol: "jni_C", Object: "jni", Program: "q", Value: 2},
	}}}
	e.sites = map[string]Site{
		e.plan.Uprobes[0].siteKey(): {Shift: 4, FileOff: 0x1004},
		e.plan.Uprobes[1].siteKey(): {FileOff: 0x5000, RefCtrOff: 0x9000},
		e.plan.Uprobes[2].siteKey(): {FileOff: 0x6000, RefCtrOff: 0x9000},
		e.plan.Uprobes[3].siteKey(): {FileOff: 0x3000},
	}
	if e.plan.Uprobes[1].siteKey() == e.plan.Uprobes[2].siteKey() {
		t.Fatal("two sites of one USDT probe share a key")
	}
	gs := e.groups(e.plan.Uprobes)
	if len(gs) != 2 {
		t.Fatalf("%d groups", len(gs))
	}
	g := gs[0]
	if !g.byAddr || len(g.files) != 3 || g.files[0] != 0x1004 || g.files[1] != 0x5000 ||
		g.files[2] != 0x6000 || g.refs[0] != 0 || g.refs[1] != 0x9000 {
		t.Errorf("usdt group: %+v", g)
	}
	if gs[1].byAddr || gs[1].offs[0] != 0 || gs[1].cookies[0] != 4|2<<16 {
		t.Errorf("symbol group: %+v", gs[1])
	}
	if !anyNonZero(g.refs) || anyNonZero(gs[1].refs) {
		t.Error("anyNonZero")
	}
}

// The JDK's libjvm.so, where it carries HotSpot's USDT probes: the site of
// GetByteArrayRegion__entry (from readelf's reading of the notes) is a nop, in the file.
func TestPlaceUSDTLibjvm(t *testing.T) {
	lib := "/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so"
	if _, err := os.Stat(lib); err != nil {
		t.Skip("no JDK 17 libjvm.so")
	}
	out, err := exec.Command("readelf", "-n", "-W", lib).Output()
	if err != nil {
		t.Skip("no readelf")
	}
	m := regexp.MustCompile(`Name: GetByteArrayRegion__entry\s+Location: (0x[0-9a-f]+), Base: (0x[0-9a-f]+), Semaphore: (0x[0-9a-f]+)`).FindSubmatch(out)
	if m == nil {
		t.Skip("this libjvm.so has no hotspot_jni notes")
	}
	pc, _ := strconv.ParseUint(string(m[1]), 0, 64)
	base, _ := strconv.ParseUint(string(m[2]), 0, 64)
	sem, _ := strconv.ParseUint(string(m[3]), 0, 64)
	s, err := placeUSDT(lib, pc, base, sem)
	if err != nil {
		t.Fatal(err)
	}
	if s.Class != "emulated" || s.Insn != "nop" || s.Shift != 0 || (sem == 0) != (s.RefCtrOff == 0) {
		t.Errorf("site %+v", s)
	}
	b := make([]byte, 1)
	fh, _ := os.Open(lib)
	defer fh.Close()
	if _, err := fh.ReadAt(b, int64(s.FileOff)); err != nil || b[0] != 0x90 {
		t.Errorf("byte at file offset %#x: % x", s.FileOff, b)
	}
	// a site outside every segment is an error, not a probe somewhere else
	if _, err := placeUSDT(lib, 1<<40, 0, 0); err == nil {
		t.Error("a site outside the file was placed")
	}
}
