package main

import "testing"

func TestParseWindowCommand(t *testing.T) {
	verb, pid, objs, err := parseWindowCommand("off 42 io,mem")
	if err != nil || verb != "off" || pid != 42 || len(objs) != 2 || objs[1] != "mem" {
		t.Fatalf("got %q %d %v %v", verb, pid, objs, err)
	}
	for _, bad := range []string{"off 0 io", "on x io", "on 3 ,", "on 3", "start"} {
		if _, _, _, err := parseWindowCommand(bad); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

func TestWindowOnTimeAddsUp(t *testing.T) {
	e := &engine{windows: map[windowKey]*window{}}
	e.windowOpened(7, "io", 90, 110)  // on from 100
	e.windowOpened(7, "io", 150, 160) // already on: the window goes on from 100
	e.windowClosed(7, "io", 400, 440) // off at 400: the breakpoints go first
	e.windowClosed(7, "io", 500, 510) // already off: nothing added
	e.windowOpened(7, "io", 1000, 1000)
	got := e.windowList(1250, 0)
	if len(got) != 1 || got[0]["on_ns"].(uint64) != 550 || got[0]["on"] != true ||
		got[0]["opened"] != 2 || got[0]["edge_ns"].(uint64) != 60 {
		t.Fatalf("got %v, want 300 + 250 ns on, on, 2 windows, 60 ns of edges", got)
	}
}
