package main

// records.go: the engine's records in its JSON, under the names of probes/jvmos.h.
//
// The Go types of the records (commonJvmos*) are not written here: bpf2go generates them from
// the common object's BTF at build time (the Makefile's RECORD_TYPES), so they follow the C
// structs field by field. Every maps event carries a schema, the name of each column of the
// stats and counts rows in the C structs' order (key fields, then value fields), and jvmos
// decodes the rows by those names (jvmos/engine.py). A record read whole (a process, the
// control block, a ring-buffer event) is written as an object with the same names. Padding
// fields are layout only and never written.

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"unicode"

	"github.com/cilium/ebpf/btf"
)

// cName: the C name of a generated field (bpf2go turns time_ns into TimeNs).
func cName(goField string) string {
	var b strings.Builder
	for i, r := range goField {
		if unicode.IsUpper(r) {
			if i > 0 {
				b.WriteByte('_')
			}
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

func written(f reflect.StructField) bool {
	return f.IsExported() && f.Name != "Pad"
}

// columns: the C names of a record type's fields, padding left out.
func columns(t reflect.Type) []string {
	var out []string
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); written(f) {
			out = append(out, cName(f.Name))
		}
	}
	return out
}

// values: a record's integer fields in the order of columns.
func values(rec any) []uint64 {
	v := reflect.ValueOf(rec)
	var out []uint64
	for i := 0; i < v.NumField(); i++ {
		if f := v.Type().Field(i); written(f) {
			out = append(out, v.Field(i).Uint())
		}
	}
	return out
}

// named: a record as a JSON object under the C names; a char array becomes its string.
func named(rec any) map[string]interface{} {
	v := reflect.ValueOf(rec)
	out := map[string]interface{}{}
	for i := 0; i < v.NumField(); i++ {
		f := v.Type().Field(i)
		if !written(f) {
			continue
		}
		fv := v.Field(i)
		if fv.Kind() == reflect.Array {
			b := make([]byte, 0, fv.Len())
			for j := 0; j < fv.Len() && fv.Index(j).Int() != 0; j++ {
				b = append(b, byte(fv.Index(j).Int()))
			}
			out[cName(f.Name)] = string(b)
		} else {
			out[cName(f.Name)] = fv.Uint()
		}
	}
	return out
}

// recordSchema: the columns of the rows the maps event writes positionally, and the names of
// the records it writes as objects.
func recordSchema() map[string][]string {
	return map[string][]string{
		"stats": append(columns(reflect.TypeFor[commonJvmosStatKey]()),
			columns(reflect.TypeFor[commonJvmosStatVal]())...),
		"counts":     append(columns(reflect.TypeFor[commonJvmosCountKey]()), "value"),
		"proc":       append([]string{"pid"}, columns(reflect.TypeFor[commonJvmosProc]())...),
		"control":    columns(reflect.TypeFor[commonJvmosControl]()),
		"proc_event": columns(reflect.TypeFor[commonJvmosProcEvent]()),
	}
}

// procEvent decodes one ring-buffer record of common.bpf.c.
func procEvent(raw []byte) (commonJvmosProcEvent, error) {
	var ev commonJvmosProcEvent
	if len(raw) < binary.Size(ev) {
		return ev, fmt.Errorf("a process event of %d bytes, %d expected", len(raw), binary.Size(ev))
	}
	err := binary.Read(bytes.NewReader(raw), binary.NativeEndian, &ev)
	return ev, err
}

// recordTypes: each record of probes/jvmos.h and its generated Go type.
var recordTypes = map[string]reflect.Type{
	"jvmos_stat_key": reflect.TypeFor[commonJvmosStatKey](), "jvmos_stat_val": reflect.TypeFor[commonJvmosStatVal](),
	"jvmos_count_key": reflect.TypeFor[commonJvmosCountKey](), "jvmos_control": reflect.TypeFor[commonJvmosControl](),
	"jvmos_proc": reflect.TypeFor[commonJvmosProc](), "jvmos_proc_event": reflect.TypeFor[commonJvmosProcEvent](),
}

// sameRecords: an object of the plan declares the records as the engine's generated types
// have them (a developer's modified object, JVMOS_ENGINE_OBJECTS, may not): every field of
// every record type at the same offset and size. The common object must declare them all; a
// layer's object, which includes the same header, is checked for those its BTF holds.
// Returns what differs, or "".
func sameRecords(spec *btf.Spec, all bool) string {
	for name, gt := range recordTypes {
		var st *btf.Struct
		if err := spec.TypeByName(name, &st); err != nil {
			if !all && errors.Is(err, btf.ErrNotFound) {
				continue
			}
			return fmt.Sprintf("struct %s: %v", name, err)
		}
		var want []string
		for i := 0; i < gt.NumField(); i++ {
			if f := gt.Field(i); f.IsExported() {
				want = append(want, fmt.Sprintf("%s@%d+%d", cName(f.Name), f.Offset, f.Type.Size()))
			}
		}
		var have []string
		for _, m := range st.Members {
			sz, _ := btf.Sizeof(m.Type)
			have = append(have, fmt.Sprintf("%s@%d+%d", m.Name, m.Offset.Bytes(), sz))
		}
		if strings.Join(want, " ") != strings.Join(have, " ") {
			return fmt.Sprintf("struct %s is {%s} in the object, {%s} in the engine",
				name, strings.Join(have, " "), strings.Join(want, " "))
		}
	}
	return ""
}
