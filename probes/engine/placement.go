package main

// Where in a function a uprobe is cheapest to place (x86-64).
//
// A uprobe replaces an instruction with int3. When it fires, the kernel either emulates the
// instruction it replaced (arch/x86/kernel/uprobes.c: push of a register, relative jmp/jcc/call,
// nop) or copies it out of line and single-steps it, a second trap: about 9 µs a hit in this
// VM against 0.6-0.8 µs for an emulated one (libc write+0, a rip-relative cmp, against
// write+7, the je after it).
//
// place() decodes the first instructions of a function with golang.org/x/arch's x86 decoder and
// returns how far to move the probe so that it sits on the first instruction the kernel
// emulates, provided every instruction before it
//   - runs on every call (straight-line code: not a branch, and not the target of a branch
//     among the function's first 64 bytes), and
//   - leaves the arguments (rdi, rsi, rdx, rcx, r8, r9) and the stack pointer alone (a compare
//     or test, which writes the flags only; a mov/xor into rax, r10 or r11; endbr64; a nop),
// so an entry probe reads the same arguments there, and a return probe finds the return address
// on top of the stack, as at the entry. Otherwise the probe stays at the entry.

import (
	"debug/elf"
	"fmt"
	"os"
	"sync"
	"syscall"

	"golang.org/x/arch/x86/x86asm"
)

// nopEmulated: whether this kernel emulates a nop under a uprobe instead of single-stepping
// it. Recent x86 kernels do (uprobes' nop emulation; this 6.18 kernel does, measured: a
// USDT site, a nop, costs what a push does); for kernels before 6.12 the engine does not
// count on it, so a nop there is classed single-stepped and no probe is moved onto one.
var nopEmulated = kernelAtLeast(6, 12)

func kernelAtLeast(major, minor int) bool {
	var u syscall.Utsname
	if syscall.Uname(&u) != nil {
		return false
	}
	var b []byte
	for _, c := range u.Release {
		if c == 0 {
			break
		}
		b = append(b, byte(c))
	}
	var ma, mi int
	if _, err := fmt.Sscanf(string(b), "%d.%d", &ma, &mi); err != nil {
		return false
	}
	return ma > major || (ma == major && mi >= minor)
}

const (
	placeWindow   = 64 // bytes decoded from the entry
	placeMaxInsns = 6  // instructions looked at before giving up
)

// Site is where one probe of a function was put, and why.
type Site struct {
	Shift   uint64 `json:"shift"` // bytes from the function's entry
	Insn    string `json:"insn"`  // the instruction the probe replaced
	Class   string `json:"class"` // "emulated" or "single-stepped" (or "unknown")
	Why     string `json:"why"`   // the rule that decided
	FileOff uint64 `json:"file_offset"`
	// a USDT site's semaphore as a file offset (0: none): the kernel raises it while attached
	RefCtrOff uint64 `json:"ref_ctr_offset,omitempty"`
	// the symbol was found only in the library's separate debug file (a local function such
	// as glibc's __clone3): the kernel's symbol lookup cannot see it, so it is attached by
	// file offset
	Debug bool `json:"debug_symbol,omitempty"`
}

type elfInfo struct {
	syms  map[string]uint64 // name -> virtual address (defined functions)
	sizes map[string]uint64 // name -> the function's size in bytes (st_size; 0: unknown)
	debug map[string]bool   // names found only in the separate debug file
	loads []elf.ProgHeader
	path  string
}

// debugRoot: where separate debug files are found by build id (Debian's libc6-dbg puts
// glibc's there); a variable for the tests
var debugRoot = "/usr/lib/debug/.build-id"

// debugFileOf: the separate debug file of an ELF, by its GNU build id, or "" if there is none.
func debugFileOf(f *elf.File) string {
	sec := f.Section(".note.gnu.build-id")
	if sec == nil {
		return ""
	}
	data, err := sec.Data()
	// the note: namesz, descsz, type (4 bytes each), "GNU\0", then the id
	if err != nil || len(data) < 16 {
		return ""
	}
	namesz := f.ByteOrder.Uint32(data[0:4])
	descsz := f.ByteOrder.Uint32(data[4:8])
	start := 12 + (namesz+3)&^3
	if descsz < 2 || uint32(len(data)) < start+descsz {
		return ""
	}
	id := fmt.Sprintf("%x", data[start:start+descsz])
	p := fmt.Sprintf("%s/%s/%s.debug", debugRoot, id[:2], id[2:])
	if _, err := os.Stat(p); err != nil {
		return ""
	}
	return p
}

// addSyms adds the defined functions of syms that info does not have yet; debug marks them
// as the debug file's. A name the dynamic table defines in several versions is the default
// one (sched_getaffinity@@GLIBC_2.3.4, not @GLIBC_2.3.3): what a program links to, what the
// kernel's lookup by name (cilium/ebpf) resolves to, and what jvmos/jdk.py plans with; the
// older ones, marked hidden, come second.
func (info *elfInfo) addSyms(syms []elf.Symbol, debug bool) {
	for _, hidden := range []bool{false, true} {
		info.addVersion(syms, debug, hidden)
	}
}

func (info *elfInfo) addVersion(syms []elf.Symbol, debug, hidden bool) {
	for _, s := range syms {
		if (s.HasVersion && s.VersionIndex.IsHidden()) != hidden {
			continue
		}
		if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Value != 0 && s.Section != elf.SHN_UNDEF {
			if _, seen := info.syms[s.Name]; !seen {
				info.syms[s.Name] = s.Value
				info.sizes[s.Name] = s.Size
				if debug {
					info.debug[s.Name] = true
				}
			}
		}
	}
}

var (
	elfCache   = map[string]*elfInfo{}
	elfCacheMu sync.Mutex
)

func loadELF(path string) (*elfInfo, error) {
	elfCacheMu.Lock()
	defer elfCacheMu.Unlock()
	if e, ok := elfCache[path]; ok {
		return e, nil
	}
	f, err := elf.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info := &elfInfo{syms: map[string]uint64{}, sizes: map[string]uint64{},
		debug: map[string]bool{}, path: path}
	for _, get := range []func() ([]elf.Symbol, error){f.Symbols, f.DynamicSymbols} {
		syms, err := get()
		if err != nil {
			continue // a stripped file has no .symtab
		}
		info.addSyms(syms, false)
	}
	// the separate debug file's full symbol table (same link-time addresses): functions the
	// library keeps local, such as glibc's __clone3 and __futex_abstimed_wait_common
	if dp := debugFileOf(f); dp != "" {
		if df, err := elf.Open(dp); err == nil {
			if syms, err := df.Symbols(); err == nil {
				info.addSyms(syms, true)
			}
			df.Close()
		}
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_LOAD {
			info.loads = append(info.loads, p.ProgHeader)
		}
	}
	elfCache[path] = info
	return info, nil
}

func (e *elfInfo) fileOffset(vaddr uint64) (uint64, bool) {
	for _, p := range e.loads {
		if vaddr >= p.Vaddr && vaddr < p.Vaddr+p.Filesz {
			return vaddr - p.Vaddr + p.Off, true
		}
	}
	return 0, false
}

// emulated says whether the kernel emulates this instruction for a uprobe.
func emulated(in x86asm.Inst) bool {
	if in.Len == 4 && in.Op == x86asm.NOP && in.Args[0] == nil && in.Prefix[0] == 0 && in.Opcode == 0 {
		return false // endbr64 (synthesized above): not one the kernel emulates
	}
	switch in.Op {
	case x86asm.PUSH:
		_, isReg := in.Args[0].(x86asm.Reg)
		return isReg
	case x86asm.NOP:
		return nopEmulated
	case x86asm.JMP, x86asm.CALL, x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE, x86asm.JE,
		x86asm.JG, x86asm.JGE, x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO, x86asm.JNP,
		x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS:
		_, rel := in.Args[0].(x86asm.Rel)
		return rel
	}
	return false
}

func isBranch(in x86asm.Inst) bool {
	switch in.Op {
	case x86asm.JMP, x86asm.CALL, x86asm.RET, x86asm.JA, x86asm.JAE, x86asm.JB, x86asm.JBE,
		x86asm.JE, x86asm.JG, x86asm.JGE, x86asm.JL, x86asm.JLE, x86asm.JNE, x86asm.JNO,
		x86asm.JNP, x86asm.JNS, x86asm.JO, x86asm.JP, x86asm.JS, x86asm.JCXZ, x86asm.JECXZ,
		x86asm.JRCXZ, x86asm.LOOP, x86asm.LOOPE, x86asm.LOOPNE:
		return true
	}
	return false
}

var scratch = map[x86asm.Reg]bool{x86asm.RAX: true, x86asm.EAX: true, x86asm.R10: true,
	x86asm.R10L: true, x86asm.R11: true, x86asm.R11L: true, x86asm.AL: true, x86asm.AX: true}

// harmless: the instruction writes only the flags or a register no argument is passed in.
func harmless(in x86asm.Inst, raw []byte) bool {
	if len(raw) >= 4 && raw[0] == 0xf3 && raw[1] == 0x0f && raw[2] == 0x1e && raw[3] == 0xfa {
		return true // endbr64
	}
	switch in.Op {
	case x86asm.CMP, x86asm.TEST, x86asm.NOP:
		return true
	case x86asm.MOV, x86asm.XOR:
		r, ok := in.Args[0].(x86asm.Reg)
		return ok && scratch[r]
	}
	return false
}

type decoded struct {
	at  uint64
	in  x86asm.Inst
	raw []byte
}

func insnText(d decoded, va uint64) string {
	if len(d.raw) == 4 && d.raw[0] == 0xf3 && d.raw[1] == 0x0f && d.raw[2] == 0x1e && d.raw[3] == 0xfa {
		return "endbr64"
	}
	return x86asm.GNUSyntax(d.in, va+d.at, nil)
}

// place decides the site of a probe on symbol in path. move=false keeps every probe at the
// entry (the class is still recorded).
func place(path, symbol string, move bool) (Site, error) {
	e, err := loadELF(path)
	if err != nil {
		return Site{}, err
	}
	va, ok := e.syms[symbol]
	if !ok {
		return Site{}, fmt.Errorf("%s: no function symbol %s", path, symbol)
	}
	off, ok := e.fileOffset(va)
	if !ok {
		return Site{}, fmt.Errorf("%s: %s at %#x is outside the file's LOAD segments", path, symbol, va)
	}
	// the whole function, so that a branch from anywhere in it back into the instructions
	// a probe would skip is seen (bounded: a function's first 64 KiB)
	size := e.sizes[symbol]
	if size < placeWindow {
		size = placeWindow
	}
	if size > 64<<10 {
		size = 64 << 10
	}
	buf := make([]byte, size)
	fh, err := os.Open(path)
	if err != nil {
		return Site{}, err
	}
	n, _ := fh.ReadAt(buf, int64(off))
	fh.Close()
	site := placeBytes(buf[:n], va, move)
	site.FileOff = off + site.Shift
	site.Debug = e.debug[symbol]
	return site, nil
}

// placeBytes applies the rule to the first bytes of a function linked at va.
func placeBytes(buf []byte, va uint64, move bool) Site {
	var insns []decoded
	targets := map[uint64]bool{}
	decodedTo := 0
	for at := 0; at < len(buf); {
		decodedTo = at
		if at+4 <= len(buf) && buf[at] == 0xf3 && buf[at+1] == 0x0f && buf[at+2] == 0x1e && buf[at+3] == 0xfa {
			// endbr64: the decoder knows only its rep prefix; a hint nop, harmless
			insns = append(insns, decoded{uint64(at), x86asm.Inst{Op: x86asm.NOP, Len: 4}, buf[at : at+4]})
			at += 4
			continue
		}
		in, err := x86asm.Decode(buf[at:], 64)
		if err != nil || in.Len == 0 {
			break
		}
		insns = append(insns, decoded{uint64(at), in, buf[at : at+in.Len]})
		if rel, ok := in.Args[0].(x86asm.Rel); ok && isBranch(in) {
			targets[uint64(int64(at)+int64(in.Len)+int64(rel))] = true
		}
		at += in.Len
		decodedTo = at
	}
	// a function the decoder could not read to its end may branch back into the prefix a
	// moved probe would skip, unseen: then the probe stays at the entry (the 64-byte window
	// of a function whose size is unknown counts as its end)
	whole := decodedTo >= len(buf) || decodedTo >= placeWindow && len(buf) == placeWindow
	site := Site{Class: "unknown"}
	if len(insns) == 0 {
		site.Why = "entry (could not decode the function)"
		return site
	}
	first := insns[0]
	site.Insn = insnText(first, va)
	if emulated(first.in) {
		site.Class = "emulated"
		site.Why = "entry (" + site.Insn + ": emulated)"
		return site
	}
	site.Class = "single-stepped"
	if !move {
		site.Why = "entry (placement off)"
		return site
	}
	if !whole {
		site.Why = fmt.Sprintf("entry (the function could be decoded to +%d of %d bytes only: a "+
			"branch back into the instructions before an emulated one cannot be ruled out)",
			decodedTo, len(buf))
		return site
	}
	for i, d := range insns {
		if i >= placeMaxInsns {
			break
		}
		if d.at != 0 && targets[d.at] {
			site.Why = fmt.Sprintf("entry (+%d is a branch target inside the function)", d.at)
			return site
		}
		if emulated(d.in) {
			if d.at == 0 {
				break
			}
			return Site{Shift: d.at, Insn: insnText(d, va), Class: "emulated",
				Why: fmt.Sprintf("+%d (%s: emulated; the instructions before it leave the "+
					"arguments and the stack alone)", d.at, insnText(d, va))}
		}
		if !harmless(d.in, d.raw) {
			site.Why = fmt.Sprintf("entry (%s at +%d is single-stepped, and no emulated "+
				"instruction comes before it)", insnText(d, va), d.at)
			return site
		}
	}
	site.Why = "entry (no emulated instruction among the first ones)"
	return site
}
