package main

import (
	"debug/elf"
	"os"
	"testing"
)

func TestPlaceBytes(t *testing.T) {
	cases := []struct {
		name  string
		code  []byte
		shift uint64
		class string
	}{
		// push %rbp; mov %rsp,%rbp: emulated at the entry
		{"push first", []byte{0x55, 0x48, 0x89, 0xe5, 0xc3}, 0, "emulated"},
		// glibc write: cmpb $0x0,0x...(%rip); je ...: moved onto the je
		{"cmp then je", []byte{0x80, 0x3d, 0x10, 0x00, 0x00, 0x00, 0x00, 0x74, 0x10,
			0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,
			0x90, 0x90, 0x90, 0x90, 0xc3}, 7, "emulated"},
		// endbr64; push %rbx: moved past endbr64
		{"endbr64 then push", []byte{0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0xc3}, 4, "emulated"},
		// mov %rdi,%rbx (an argument register read, rbx written: not harmless? it writes
		// rbx, which no argument uses, but the rule only allows rax/r10/r11): stays
		{"mov to rbx", []byte{0x48, 0x89, 0xfb, 0x53, 0xc3}, 0, "single-stepped"},
		// mov %rsi,%rdi clobbers an argument: the probe stays at the entry
		{"clobbers arg", []byte{0x48, 0x89, 0xf7, 0x55, 0xc3}, 0, "single-stepped"},
		// sub $8,%rsp moves the stack: stays
		{"moves stack", []byte{0x48, 0x83, 0xec, 0x08, 0x55, 0xc3}, 0, "single-stepped"},
		// cmp $0,%rdi; push %rbp (+4); nop; jmp back to +4: the push is a branch target
		// inside the function (it would fire on every pass), so the probe stays
		{"branch target", []byte{0x48, 0x83, 0xff, 0x00, 0x55, 0x90, 0xeb, 0xfc, 0xc3},
			0, "single-stepped"},
	}
	for _, c := range cases {
		s := placeBytes(c.code, 0x1000, true)
		if s.Shift != c.shift || s.Class != c.class {
			t.Errorf("%s: got +%d %s (%s), want +%d %s", c.name, s.Shift, s.Class, s.Why,
				c.shift, c.class)
		}
	}
	// placement off: the probe stays at the entry, its class still said
	if s := placeBytes([]byte{0xf3, 0x0f, 0x1e, 0xfa, 0x53, 0xc3}, 0x1000, false); s.Shift != 0 || s.Class != "single-stepped" {
		t.Errorf("placement off: got +%d %s", s.Shift, s.Class)
	}
}

// The machine's libc: write's first instruction is single-stepped on glibc 2.36 (a
// rip-relative cmp); every site the rule moves a probe to must be an emulated instruction.
func TestPlaceLibc(t *testing.T) {
	libc := ""
	for _, p := range []string{"/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libc.so.6",
		"/lib64/libc.so.6", "/usr/lib64/libc.so.6"} {
		if _, err := os.Stat(p); err == nil {
			libc = p
			break
		}
	}
	if libc == "" {
		t.Skip("no glibc at the usual paths")
	}
	for _, sym := range []string{"write", "read", "malloc", "sendto", "recvmsg"} {
		s, err := place(libc, sym, true)
		if err != nil {
			t.Fatalf("%s: %v", sym, err)
		}
		if s.Shift > 0 && s.Class != "emulated" {
			t.Errorf("%s moved to +%d onto a %s instruction", sym, s.Shift, s.Class)
		}
		t.Logf("%s: +%d %s %s", sym, s.Shift, s.Class, s.Why)
	}
}

// glibc keeps __clone3 local: only its separate debug file (Debian's libc6-dbg, found by the
// build id) names it. Such a symbol is placed like any other and marked for attach by offset;
// an exported one is not marked.
func TestDebugFileSymbols(t *testing.T) {
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	if _, err := os.Stat(libc); err != nil {
		t.Skip("no glibc at the Debian path")
	}
	f, err := elf.Open(libc)
	if err != nil {
		t.Fatal(err)
	}
	dbg := debugFileOf(f)
	f.Close()
	if dbg == "" {
		t.Skip("libc6-dbg is not installed")
	}
	s, err := place(libc, "__clone3", true)
	if err != nil {
		t.Fatal(err)
	}
	if !s.Debug || s.FileOff == 0 {
		t.Fatalf("__clone3: %+v", s)
	}
	// the site is in the function the debug file names, at the address it gives
	df, err := elf.Open(dbg)
	if err != nil {
		t.Fatal(err)
	}
	dsyms, _ := df.Symbols()
	df.Close()
	e, _ := loadELF(libc)
	for _, ds := range dsyms {
		if ds.Name == "__clone3" {
			off, _ := e.fileOffset(ds.Value)
			if s.FileOff < off || s.FileOff >= off+ds.Size {
				t.Fatalf("__clone3 placed at %#x, outside [%#x, %#x)", s.FileOff, off, off+ds.Size)
			}
		}
	}
	w, err := place(libc, "write", true)
	if err != nil || w.Debug {
		t.Fatalf("write: %+v %v", w, err)
	}
	saved := debugRoot
	debugRoot = t.TempDir()
	defer func() { debugRoot = saved }()
	f, _ = elf.Open(libc)
	defer f.Close()
	if debugFileOf(f) != "" {
		t.Fatal("a debug root with no files still gave a debug file")
	}
}

// A function the dynamic table defines in two versions is placed at the default one, the
// one programs link to (glibc's sched_getaffinity: @GLIBC_2.3.3 and @@GLIBC_2.3.4 differ).
func TestDefaultVersionWins(t *testing.T) {
	libc := "/lib/x86_64-linux-gnu/libc.so.6"
	f, err := elf.Open(libc)
	if err != nil {
		t.Skip("no glibc at the Debian path")
	}
	dyn, _ := f.DynamicSymbols()
	f.Close()
	var def, old uint64
	for _, s := range dyn {
		if s.Name == "sched_getaffinity" && s.HasVersion {
			if s.VersionIndex.IsHidden() {
				old = s.Value
			} else {
				def = s.Value
			}
		}
	}
	if def == 0 || old == 0 || def == old {
		t.Skip("this glibc has no second version of sched_getaffinity")
	}
	e, err := loadELF(libc)
	if err != nil {
		t.Fatal(err)
	}
	if e.syms["sched_getaffinity"] != def {
		t.Fatalf("sched_getaffinity at %#x, want the default version's %#x (old %#x)",
			e.syms["sched_getaffinity"], def, old)
	}
}
