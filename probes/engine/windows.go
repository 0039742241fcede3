package main

// Windows: a layer's uprobes closed and opened again for one process while the engine runs,
// so that `jvmos agent` can count a busy JVM for a window of every period instead of all the
// time (duty cycling). A uprobe_multi link opens in one bpf() call and closes at once, and
// the maps keep their sums across a window, so the counts of the windows add up.
//
// The engine measures each object's on-time itself (CLOCK_MONOTONIC, the clock of the BPF
// programs' timestamps). Opening a layer's links took 7-15 ms here, one link after another,
// and a probe counts from the moment its own link is open: a window is taken to start at the
// middle of its opening. Closing them took 60-90 ms, but the kernel removes a link's
// breakpoints first and then waits for the handlers already running (uprobe_unregister_nosync,
// then the sync): the window is taken to end where the closing begins. Measured on a steady
// loop at 20,000 JNI copies a second, the middle of the closing gave rates 16% low with
// 0.2 s windows. The time spent opening and closing is kept too (edge_ns). Every maps event
// lists them ("windows"), so the coverage of an interval (on-time / its length) comes from
// the same clock and the same snapshot as its counts.

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/cilium/ebpf/link"
)

type windowKey struct {
	pid int
	obj string
}

type window struct {
	on      bool
	since   uint64 // ktime of the last open, while on
	totalNs uint64 // on-time of the windows closed
	edgeNs  uint64 // time spent opening and closing its links
	opened  int    // windows opened (the first one at the attach included)
}

// windowOpened and windowClosed keep an object's on-time: its links were opened (closed)
// between t0 and t1. The caller holds mu.
func (e *engine) windowOpened(pid int, obj string, t0, t1 uint64) {
	w := e.windows[windowKey{pid, obj}]
	if w == nil {
		w = &window{}
		e.windows[windowKey{pid, obj}] = w
	}
	if !w.on {
		w.on, w.since = true, t0+(t1-t0)/2
		w.edgeNs += t1 - t0
		w.opened++
	}
}

func (e *engine) windowClosed(pid int, obj string, t0, t1 uint64) {
	if w := e.windows[windowKey{pid, obj}]; w != nil && w.on {
		w.on = false
		w.totalNs += t0 - w.since
		w.edgeNs += t1 - t0
	}
}

// windowList: every object's on-time so far (the open window's part included), for the maps
// event; only: that process's alone (0: every process's).
func (e *engine) windowList(now uint64, only int) []map[string]interface{} {
	e.mu.Lock()
	defer e.mu.Unlock()
	keys := make([]windowKey, 0, len(e.windows))
	for k := range e.windows {
		if only == 0 || k.pid == only {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].pid != keys[j].pid {
			return keys[i].pid < keys[j].pid
		}
		return keys[i].obj < keys[j].obj
	})
	var out []map[string]interface{}
	for _, k := range keys {
		w := e.windows[k]
		on := w.totalNs
		if w.on {
			on += now - w.since
		}
		out = append(out, map[string]interface{}{"pid": k.pid, "object": k.obj, "on": w.on,
			"on_ns": on, "edge_ns": w.edgeNs, "opened": w.opened})
	}
	return out
}

// errNotWindow: a line that is not an on/off command (main's loop warns of it).
var errNotWindow = errors.New("not a window command")

// parseWindowCommand reads "off PID OBJ[,OBJ]" or "on PID OBJ[,OBJ]".
func parseWindowCommand(line string) (verb string, pid int, objs []string, err error) {
	f := strings.Fields(line)
	if len(f) != 3 || (f[0] != "on" && f[0] != "off") {
		return "", 0, nil, errNotWindow
	}
	pid, err = strconv.Atoi(f[1])
	if err != nil || pid <= 0 {
		return "", 0, nil, fmt.Errorf("%s: bad pid %q", f[0], f[1])
	}
	for _, o := range strings.Split(f[2], ",") {
		if o != "" {
			objs = append(objs, o)
		}
	}
	if len(objs) == 0 {
		return "", 0, nil, fmt.Errorf("%s: no object named", f[0])
	}
	return f[0], pid, objs, nil
}

// windowCommand runs an on/off command and answers with one event; false when the line is
// not one (the caller warns of an unknown command).
func (e *engine) windowCommand(line string) bool {
	verb, pid, objs, err := parseWindowCommand(line)
	if err != nil {
		if errors.Is(err, errNotWindow) {
			return false
		}
		emit(map[string]interface{}{"event": "warning", "message": err.Error()})
		return true
	}
	t := time.Now()
	ev := map[string]interface{}{"event": verb, "pid": pid, "objects": objs}
	var n int
	if verb == "off" {
		n = e.closeObjects(pid, objs)
	} else {
		n, err = e.reopenObjects(pid, objs)
	}
	ev["uprobes"] = n
	ev["ms"] = float64(time.Since(t).Microseconds()) / 1000
	ev["ktime_ns"] = ktime()
	if err != nil {
		ev["error"] = err.Error()
	}
	emit(ev)
	return true
}

// closeObjects closes pid's links of these objects side by side (one after another, the
// kernel's wait for each adds up: 9 links took 0.33-0.40 s here); returns how many.
func (e *engine) closeObjects(pid int, objs []string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	byObj := map[string][]link.Link{}
	n := 0
	for _, obj := range objs {
		if ls := e.links[pid][obj]; len(ls) > 0 {
			byObj[obj] = ls
			n += len(ls)
		}
		delete(e.links[pid], obj)
	}
	t0 := ktime()
	var wg sync.WaitGroup
	for _, ls := range byObj {
		for _, l := range ls {
			wg.Add(1)
			go func(l link.Link) { defer wg.Done(); _ = l.Close() }(l)
		}
	}
	wg.Wait()
	t1 := ktime()
	for obj := range byObj {
		e.windowClosed(pid, obj, t0, t1)
	}
	return n
}

// reopenObjects opens pid's links of those of these objects that are closed (an object
// already on is left as it is); pid must have been attached before.
func (e *engine) reopenObjects(pid int, objs []string) (int, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if !e.attached[pid] {
		return 0, fmt.Errorf("on: pid %d is not traced by this engine", pid)
	}
	want := map[string]bool{}
	for _, obj := range objs {
		if len(e.links[pid][obj]) == 0 {
			want[obj] = true
		}
	}
	if len(want) == 0 {
		return 0, nil
	}
	return e.openLinks(pid, want)
}
