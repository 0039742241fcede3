import json

import pytest

from jvmos.analyzers import bpftrace
from jvmos.analyzers.bpftrace import parse_lines
from jvmos.analyzers.records import Records

from _unit_helpers import FIXTURE_NAMES, map_lines, recording


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_fixture_parses_without_errors(name):
    raw = recording(name).raw
    assert raw.errors == []
    assert raw.attached_probes > 0
    assert raw.attached_probes == recording(name).manifest["attached_probe_count"]
    assert raw.lost_events == 0
    for m in ("calls", "bytes", "time", "exec", "path_bytes", "path_calls"):
        assert m in raw.maps, m      # bpftrace's @ left out


def test_attached_probe_counts_of_the_layers():
    # io alone attaches far fewer probes than io+jni (the census adds ~200 entry points)
    assert recording("blocking-java17").raw.attached_probes == 118
    assert recording("socket-census").raw.attached_probes == 315
    assert recording("randomrw-census").raw.attached_probes == 315


def test_multi_key_split_keeps_colons_and_slashes_in_the_probe():
    raw = recording("blocking-java17").raw
    calls = raw.keyed("calls")
    assert calls, "no @calls entries"
    for key in calls:
        assert len(key) == 3
        pid, cat, probe = key
        assert pid.isdigit()
        assert ":" not in cat and "/" not in cat
        assert probe.startswith(("uprobe:", "uretprobe:", "tracepoint:"))
    write = calls[("6841", "io_syscall", "tracepoint:syscalls:sys_exit_write")]
    assert write >= 100_000
    jvm_probe = ("6841", "jni_copy",
                 "uprobe:/usr/lib/jvm/java-17-openjdk-amd64/lib/server/libjvm.so:9254624")
    assert calls[jvm_probe] >= 100_000     # jni_GetByteArrayRegion, one per Java write
    assert raw.keyed("missed") == {("6841", "syscall_no_entry"): 1}
    assert raw.keyed("exec") == {("6841",): "/usr/bin/java"}
    assert raw.keyed("path_bytes")[("6841", "jni", "out")] == 1000157


def test_keyed_splits_at_most_arity_minus_one_commas():
    raw = parse_lines(map_lines({"@calls": {"1,io_syscall,tracepoint:a:b": 3},
                                 "@missed": {"7,jni_copy_no_entry": 2},
                                 "@exec": {"9": "/bin/a,b"}}))
    assert raw.keyed("calls") == {("1", "io_syscall", "tracepoint:a:b"): 3}
    assert raw.keyed("missed") == {("7", "jni_copy_no_entry"): 2}
    assert raw.keyed("exec") == {("9",): "/bin/a,b"}


def test_keyed_keeps_commas_in_the_last_field():
    raw = parse_lines(map_lines({"@calls": {"1,jni_copy,uprobe:/opt/a,b/libjvm.so:42": 1},
                                 "@missed": {"2,odd,what": 3}}))
    assert raw.keyed("calls") == {("1", "jni_copy", "uprobe:/opt/a,b/libjvm.so:42"): 1}
    assert raw.keyed("missed") == {("2", "odd,what"): 3}


def test_keyed_of_absent_or_scalar_map_is_empty_and_scalar_reads_values():
    raw = parse_lines(map_lines({"@start_ns": 123, "@calls": {}}))
    assert raw.keyed("nope") == {}
    assert raw.keyed("start_ns") == {}
    assert raw.keyed("calls") == {}
    assert raw.scalar("start_ns") == 123
    assert raw.scalar("nope", default=-1) == -1
    assert raw.scalar("calls", default=7) == 7      # a keyed map is not a scalar


def test_malformed_lines_are_recorded_not_raised():
    lines = ['{"type": "attached_probes", "data": {"probes": 5}}',
             '{"type": "map", "data": {"@calls": {"1,io_syscall,tracepoint:x:y": 2}}',  # truncated
             "Attaching 5 probes...",
             "",
             '{"type": "map", "data": {"@exec": {"1": "/bin/true"}}}']
    raw = parse_lines(lines)
    assert len(raw.errors) == 2
    assert raw.errors[0].startswith("line 2:")
    assert raw.errors[1].startswith("line 3:") and "Attaching" in raw.errors[1]
    assert raw.attached_probes == 5
    assert raw.keyed("exec") == {("1",): "/bin/true"}
    assert "calls" not in raw.maps


def test_json_line_that_is_not_an_object_is_recorded_not_raised():
    raw = parse_lines(['[1, 2]', 'null', '{"type": "map", "data": {"@exec": {"1": "/x"}}}'])
    assert len(raw.errors) == 2
    assert raw.keyed("exec") == {("1",): "/x"}


def test_lost_events_are_summed():
    raw = parse_lines(map_lines({}, lost=(3, 4, 10), printf=("a\n", "b\n")))
    assert raw.lost_events == 17


def test_hist_and_stats_records_are_maps_unknown_types_ignored():
    lines = [json.dumps({"type": "hist", "data": {"@h": [{"min": 0, "max": 1, "count": 2}]}}),
             json.dumps({"type": "stats", "data": {"@s": {"count": 1, "average": 2, "total": 2}}}),
             json.dumps({"type": "time", "data": "12:00:00\n"}),
             json.dumps({"type": "map", "data": "not a dict"})]
    raw = parse_lines(lines)
    assert set(raw.maps) == {"h", "s"}
    assert raw.errors == []


def test_empty_input():
    raw = parse_lines([])
    assert raw == Records()
    assert raw.maps == {} and raw.attached_probes == 0 and raw.lost_events == 0
    assert parse_lines(["", "   ", "\n"]).errors == []


def test_parse_file_equals_parse_lines(tmp_path):
    lines = map_lines({"@exec": {"5": "/bin/sh"}}, lost=(2,), attached=9)
    p = tmp_path / "bpftrace.json"
    p.write_text("\n".join(lines) + "\n")
    assert bpftrace.parse_file(p) == parse_lines(lines)


def test_output_cut_off_in_the_middle_of_a_line_is_an_error(tmp_path):
    p = tmp_path / "bpftrace.json"
    # a complete record, then one that stops mid-object (no newline): 2 errors for line 2,
    # "not JSON" and "unterminated"
    p.write_text('{"type": "attached_probes", "data": {"probes": 5}}\n'
                 '{"type": "map", "data": {"@calls": {"1,io')
    raw = bpftrace.parse_file(p)
    assert raw.attached_probes == 5
    assert len(raw.errors) == 2
    assert raw.errors[0].startswith("line 2: not JSON")
    assert raw.errors[1].startswith("line 2: unterminated")
    # a record that parses but has no newline after it was cut off too (the rest is missing)
    p.write_text('{"type": "map", "data": {"@exec": {"1": "/x"}}}')
    raw = bpftrace.parse_file(p)
    assert raw.keyed("exec") == {("1",): "/x"}
    assert len(raw.errors) == 1 and "unterminated" in raw.errors[0]


def test_bytes_that_are_not_utf8_are_replaced_not_raised(tmp_path):
    p = tmp_path / "bpftrace.json"
    p.write_bytes(b'{"type": "map", "data": {"@exec": {"1": "/tmp/\xff"}}}\n')
    raw = bpftrace.parse_file(p)
    assert raw.errors == []
    assert raw.keyed("exec") == {("1",): "/tmp/\ufffd"}
