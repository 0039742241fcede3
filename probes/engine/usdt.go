package main

// USDT sites: a uprobe put at an address the plan gives (a SystemTap SDT probe's pc, from
// the .note.stapsdt notes jvmos reads with jdk.usdt_probes) instead of a symbol's entry.
//
// HotSpot's hotspot_jni probes are in its notes, and the notes survive `strip` where the
// jni_* symbols do not: on a stripped libjvm.so they are the only way to find the JNI
// functions. A site is the `nop` the SDT macro compiled to: the kernel emulates it, so the
// probe is never moved (the arguments the note describes are valid at that very instruction).
//
// Addresses: the note's pc is a link-time virtual address. If the file's .stapsdt.base
// section sits elsewhere than the note recorded (the file was prelinked after the notes were
// written), every pc moves by the same amount (the SystemTap convention). The kernel wants a
// file offset, for the site and for the semaphore (ref_ctr_offset): both are mapped through
// the PT_LOAD segments. cilium/ebpf's UprobeMultiOptions.Addresses are passed to the kernel as
// they are (file offsets, "address + offset"), unlike symbols, which it maps itself.

import (
	"debug/elf"
	"fmt"
	"os"
	"sync"

	"golang.org/x/arch/x86/x86asm"
)

var (
	sdtBaseCache   = map[string]sdtBase{}
	sdtBaseCacheMu sync.Mutex
)

type sdtBase struct {
	addr uint64
	ok   bool
}

// stapsdtBase is the address of the file's .stapsdt.base section (ok=false: it has none).
func stapsdtBase(path string) (uint64, bool, error) {
	sdtBaseCacheMu.Lock()
	defer sdtBaseCacheMu.Unlock()
	if b, ok := sdtBaseCache[path]; ok {
		return b.addr, b.ok, nil
	}
	f, err := elf.Open(path)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	var b sdtBase
	if s := f.Section(".stapsdt.base"); s != nil {
		b = sdtBase{s.Addr, true}
	}
	sdtBaseCache[path] = b
	return b.addr, b.ok, nil
}

// usdtPC is the link-time address of a site in the file as it is now.
func usdtPC(pc, noteBase, secBase uint64, haveSec bool) uint64 {
	if haveSec && noteBase != 0 {
		return pc + secBase - noteBase
	}
	return pc
}

// placeUSDT is the site of a USDT probe at link-time address pc: never moved; the class is
// that of the instruction found there (a nop: emulated). semaphore: the link-time address of
// its counter (0: none), returned as a file offset for the kernel to raise while attached.
func placeUSDT(path string, pc, noteBase, semaphore uint64) (Site, error) {
	e, err := loadELF(path)
	if err != nil {
		return Site{}, err
	}
	secBase, haveSec, err := stapsdtBase(path)
	if err != nil {
		return Site{}, err
	}
	va := usdtPC(pc, noteBase, secBase, haveSec)
	off, ok := e.fileOffset(va)
	if !ok {
		return Site{}, fmt.Errorf("%s: USDT site %#x is outside the file's LOAD segments", path, va)
	}
	site := Site{FileOff: off, Class: "unknown"}
	if semaphore != 0 {
		sva := usdtPC(semaphore, noteBase, secBase, haveSec)
		soff, ok := e.fileOffset(sva)
		if !ok {
			return Site{}, fmt.Errorf("%s: USDT semaphore %#x is outside the file's LOAD segments",
				path, sva)
		}
		site.RefCtrOff = soff
	}
	buf := make([]byte, 16)
	fh, err := os.Open(path)
	if err != nil {
		return Site{}, err
	}
	n, _ := fh.ReadAt(buf, int64(off))
	fh.Close()
	classifySite(&site, buf[:n], va)
	return site, nil
}

// classifySite records the instruction at a site that is not to be moved, and its class.
func classifySite(site *Site, buf []byte, va uint64) {
	in, err := x86asm.Decode(buf, 64)
	if err != nil || in.Len == 0 {
		site.Why = "USDT site (could not decode the instruction there)"
		return
	}
	d := decoded{0, in, buf[:in.Len]}
	site.Insn = insnText(d, va)
	if emulated(in) {
		site.Class = "emulated"
	} else {
		site.Class = "single-stepped"
	}
	site.Why = "USDT site (" + site.Insn + ": " + site.Class + "; never moved)"
}

// UsdtArg is one argument of a USDT site as a program evaluates it (probes/io.h's struct
// jvmos_usdt_arg): kind (1 constant, 2 register, 3 memory at register + disp), size in bytes
// (negative: signed), the register's byte offset in struct pt_regs, the displacement or the
// constant.
type UsdtArg struct {
	Kind uint8  `json:"kind"`
	Size int8   `json:"size"`
	Reg  uint16 `json:"reg"`
	Pad  uint32 `json:"-"`
	Disp int64  `json:"disp"`
}

const usdtMaxArgs = 6

type usdtArgs [usdtMaxArgs]UsdtArg

// usdtArgsOf is the map value of a site's specs (the first usdtMaxArgs; the rest zero, kind 0,
// which a program reads as no argument).
func usdtArgsOf(args []UsdtArg) (usdtArgs, error) {
	var v usdtArgs
	if len(args) > usdtMaxArgs {
		args = args[:usdtMaxArgs]
	}
	for i, a := range args {
		if a.Kind < 1 || a.Kind > 3 {
			return v, fmt.Errorf("argument %d: unknown kind %d", i, a.Kind)
		}
		switch a.Size {
		case 1, -1, 2, -2, 4, -4, 8, -8:
		default:
			return v, fmt.Errorf("argument %d: size %d", i, a.Size)
		}
		v[i] = a
	}
	return v, nil
}

// writeUsdtArgs puts every USDT site's argument specs into its object's usdt_args map, keyed
// by its probe id (the sites of one probe id must agree: one record per id). The host
// engine's processes share the map: an id written with other arguments (two JDKs given the
// same ids) is an error, and nothing is overwritten.
func (e *engine) writeUsdtArgs(us []UprobeSpec) error {
	for _, u := range us {
		if len(u.Args) == 0 {
			continue
		}
		c := e.colls[u.Object]
		if c == nil {
			return fmt.Errorf("plan names object %s, which is not loaded", u.Object)
		}
		m := c.Maps["usdt_args"]
		if m == nil {
			return fmt.Errorf("%s: USDT arguments for %s, but object %s has no usdt_args map",
				u.Path, u.Symbol, u.Object)
		}
		v, err := usdtArgsOf(u.Args)
		if err != nil {
			return fmt.Errorf("%s: %s: %v", u.Path, u.Symbol, err)
		}
		key := uint32(u.ID & 0xffff)
		done := fmt.Sprintf("%s\x00%d", u.Object, key)
		text := fmt.Sprintf("%+v", v)
		if prev, ok := e.usdtDone[done]; ok {
			if prev != text {
				return fmt.Errorf("%s: USDT probe id %d of %s already holds other arguments "+
					"(another library was given the same ids)", u.Path, key, u.Object)
			}
			continue
		}
		if err := m.Put(&key, &v); err != nil {
			return fmt.Errorf("cannot write the USDT arguments of %s: %v", u.Symbol, err)
		}
		e.usdtDone[done] = text
	}
	return nil
}
