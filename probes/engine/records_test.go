package main

import (
	"os"
	"regexp"
	"slices"
	"testing"
)

// The generated Go types, the C header they come from, and the schema the engine publishes
// name the same fields in the same order: a record changed in probes/jvmos.h without a
// rebuild, or a schema that lost a field, fails here.
func TestRecordsFollowTheHeader(t *testing.T) {
	src, err := os.ReadFile("../jvmos.h")
	if err != nil {
		t.Fatal(err)
	}
	structRe := regexp.MustCompile(`(?s)struct (jvmos_\w+) \{(.*?)\n\};`)
	fieldRe := regexp.MustCompile(`(?m)^\s*(?:__u\d+|char)\s+(\w+)(?:\[\w+\])?;`)
	header := map[string][]string{}
	for _, m := range structRe.FindAllStringSubmatch(string(src), -1) {
		for _, f := range fieldRe.FindAllStringSubmatch(m[2], -1) {
			header[m[1]] = append(header[m[1]], f[1])
		}
	}
	for name, gt := range recordTypes {
		var all []string
		for i := 0; i < gt.NumField(); i++ {
			if gt.Field(i).IsExported() {
				all = append(all, cName(gt.Field(i).Name))
			}
		}
		if !slices.Equal(all, header[name]) {
			t.Errorf("struct %s: header %v, generated %v", name, header[name], all)
		}
	}
	s := recordSchema()
	want := map[string][]string{
		"stats":      append(slices.Clone(header["jvmos_stat_key"]), header["jvmos_stat_val"]...),
		"counts":     append(slices.DeleteFunc(slices.Clone(header["jvmos_count_key"]), func(f string) bool { return f == "pad" }), "value"),
		"proc_event": header["jvmos_proc_event"],
		"control":    header["jvmos_control"],
	}
	for k, w := range want {
		if !slices.Equal(s[k], w) {
			t.Errorf("schema %s: %v, header gives %v", k, s[k], w)
		}
	}
}

// A ring-buffer record decodes by the generated type, and a short one is refused.
func TestProcEventDecodes(t *testing.T) {
	raw := []byte{1, 0, 0, 0, 0x39, 0x30, 0, 0, 7, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}
	ev, err := procEvent(raw)
	if err != nil {
		t.Fatal(err)
	}
	if commonJvmosEvKind(ev.Kind) != commonJvmosEvKindJVMOS_EV_FORK || ev.Tgid != 12345 || ev.Parent != 7 || ev.Held != 1 || ev.Ns != 5 {
		t.Errorf("decoded %+v", ev)
	}
	if _, err := procEvent(raw[:20]); err == nil {
		t.Error("a 20-byte event was accepted")
	}
}
