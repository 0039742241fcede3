package main

// host.go: the agent's one engine for the host. `jvmos agent` watches every JVM of a host;
// with an engine process per JVM, 30 JVMs cost 1,091 MB of engines (36 MB each: a Go
// runtime, the kernel's BTF and the layers' programs, once per JVM) and every BTF
// tracepoint program ran once per JVM on every task of the host. The host engine loads the
// layers' programs once (a plan with "host": true and no root) and is told which processes
// to count, one command each:
//
//	add PID FILE   FILE: {"objects": [...], "uprobes": [...]} for that process: its layers
//	               (the common object implied) and its uprobes, with probe ids of its own
//	               plan. The sites are placed (a library's once for every process that maps
//	               it), its USDT arguments written, its layer bits put in the traced map and
//	               its uprobe_multi links opened, each scoped to the pid. Answer: "added".
//	drop PID       its links closed, its traced entry and every row keyed by its tgid in the
//	               stats, counts and proc maps deleted, its windows forgotten. Answer:
//	               "dropped". A process already gone is dropped all the same.
//	snapshot PID   the maps event of that process alone (its rows, its windows).
//
// The stats and counts rows are keyed by tgid, so the processes' figures never mix. A
// layer's bit in the traced map (common.bpf.h) turns the layer on or off for one process:
// its uprobes are opened only where its bit is set, and its tracepoint programs return at
// the filter for a process without it. Probe ids come from each process's plan; jvmos gives
// the plans of different libraries disjoint ids (jvmos/hostengine.py), and a USDT argument
// record written under one id is never overwritten by another (writeUsdtArgs).

import (
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
)

type addFile struct {
	Objects []string     `json:"objects"`
	Uprobes []UprobeSpec `json:"uprobes"`
}

// hostCommand runs add, drop or "snapshot PID" and answers with one event; false when the
// line is none of them.
func (e *engine) hostCommand(line string) bool {
	f := strings.Fields(line)
	if len(f) < 2 {
		return false
	}
	verb := f[0]
	if !(verb == "add" && len(f) == 3) && !(verb == "drop" && len(f) == 2) &&
		!(verb == "snapshot" && len(f) == 2) {
		return false
	}
	pid, err := strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		emit(map[string]interface{}{"event": "warning", "message": fmt.Sprintf("%s: bad pid %q", verb, f[1])})
		return true
	}
	switch verb {
	case "snapshot":
		emit(e.maps(false, uint32(pid)))
	case "add":
		t := time.Now()
		ev := map[string]interface{}{"event": "added", "pid": pid}
		sites, n, err := e.addPid(pid, f[2])
		ev["attach_s"] = time.Since(t).Seconds()
		ev["uprobes"], ev["sites"] = n, sites
		if err != nil {
			ev["error"] = err.Error()
		}
		emit(ev)
	case "drop":
		if !e.plan.Host {
			emit(map[string]interface{}{"event": "warning", "message": "drop: this engine records one process tree, not a host"})
			return true
		}
		t := time.Now()
		rows := e.dropPid(pid)
		emit(map[string]interface{}{"event": "dropped", "pid": pid, "rows": rows,
			"detach_s": time.Since(t).Seconds()})
	}
	return true
}

// addPid: pid traced with the layers and uprobes of the file; on an error nothing of it is
// left (no link, no traced entry).
func (e *engine) addPid(pid int, path string) ([]map[string]interface{}, int, error) {
	if !e.plan.Host {
		return nil, 0, fmt.Errorf("add: this engine records one process tree, not a host")
	}
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, 0, fmt.Errorf("add: %v", err)
	}
	var a addFile
	if err := json.Unmarshal(raw, &a); err != nil {
		return nil, 0, fmt.Errorf("add: bad file %s: %v", path, err)
	}
	bits := uint8(0)
	for _, obj := range a.Objects {
		if obj == "common" {
			continue
		}
		b, ok := e.bits[obj]
		if !ok {
			return nil, 0, fmt.Errorf("add: layer object %s is not loaded in this engine", obj)
		}
		bits |= b
	}
	for _, u := range a.Uprobes {
		if _, ok := e.bits[u.Object]; !ok {
			return nil, 0, fmt.Errorf("add: uprobe %s of object %s, which is not loaded", u.Symbol, u.Object)
		}
	}
	e.mu.Lock()
	if e.attached[pid] {
		e.mu.Unlock()
		return nil, 0, fmt.Errorf("add: pid %d is traced already (drop it first)", pid)
	}
	e.mu.Unlock()
	sites, err := e.placeSpecs(a.Uprobes)
	if err != nil {
		return nil, 0, err
	}
	if err := e.writeUsdtArgs(a.Uprobes); err != nil {
		return nil, 0, err
	}
	key := uint32(pid)
	if err := e.shared["traced"].Put(&key, &bits); err != nil {
		return nil, 0, fmt.Errorf("add: cannot trace pid %d: %v", pid, err)
	}
	e.mu.Lock()
	e.pidUprobes[pid] = a.Uprobes
	e.pidBits[pid] = bits
	e.mu.Unlock()
	n, err := e.attachPid(pid)
	if err != nil {
		_ = e.shared["traced"].Delete(&key)
		e.mu.Lock()
		delete(e.pidUprobes, pid)
		delete(e.pidBits, pid)
		e.mu.Unlock()
		return nil, 0, err
	}
	return sites, n, nil
}

// dropPid: pid's links closed side by side, its traced entry and its rows deleted; returns
// the rows deleted.
func (e *engine) dropPid(pid int) int {
	e.mu.Lock()
	var all []link.Link
	for _, ls := range e.links[pid] {
		all = append(all, ls...)
	}
	delete(e.links, pid)
	for k := range e.windows {
		if k.pid == pid {
			delete(e.windows, k)
		}
	}
	delete(e.attached, pid)
	delete(e.nprobes, pid)
	delete(e.pidUprobes, pid)
	delete(e.pidBits, pid)
	e.forgetUnused()
	e.mu.Unlock()
	var wg sync.WaitGroup
	for _, l := range all {
		wg.Add(1)
		go func(l link.Link) { defer wg.Done(); _ = l.Close() }(l)
	}
	wg.Wait()
	key := uint32(pid)
	_ = e.shared["traced"].Delete(&key)
	return e.deleteRows(key)
}

// forgetUnused drops what no process still traced uses: placed sites, opened executables
// (a library's symbol table each) and the USDT argument records written (their ids may be
// given to another library's plan next). Over a day of JVMs coming and going, in containers
// too (each reaching its libraries through a path of its own), the engine keeps what its
// live processes need and no more. The caller holds mu.
func (e *engine) forgetUnused() {
	sites, paths, usdt := map[string]bool{}, map[string]bool{}, map[string]bool{}
	use := func(us []UprobeSpec) {
		for _, u := range us {
			sites[u.key()] = true
			paths[u.Path] = true
			if len(u.Args) > 0 {
				usdt[fmt.Sprintf("%s\x00%d", u.Object, uint32(u.ID&0xffff))] = true
			}
		}
	}
	use(e.plan.Uprobes)
	for _, us := range e.pidUprobes {
		use(us)
	}
	for k := range e.sites {
		if !sites[k] {
			delete(e.sites, k)
		}
	}
	for p := range e.exes {
		if !paths[p] {
			delete(e.exes, p)
		}
	}
	for k := range e.usdtDone {
		if !usdt[k] {
			delete(e.usdtDone, k)
		}
	}
}

// deleteRows deletes every row of the stats, counts and proc maps keyed by tgid. The keys
// are collected first and deleted after the iteration (deleting while iterating a hash
// map can make the iteration start over).
func (e *engine) deleteRows(tgid uint32) int {
	n := 0
	if sm := e.shared["stats"]; sm != nil {
		n += deleteWhere(sm, func(k *commonJvmosStatKey) bool { return k.Tgid == tgid })
	}
	if cm := e.shared["counts"]; cm != nil {
		n += deleteWhere(cm, func(k *commonJvmosCountKey) bool { return k.Tgid == tgid })
	}
	if pm := e.shared["proc"]; pm != nil {
		if pm.Delete(&tgid) == nil {
			n++
		}
	}
	return n
}

// deleteWhere deletes the keys of m that match, walking its keys alone (no per-CPU values
// copied out); returns how many it deleted.
func deleteWhere[K any](m *ebpf.Map, match func(*K) bool) int {
	var keys []K
	var cur, next K
	err := m.NextKey(nil, &cur)
	for err == nil {
		if match(&cur) {
			keys = append(keys, cur)
		}
		err = m.NextKey(&cur, &next)
		cur = next
	}
	n := 0
	for i := range keys {
		if m.Delete(&keys[i]) == nil {
			n++
		}
	}
	return n
}
