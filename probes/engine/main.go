// jvmos-engine: loads jvmos's compiled probes (probes/*.bpf.c) and attaches them to one traced
// process tree, on behalf of `jvmos record` (jvmos/engine.py).
//
//	jvmos-engine PLAN.json
//
// The plan (written by jvmos) names the BPF objects, their read-only constants, the root pid,
// and every uprobe (library, symbol, program, cookie) and tracepoint to attach. The engine
//   - loads common.bpf.o first and hands its shared maps (traced, control, stats, counts) to
//     every layer object, so one traced set and one pair of sums rule them all;
//   - puts each uprobe on the cheapest instruction (placement.go) and attaches a library's
//     uprobes of one program as one uprobe_multi link for the traced pid: the kernel installs
//     the breakpoints in that process only, and attach and detach are one call each. Without
//     uprobe_multi (kernels before 6.6) it opens classic per-pid uprobes, and says so once;
//   - attaches the tracepoints (their programs return at once for an untraced process);
//   - follows the traced tree: a process a traced one forks gets its own links, and a child
//     that starts a program is held at its exec (common.bpf.c) until its links are open.
//
// Protocol: one JSON object per line on stdout ({"event": ...}); commands one per line on
// stdin: "start" (counting begins), "snapshot" (the maps so far), "stop" (counting ends, the
// final maps, then every link closed), "off PID OBJ[,OBJ]" and "on PID OBJ[,OBJ]" (those
// objects' uprobes closed, or opened again, for that process: windows.go). EOF on stdin is a stop without maps: jvmos died. All
// links and programs are file descriptors of this process, so if it is killed the kernel
// detaches everything; nothing is pinned.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/signal"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/btf"
	"github.com/cilium/ebpf/features"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"github.com/cilium/ebpf/rlimit"
	"golang.org/x/sys/unix"
)

type UprobeSpec struct {
	ID         int    `json:"id"`
	Path       string `json:"path"`
	Symbol     string `json:"symbol"`
	Object     string `json:"object"`
	Program    string `json:"program"`
	RetProgram string `json:"ret_program,omitempty"`
	Value      int    `json:"value,omitempty"`
	// Kind "usdt": a USDT site at Address (the note's link-time pc) instead of Symbol's entry;
	// Symbol then only names it ("provider:name"). NoteBase: the .stapsdt.base address the
	// note was written against; Semaphore: the link-time address of its counter, 0 for none.
	Kind      string `json:"kind,omitempty"`
	Address   uint64 `json:"address,omitempty"`
	NoteBase  uint64 `json:"note_base,omitempty"`
	Semaphore uint64 `json:"semaphore,omitempty"`
	// a USDT site's argument specs (jvmos/usdtargs.py), written to the object's usdt_args
	// map under ID for its program to evaluate; none when the program reads no argument
	Args []UsdtArg `json:"args,omitempty"`
	// site: the key of its placed site in engine.sites, set when it is placed (the file's
	// identity, not its path: one library reached by two paths, a container's through
	// /proc/PID/root, is placed once, and a file replaced at the same path is placed anew)
	site string
}

func (u UprobeSpec) usdt() bool { return u.Kind == "usdt" }

// key: the placed site's key in engine.sites (siteKey before it was placed)
func (u UprobeSpec) key() string {
	if u.site != "" {
		return u.site
	}
	return u.siteKey()
}

// fileIdentity: a file's device, inode, size and modification time ("" when it cannot be
// read: the path is then its own identity).
func fileIdentity(path string) string {
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return ""
	}
	return fmt.Sprintf("%d:%d:%d:%d.%d", st.Dev, st.Ino, st.Size, st.Mtim.Sec, st.Mtim.Nsec)
}

// siteKey: a symbol's entry, or one USDT site (a probe inlined twice has two)
func (u UprobeSpec) siteKey() string {
	if u.usdt() {
		return fmt.Sprintf("%s\x00%s\x00%#x", u.Path, u.Symbol, u.Address)
	}
	return u.Path + "\x00" + u.Symbol
}

type TracepointSpec struct {
	ID      int    `json:"id"`
	Object  string `json:"object"`
	Group   string `json:"group"`
	Name    string `json:"name"`
	Program string `json:"program"`
}

type Plan struct {
	Objects     map[string]string                 `json:"objects"` // name -> .bpf.o; "common" first
	Order       []string                          `json:"order"`
	Constants   map[string]map[string]uint32      `json:"constants"`
	Unattached  map[string][]string               `json:"unattached"` // object -> programs loaded, not attached
	RootPid     int                               `json:"root_pid"`
	Counting    bool                              `json:"counting"` // count from the ready line on
	Uprobes     []UprobeSpec                      `json:"uprobes"`
	Tracepoints []TracepointSpec                  `json:"tracepoints"`
	Place       bool                              `json:"place"`
	Follow      bool                              `json:"follow"`
	Classic     bool                              `json:"classic"` // force classic uprobes
	Stats       bool                              `json:"stats"`   // BPF run-time statistics (calibration)
	// Host: the agent's one engine for the host (host.go). No root: JVMs are added and
	// dropped by command, each with its own uprobes and layers; Uprobes is empty.
	Host bool `json:"host,omitempty"`
	Extra       map[string]map[string]interface{} `json:"extra,omitempty"`
}

var out = json.NewEncoder(os.Stdout)
var outMu sync.Mutex

func emit(v map[string]interface{}) {
	outMu.Lock()
	defer outMu.Unlock()
	_ = out.Encode(v)
}

func fail(format string, a ...interface{}) {
	emit(map[string]interface{}{"event": "error", "message": fmt.Sprintf(format, a...)})
	os.Exit(1)
}

type engine struct {
	plan      Plan
	colls     map[string]*ebpf.Collection
	shared    map[string]*ebpf.Map
	sites     map[string]Site // UprobeSpec.key()
	classic   bool
	mu        sync.Mutex
	links     map[int]map[string][]link.Link // pid -> object -> its uprobe links
	windows   map[windowKey]*window          // pid and object -> on-time (windows.go)
	tpLinks   []link.Link
	attached  map[int]bool
	nprobes   map[int]int
	exes      map[string]*link.Executable // guarded by mu (attachPid holds it)
	t0        time.Time
	reader    *ringbuf.Reader
	followed  chan struct{} // closed when follow() has returned
	tpBtf     []string      // the raw tracepoint programs attached, "object:program"
	chain     []string      // the layers in the scheduler chain, by slot (common.bpf.h)
	chainProg []string      // their handlers' program names, by slot
	bits      map[string]uint8 // each layer object's bit in a traced process's value
	// host mode (host.go): each added process's own uprobes and layer bits, and the USDT
	// argument records written so far (object and probe id -> the record, as text)
	pidUprobes map[int][]UprobeSpec
	pidBits    map[int]uint8
	usdtDone   map[string]string
}

// allBits: a traced process's value with every layer on (a recording's root and its tree).
const allBits = uint8(0xff)

func ktime() uint64 {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return uint64(ts.Nano())
}

func (e *engine) load() {
	if err := rlimit.RemoveMemlock(); err != nil {
		fail("cannot lift RLIMIT_MEMLOCK: %v", err)
	}
	e.colls = map[string]*ebpf.Collection{}
	e.shared = map[string]*ebpf.Map{}
	for _, name := range e.plan.Order {
		path := e.plan.Objects[name]
		spec, err := ebpf.LoadCollectionSpec(path)
		if err != nil {
			fail("layer %s: cannot read %s: %v (run make build)", name, path, err)
		}
		if spec.Types != nil {
			if d := sameRecords(spec.Types, name == "common"); d != "" {
				fail("%s does not declare the records this engine reads (%s): rebuild both (make build)", path, d)
			}
		}
		for k, v := range e.plan.Constants[name] {
			vs, ok := spec.Variables[k]
			if !ok {
				fail("layer %s: %s has no constant %s", name, path, k)
			}
			if err := vs.Set(v); err != nil {
				fail("layer %s: constant %s: %v", name, k, err)
			}
		}
		// each layer object its own bit in the traced map's values (common.bpf.h's
		// layer_bit); common keeps them all
		if name != "common" {
			if vs, ok := spec.Variables["layer_bit"]; ok {
				if len(e.bits) >= 8 {
					fail("layer %s: more than 8 layer objects for the traced map's bits", name)
				}
				bit := uint8(1) << len(e.bits)
				if err := vs.Set(bit); err != nil {
					fail("layer %s: layer_bit: %v", name, err)
				}
				e.bits[name] = bit
			}
		}
		// a layer with a scheduler handler (common.bpf.h's chain) takes the next slot
		if prog := chainProgram(spec); prog != "" {
			if err := spec.Variables["switch_slot"].Set(uint32(len(e.chain))); err != nil {
				fail("layer %s: switch_slot: %v", name, err)
			}
			e.chain = append(e.chain, name)
			e.chainProg = append(e.chainProg, prog)
		}
		if e.classic {
			for _, p := range spec.Programs {
				if p.AttachType == ebpf.AttachTraceUprobeMulti {
					p.AttachType = ebpf.AttachNone
				}
			}
		}
		repl := map[string]*ebpf.Map{}
		for m := range spec.Maps {
			if sm, ok := e.shared[m]; ok && !strings.HasPrefix(m, ".") {
				repl[m] = sm
			}
		}
		coll, err := ebpf.NewCollectionWithOptions(spec, ebpf.CollectionOptions{MapReplacements: repl})
		if err != nil {
			// cilium's error names the program and ends with the verifier's decisive line
			fail("layer %s: the kernel refused its programs: %v", name, err)
		}
		e.colls[name] = coll
		// every map is shared by name: common.bpf.h's, and those two layers hand each other
		// (a layer's private maps carry its name as a prefix, so they never meet)
		for m, mp := range coll.Maps {
			if strings.HasPrefix(m, ".") {
				continue // an object's own .rodata/.bss: its constants, never shared
			}
			if _, ok := e.shared[m]; !ok {
				e.shared[m] = mp
			}
		}
	}
	if e.shared["traced"] == nil || e.shared["control"] == nil {
		fail("the common object has no traced/control map")
	}
	if len(e.chain) == 0 {
		return
	}
	if e.shared["switch_chain"] == nil {
		fail("layer %s has a scheduler handler, but the common object has no switch_chain map",
			e.chain[0])
	}
	if len(e.chain) > int(e.shared["switch_chain"].MaxEntries()) {
		fail("%d layers have a scheduler handler; the chain has %d slots", len(e.chain),
			e.shared["switch_chain"].MaxEntries())
	}
	for slot, name := range e.chain {
		p := e.colls[name].Programs[e.chainProg[slot]]
		if err := e.shared["switch_chain"].Put(uint32(slot), p); err != nil {
			fail("layer %s: cannot put its scheduler handler in the chain: %v", name, err)
		}
	}
}

// chainProgram: the name of a layer's handler in the scheduler chain (common.bpf.h), a
// program named chain_*, or "" when it has none. At most one per layer.
func chainProgram(spec *ebpf.CollectionSpec) string {
	for n := range spec.Programs {
		if strings.HasPrefix(n, "chain_") {
			return n
		}
	}
	return ""
}

func (e *engine) setControl(f func(c *commonJvmosControl)) {
	var c commonJvmosControl
	zero := uint32(0)
	_ = e.shared["control"].Lookup(&zero, &c)
	f(&c)
	if err := e.shared["control"].Put(&zero, &c); err != nil {
		fail("cannot write the control map: %v", err)
	}
}

func (e *engine) program(obj, name string) *ebpf.Program {
	p, err := e.programOf(obj, name)
	if err != nil {
		fail("%v", err)
	}
	return p
}

// programOf: a loaded object's program, or why not (a process's uprobes added to the host
// engine name theirs: an error there is that process's, not the engine's end).
func (e *engine) programOf(obj, name string) (*ebpf.Program, error) {
	c := e.colls[obj]
	if c == nil {
		return nil, fmt.Errorf("plan names object %s, which is not loaded", obj)
	}
	p := c.Programs[name]
	if p == nil {
		return nil, fmt.Errorf("object %s has no program %s", obj, name)
	}
	return p, nil
}

// placeAll decides every uprobe's site once, before any attach.
func (e *engine) placeAll() []map[string]interface{} {
	e.sites = map[string]Site{}
	report, err := e.placeSpecs(e.plan.Uprobes)
	if err != nil {
		fail("%v", err)
	}
	return report
}

// placeSpecs decides the sites of these uprobes that no earlier one shares (a library's
// sites are placed once for all the processes that map it), and reports every one.
func (e *engine) placeSpecs(us []UprobeSpec) ([]map[string]interface{}, error) {
	var report []map[string]interface{}
	ident := map[string]string{}
	for i := range us {
		u := &us[i]
		id, seen := ident[u.Path]
		if !seen {
			id = fileIdentity(u.Path)
			ident[u.Path] = id
		}
		key := u.siteKey()
		if id != "" {
			key = id + "\x00" + strings.SplitN(key, "\x00", 2)[1]
		}
		u.site = key
		s, ok := e.sites[key]
		if !ok {
			var err error
			if u.usdt() {
				s, err = placeUSDT(u.Path, u.Address, u.NoteBase, u.Semaphore)
			} else {
				s, err = place(u.Path, u.Symbol, e.plan.Place)
			}
			if err != nil {
				return nil, fmt.Errorf("placing %s: %v", u.Symbol, err)
			}
			e.sites[key] = s
		}
		r := map[string]interface{}{
			"id": u.ID, "path": u.Path, "symbol": u.Symbol, "program": u.Program,
			"ret_program": u.RetProgram, "shift": s.Shift, "insn": s.Insn, "class": s.Class,
			"why": s.Why, "file_offset": s.FileOff, "debug_symbol": s.Debug}
		if u.usdt() {
			r["kind"] = "usdt"
			r["address"] = u.Address
			if s.RefCtrOff != 0 {
				r["ref_ctr_offset"] = s.RefCtrOff
			}
		}
		report = append(report, r)
	}
	return report, nil
}

type group struct {
	path, obj, prog string
	ret             bool
	syms            []string
	offs, cookies   []uint64
	// USDT sites: the group is attached by file offset (files), each site's semaphore
	// (refs, 0: none); set when the group has a USDT site, symbols then give their placed
	// file offset too
	files, refs []uint64
	byAddr      bool
}

// uprobesOf: pid's uprobes, its own when it was added to the host engine, else the plan's
// (a recording's root and the processes it forks).
func (e *engine) uprobesOf(pid int) []UprobeSpec {
	if us, ok := e.pidUprobes[pid]; ok {
		return us
	}
	return e.plan.Uprobes
}

func (e *engine) groups(us []UprobeSpec) []*group {
	byKey := map[string]*group{}
	var order []string
	add := func(u UprobeSpec, prog string, ret bool) {
		k := fmt.Sprintf("%s\x00%s\x00%s\x00%v", u.Path, u.Object, prog, ret)
		g := byKey[k]
		if g == nil {
			g = &group{path: u.Path, obj: u.Object, prog: prog, ret: ret}
			byKey[k] = g
			order = append(order, k)
		}
		s := e.sites[u.key()]
		g.syms = append(g.syms, u.Symbol)
		g.offs = append(g.offs, s.Shift)
		g.files = append(g.files, s.FileOff)
		g.refs = append(g.refs, s.RefCtrOff)
		// by file offset: a USDT site, or a function only the debug file names
		g.byAddr = g.byAddr || u.usdt() || s.Debug
		g.cookies = append(g.cookies, uint64(u.ID&0xffff)|uint64(u.Value&0xffff)<<16)
	}
	for _, u := range us {
		add(u, u.Program, false)
		if u.RetProgram != "" {
			add(u, u.RetProgram, true)
		}
	}
	var gs []*group
	for _, k := range order {
		gs = append(gs, byKey[k])
	}
	return gs
}

// attachPid opens every uprobe for one process: one link per library and program.
func (e *engine) attachPid(pid int) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.attached[pid] {
		return e.nprobes[pid], nil // opened at its fork: the links follow it through exec
	}
	n, err := e.openLinks(pid, nil)
	if err != nil {
		return 0, err
	}
	e.attached[pid] = true
	e.nprobes[pid] = n
	return n, nil
}

// openLinks opens pid's uprobe links of the objects in objs (nil: all), keeps them by object
// and starts their objects' on-time (windows.go). On an error none of them is left open.
// The caller holds mu.
func (e *engine) openLinks(pid int, objs map[string]bool) (int, error) {
	opened := map[string][]link.Link{}
	undo := func() {
		for _, ls := range opened {
			closeAll(ls)
		}
	}
	n := 0
	t0 := ktime()
	for _, g := range e.groups(e.uprobesOf(pid)) {
		if objs != nil && !objs[g.obj] {
			continue
		}
		ls, k, err := e.openGroup(pid, g)
		if err != nil {
			undo()
			return 0, err
		}
		opened[g.obj] = append(opened[g.obj], ls...)
		n += k
	}
	if e.links[pid] == nil {
		e.links[pid] = map[string][]link.Link{}
	}
	t1 := ktime()
	for obj, ls := range opened {
		e.links[pid][obj] = append(e.links[pid][obj], ls...)
		e.windowOpened(pid, obj, t0, t1)
	}
	return n, nil
}

// openGroup: one group's links for pid (one uprobe_multi link, or one classic uprobe per
// symbol) and the number of probes in them.
func (e *engine) openGroup(pid int, g *group) ([]link.Link, int, error) {
	ex, err := e.executable(g.path)
	if err != nil {
		return nil, 0, err
	}
	prog, err := e.programOf(g.obj, g.prog)
	if err != nil {
		return nil, 0, err
	}
	if !e.classic {
		opts := &link.UprobeMultiOptions{Offsets: g.offs, Cookies: g.cookies, PID: uint32(pid)}
		syms := g.syms
		if g.byAddr {
			syms = nil
			opts.Offsets, opts.Addresses = nil, g.files
			if anyNonZero(g.refs) {
				opts.RefCtrOffsets = g.refs
			}
		}
		var l link.Link
		if g.ret {
			l, err = ex.UretprobeMulti(syms, prog, opts)
		} else {
			l, err = ex.UprobeMulti(syms, prog, opts)
		}
		if err != nil {
			return nil, 0, fmt.Errorf("%s %s on %s: %w", kindName(g.ret), g.prog, g.path, err)
		}
		return []link.Link{l}, len(g.syms), nil
	}
	var ls []link.Link
	for i, sym := range g.syms {
		opts := &link.UprobeOptions{Offset: g.offs[i], Cookie: g.cookies[i], PID: pid}
		lookup := sym
		if g.byAddr {
			// by file offset: no name is looked up (a USDT site has none)
			lookup = ""
			opts.Offset, opts.Address, opts.RefCtrOffset = 0, g.files[i], g.refs[i]
		}
		var l link.Link
		if g.ret {
			l, err = ex.Uretprobe(lookup, prog, opts)
		} else {
			l, err = ex.Uprobe(lookup, prog, opts)
		}
		if err != nil {
			closeAll(ls)
			return nil, 0, fmt.Errorf("%s %s:%s: %w", kindName(g.ret), g.path, sym, err)
		}
		ls = append(ls, l)
	}
	return ls, len(ls), nil
}

func anyNonZero(v []uint64) bool {
	for _, x := range v {
		if x != 0 {
			return true
		}
	}
	return false
}

// executable: one cilium Executable per library for the whole recording. It reads the
// library's symbol table once (libjvm.so has tens of thousands of symbols): opening it anew
// for every traced process cost ~0.2 s per process with two JDKs probed.
func (e *engine) executable(path string) (*link.Executable, error) {
	if ex, ok := e.exes[path]; ok {
		return ex, nil
	}
	ex, err := link.OpenExecutable(path)
	if err != nil {
		return nil, err
	}
	e.exes[path] = ex
	return ex, nil
}

func kindName(ret bool) string {
	if ret {
		return "uretprobe"
	}
	return "uprobe"
}

func closeAll(ls []link.Link) {
	for _, l := range ls {
		_ = l.Close()
	}
}

func (e *engine) attachTracepoints() {
	for _, name := range e.plan.Order {
		c := e.colls[name]
		var names []string
		for pn := range c.Programs {
			names = append(names, pn)
		}
		sort.Strings(names)
		for _, pn := range names {
			p := c.Programs[pn]
			if p.Type() != ebpf.Tracing || strings.HasPrefix(pn, "chain_") {
				continue // a chain handler runs from common's dispatcher, never attached
			}
			if pn == "jvmos_switch" && len(e.chain) == 0 {
				continue // no layer has a scheduler handler: no program on every switch
			}
			if slices.Contains(e.plan.Unattached[name], pn) {
				continue // nothing to do in this recording's mode
			}
			l, err := link.AttachTracing(link.TracingOptions{Program: p})
			if err != nil {
				fail("layer %s: cannot attach %s: %v", name, pn, err)
			}
			e.tpLinks = append(e.tpLinks, l)
			e.tpBtf = append(e.tpBtf, name+":"+pn)
		}
	}
	for _, t := range e.plan.Tracepoints {
		l, err := link.Tracepoint(t.Group, t.Name, e.program(t.Object, t.Program),
			&link.TracepointOptions{Cookie: uint64(t.ID & 0xffff)})
		if err != nil {
			fail("tracepoint %s:%s: %v", t.Group, t.Name, err)
		}
		e.tpLinks = append(e.tpLinks, l)
	}
}

// follow handles common.bpf.c's fork and exec events: the new process gets its links, and a
// child held at its exec is let go once they are open (always, also when they are not).
func (e *engine) follow() {
	defer close(e.followed)
	for {
		rec, err := e.reader.Read()
		if err != nil {
			return
		}
		pe, err := procEvent(rec.RawSample)
		if err != nil {
			emit(map[string]interface{}{"event": "warning", "message": err.Error()})
			continue
		}
		pid, held := int(pe.Tgid), pe.Held != 0
		t := time.Now()
		n, aerr := e.attachPid(pid)
		ev := map[string]interface{}{"event": "proc", "pid": pid, "held": held,
			"uprobes": n, "attach_ms": float64(time.Since(t).Microseconds()) / 1000,
			"after_ms": float64(time.Since(e.t0).Microseconds()) / 1000}
		if commonJvmosEvKind(pe.Kind) == commonJvmosEvKindJVMOS_EV_FORK {
			ev["kind"] = "fork"
			ev["parent"] = int(pe.Parent)
		} else {
			ev["kind"] = "exec"
		}
		if aerr != nil {
			ev["error"] = aerr.Error()
		}
		if held {
			letGo(pid)
		}
		emit(ev)
	}
}

// letGo sends SIGCONT to a child common.bpf.c stopped at its exec. bpf_send_signal may
// deliver the SIGSTOP a moment after the event reached the engine (it can be deferred to an
// irq_work), and a SIGCONT that comes first is lost: the child would then stay stopped. So
// the child is let go once it is seen stopped (or after 2 s), and again if it stops in the
// next 10 ms. Seen in `make demo`: a gofmt started by the antlr benchmark stayed stopped.
func letGo(pid int) {
	deadline := time.Now().Add(2 * time.Second)
	for time.Now().Before(deadline) && !isStopped(pid) {
		time.Sleep(200 * time.Microsecond)
	}
	_ = syscall.Kill(pid, syscall.SIGCONT)
	// a deferred SIGSTOP is delivered within microseconds (irq_work): 10 ms covers it
	for i := 0; i < 10; i++ {
		time.Sleep(time.Millisecond)
		if isStopped(pid) {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
	}
}

// isStopped: the process is in the stopped state (T), from /proc/PID/stat.
func isStopped(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	return i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't')
}

// add sums a per-CPU value into sum, column by column.
func add(sum *[]uint64, v []uint64) {
	if *sum == nil {
		*sum = make([]uint64, len(v))
	}
	for i := range v {
		(*sum)[i] += v[i]
	}
}

// maps reads every map the figures are in; per-CPU values are summed here. The rows of stats
// and counts are in the columns the event's schema names (records.go). only: the rows, the
// process record and the windows of that process alone (0: all of them); the lost events
// and the control block are the engine's, whatever only is.
func (e *engine) maps(final bool, only uint32) map[string]interface{} {
	now := ktime() // the snapshot's time, and the end of the windows' on-time it lists
	m := map[string]interface{}{"event": "maps", "final": final, "ktime_ns": now}
	if only != 0 {
		m["pid"] = only
	}
	keep := func(tgid uint32) bool { return only == 0 || tgid == only }
	var stats [][]uint64
	if sm := e.shared["stats"]; sm != nil {
		var k commonJvmosStatKey
		var vs []commonJvmosStatVal
		it := sm.Iterate()
		for it.Next(&k, &vs) {
			if !keep(k.Tgid) {
				continue
			}
			var sum []uint64
			for _, v := range vs {
				add(&sum, values(v))
			}
			stats = append(stats, append(values(k), sum...))
		}
		if err := it.Err(); err != nil {
			m["error"] = "stats: " + err.Error()
		}
	}
	var counts [][]uint64
	if cm := e.shared["counts"]; cm != nil {
		var k commonJvmosCountKey
		var vs []uint64
		it := cm.Iterate()
		for it.Next(&k, &vs) {
			if !keep(k.Tgid) {
				continue
			}
			var s uint64
			for _, v := range vs {
				s += v
			}
			counts = append(counts, append(values(k), s))
		}
		if err := it.Err(); err != nil {
			m["error"] = "counts: " + err.Error()
		}
	}
	var procs []map[string]interface{}
	if pm := e.shared["proc"]; pm != nil {
		var k uint32
		var v commonJvmosProc
		it := pm.Iterate()
		for it.Next(&k, &v) {
			if !keep(k) {
				continue
			}
			p := named(v)
			p["pid"] = k
			procs = append(procs, p)
		}
	}
	lostBy := map[string]uint64{}
	if lm := e.shared["lost"]; lm != nil {
		var k uint32
		var v uint64
		it := lm.Iterate()
		for it.Next(&k, &v) {
			if v > 0 {
				lostBy[fmt.Sprint(k)] = v
			}
		}
	}
	if only != 0 {
		// the lost array is the engine's, not keyed by process: kept apart from the rows
		m["lost"], m["engine_lost"] = map[string]uint64{}, lostBy
	} else {
		m["lost"] = lostBy
	}
	var c commonJvmosControl
	zero := uint32(0)
	_ = e.shared["control"].Lookup(&zero, &c)
	m["stats"], m["counts"], m["procs"] = stats, counts, procs
	m["control"] = named(c)
	m["schema"] = recordSchema()
	m["windows"] = e.windowList(now, int(only))
	return m
}

// drainAndRelease ends the following of the tree at the stop: the events already in the ring
// buffer are handled (their children get links and are let go), then every child that
// common.bpf.c stopped at its exec and that is still marked held is sent SIGCONT, so no
// process of the traced tree is left stopped. Returns the pids let go here.
func (e *engine) drainAndRelease() []int {
	if e.reader != nil && e.followed != nil {
		// Flush wakes the blocked Read: the records already in the ring are handed out,
		// then ErrFlushed ends follow()
		_ = e.reader.Flush()
		select {
		case <-e.followed:
		case <-time.After(5 * time.Second):
		}
	}
	var released []int
	var wg sync.WaitGroup
	pm := e.shared["proc"]
	if pm == nil {
		return released
	}
	var k uint32
	var v commonJvmosProc
	it := pm.Iterate()
	for it.Next(&k, &v) {
		if v.Held == 0 {
			continue
		}
		e.mu.Lock()
		handled := e.attached[int(k)]
		e.mu.Unlock()
		if !handled {
			released = append(released, int(k))
			wg.Add(1)
			go func(pid int) { defer wg.Done(); letGo(pid) }(int(k))
		} else {
			_ = syscall.Kill(int(k), syscall.SIGCONT) // harmless for one already let go
		}
	}
	wg.Wait()
	return released
}

// recursionMisses: the runs the kernel skipped per program (another BPF program was running
// on that CPU): events the figures do not hold.
func (e *engine) recursionMisses() map[string]uint64 {
	out := map[string]uint64{}
	for obj, c := range e.colls {
		for name, p := range c.Programs {
			if st, err := p.Stats(); err == nil && st.RecursionMisses > 0 {
				out[obj+":"+name] = st.RecursionMisses
			}
		}
	}
	return out
}

// progStats: each program's runs and in-kernel run time (counted while the plan's stats are
// on: the calibration of probes whose cost the loop's clock cannot resolve).
func (e *engine) progStats() map[string][]uint64 {
	out := map[string][]uint64{}
	for obj, c := range e.colls {
		for name, p := range c.Programs {
			if st, err := p.Stats(); err == nil && st.RunCount > 0 {
				out[obj+":"+name] = []uint64{st.RunCount, uint64(st.Runtime.Nanoseconds())}
			}
		}
	}
	return out
}

func (e *engine) closeLinks() float64 {
	t := time.Now()
	e.mu.Lock()
	var all []link.Link
	now := ktime()
	for pid, byObj := range e.links {
		for obj, ls := range byObj {
			all = append(all, ls...)
			e.windowClosed(pid, obj, now, now)
		}
		delete(e.links, pid)
	}
	e.mu.Unlock()
	// Closing a uprobe link waits for a grace period in the kernel; closed one after another
	// the waits add up (a process tree of many children has many links), closed side by side
	// they overlap.
	var wg sync.WaitGroup
	work := make(chan link.Link)
	for w := 0; w < 32; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for l := range work {
				_ = l.Close()
			}
		}()
	}
	for _, l := range all {
		work <- l
	}
	// A syscall tracepoint's last perf event waits for grace periods in the kernel as it goes
	// (perf_trace_event_unreg), partly under one mutex: 42 of them took 2.6 s one after
	// another here and 1.5 s side by side.
	for _, l := range e.tpLinks {
		work <- l
	}
	close(work)
	wg.Wait()
	e.tpLinks = nil
	if e.reader != nil {
		_ = e.reader.Close()
	}
	for _, c := range e.colls {
		c.Close()
	}
	return time.Since(t).Seconds()
}

func main() {
	if len(os.Args) == 2 && os.Args[1] == "--features" {
		features_report()
		return
	}
	if len(os.Args) == 2 && os.Args[1] == "--schema" {
		emit(map[string]interface{}{"event": "schema", "schema": recordSchema()})
		return
	}
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: jvmos-engine PLAN.json (run by jvmos record) | --features | --schema")
		os.Exit(2)
	}
	// SIGINT/SIGTERM to the engine alone: stop without maps (jvmos sends "stop" for the maps)
	signal.Ignore(syscall.SIGINT, syscall.SIGHUP)
	raw, err := os.ReadFile(os.Args[1])
	if err != nil {
		fail("cannot read the plan: %v", err)
	}
	e := &engine{links: map[int]map[string][]link.Link{}, windows: map[windowKey]*window{},
		attached: map[int]bool{}, nprobes: map[int]int{}, exes: map[string]*link.Executable{},
		bits: map[string]uint8{}, pidUprobes: map[int][]UprobeSpec{}, pidBits: map[int]uint8{},
		usdtDone: map[string]string{}}
	if err := json.Unmarshal(raw, &e.plan); err != nil {
		fail("bad plan %s: %v", os.Args[1], err)
	}
	e.t0 = time.Now()
	fallback := ""
	if e.plan.Classic {
		e.classic = true
		fallback = "classic per-pid uprobes (asked for): each is opened and closed on its own, slower to detach"
	} else if len(e.plan.Uprobes) > 0 || e.plan.Host {
		if err := features.HaveBPFLinkUprobeMulti(); err != nil {
			e.classic = true
			fallback = "this kernel has no uprobe_multi links (" + err.Error() + "): classic per-pid uprobes, each opened and closed on its own, slower to detach"
		}
	}
	if e.plan.Stats {
		closer, err := ebpf.EnableStats(uint32(unix.BPF_STATS_RUN_TIME))
		if err != nil {
			fail("cannot turn on BPF run statistics: %v", err)
		}
		defer closer.Close()
	}
	tLoad := time.Now()
	e.load()
	loadS := time.Since(tLoad).Seconds()
	sites := e.placeAll()
	if err := e.writeUsdtArgs(e.plan.Uprobes); err != nil {
		fail("%v", err)
	}
	tAttach := time.Now()
	if !e.plan.Host {
		root, bits := uint32(e.plan.RootPid), allBits
		if err := e.shared["traced"].Put(&root, &bits); err != nil {
			fail("cannot trace pid %d: %v", root, err)
		}
	}
	if e.plan.Counting {
		e.setControl(func(c *commonJvmosControl) { c.Counting = 1; c.StartNs = ktime() })
	}
	e.attachTracepoints()
	n := 0
	if !e.plan.Host {
		var err error
		n, err = e.attachPid(e.plan.RootPid)
		if err != nil {
			fail("cannot attach the uprobes of pid %d: %v", e.plan.RootPid, err)
		}
	}
	if rb := e.shared["proc_events"]; rb != nil && e.plan.Follow {
		e.reader, err = ringbuf.NewReader(rb)
		if err != nil {
			fail("cannot read the process events: %v", err)
		}
		e.followed = make(chan struct{})
		go e.follow()
	}
	ready := map[string]interface{}{"event": "ready", "load_s": loadS,
		"attach_s": time.Since(tAttach).Seconds(), "uprobes": n, "sites": sites,
		"tracepoints": len(e.plan.Tracepoints), "tp_btf": len(e.tpBtf), "tp_btf_programs": e.tpBtf,
		"switch_chain": e.chain, "layer_bits": e.bits, "host": e.plan.Host,
		"uprobe_multi": !e.classic, "pid": os.Getpid()}
	if fallback != "" {
		ready["fallback"] = fallback
	}
	emit(ready)
	e.serve()
}

// serve runs the commands on stdin until the stop (or EOF: jvmos is gone).
func (e *engine) serve() {
	in := bufio.NewScanner(os.Stdin)
	for in.Scan() {
		switch strings.TrimSpace(in.Text()) {
		case "start":
			e.setControl(func(c *commonJvmosControl) { c.Counting = 1; c.StartNs = ktime() })
			emit(map[string]interface{}{"event": "started", "ktime_ns": ktime()})
		case "snapshot":
			emit(e.maps(false, 0))
		case "stop":
			e.setControl(func(c *commonJvmosControl) { c.Counting = 0; c.Stopped = 1; c.StopNs = ktime() })
			released := e.drainAndRelease()
			m := e.maps(true, 0)
			m["released_at_stop"] = released
			m["recursion_misses"] = e.recursionMisses()
			if e.plan.Stats {
				m["prog_stats"] = e.progStats()
			}
			emit(m)
			d := e.closeLinks()
			emit(map[string]interface{}{"event": "closed", "detach_s": d})
			return
		case "":
		default:
			if e.windowCommand(strings.TrimSpace(in.Text())) {
				continue
			}
			if e.hostCommand(strings.TrimSpace(in.Text())) {
				continue
			}
			emit(map[string]interface{}{"event": "warning", "message": "unknown command " + in.Text()})
		}
	}
	// EOF: jvmos is gone; no child stays held, and everything is closed (the kernel would
	// close the links as this process exits, but not let a stopped child go)
	e.setControl(func(c *commonJvmosControl) { c.Counting = 0; c.Stopped = 1; c.StopNs = ktime() })
	e.drainAndRelease()
	e.closeLinks()
}

// features_report says what this kernel offers the engine (jvmos doctor reads it).
func features_report() {
	r := map[string]interface{}{"event": "features"}
	if err := rlimit.RemoveMemlock(); err != nil {
		r["memlock"] = err.Error()
	}
	if err := features.HaveBPFLinkUprobeMulti(); err != nil {
		r["uprobe_multi"] = false
		r["uprobe_multi_why"] = err.Error()
	} else {
		r["uprobe_multi"] = true
	}
	if _, err := btf.LoadKernelSpec(); err != nil {
		r["btf"] = false
		r["btf_why"] = err.Error()
	} else {
		r["btf"] = true
	}
	emit(r)
}
