"""The status rules of jvmos.record (module docstring): which status a recording gets from
bpftrace's exit, its output and what happened to the target. Raw output built by hand."""
import json

from jvmos.analyzers.rawparse import parse_lines
from jvmos.record import STATUS_ORDER, bpftrace_reasons, decide_status, missed_warnings


def lines(*records):
    return [json.dumps(r) for r in records]


END = {"type": "map", "data": {"@end_ns": 5}}
ATTACHED = {"type": "attached_probes", "data": {"probes": 3}}


def test_clean_exit_with_end_output_is_complete():
    raw = parse_lines(lines(ATTACHED, END))
    reasons = bpftrace_reasons(stopped_early=False, rc=0, raw=raw)
    assert reasons == [] and decide_status(reasons) == "complete"


def test_bpftrace_that_stopped_before_the_end_failed():
    raw = parse_lines(lines(ATTACHED))                 # died: no END output either
    reasons = bpftrace_reasons(stopped_early=True, rc=-11, raw=raw)
    assert [st for st, _ in reasons] == ["failed"]    # the END line is not said twice
    assert "exit status -11" in reasons[0][1]
    assert decide_status(reasons) == "failed"


def test_non_zero_exit_after_the_stop_signal_is_truncated():
    reasons = bpftrace_reasons(stopped_early=False, rc=1, raw=parse_lines(lines(ATTACHED, END)))
    assert [st for st, _ in reasons] == ["truncated"] and "status 1" in reasons[0][1]


def test_killed_after_the_stop_signal_is_truncated():
    reasons = bpftrace_reasons(stopped_early=False, rc=None, raw=parse_lines(lines(ATTACHED)))
    assert [st for st, _ in reasons] == ["truncated"] and "killed" in reasons[0][1]


def test_missing_end_output_is_truncated_even_with_exit_0():
    reasons = bpftrace_reasons(stopped_early=False, rc=0, raw=parse_lines(lines(ATTACHED)))
    assert [st for st, _ in reasons] == ["truncated"] and "END output" in reasons[0][1]


def test_parse_errors_are_truncated_and_counted():
    raw = parse_lines(lines(ATTACHED) + ["{not json", "Attaching 3 probes..."] + lines(END))
    reasons = bpftrace_reasons(stopped_early=False, rc=0, raw=raw)
    assert [st for st, _ in reasons] == ["truncated"]
    assert reasons[0][1].startswith("2 line(s) of bpftrace's output did not parse (first: line 2")


def test_lost_events_are_said_with_their_count_and_not_complete():
    raw = parse_lines(lines(ATTACHED, {"type": "lost_events", "data": {"events": 3}},
                            {"type": "lost_events", "data": {"events": 4}}, END))
    reasons = bpftrace_reasons(stopped_early=False, rc=0, raw=raw)
    assert reasons == [("events_lost", reasons[0][1])]
    assert "lost 7 events" in reasons[0][1]            # 3 + 4
    assert decide_status(reasons) == "events_lost"


def test_the_most_serious_status_wins_and_every_reason_is_kept():
    reasons = [("partial", "a"), ("command_failed", "b"), ("truncated", "c"),
               ("target_exited", "d")]
    assert decide_status(reasons) == "truncated"
    assert decide_status(reasons[:2]) == "command_failed"
    assert decide_status([("partial", "a"), ("events_lost", "e")]) == "events_lost"
    assert STATUS_ORDER[0] == "failed" and STATUS_ORDER[-1] == "complete"


def test_missed_entries_are_warned_with_their_count_per_kind():
    raw = parse_lines(lines({"type": "map", "data": {"@missed": {
        "10,syscall_no_entry": 2, "11,syscall_no_entry": 3, "10,jni_copy_no_entry": 1}}}, END))
    assert missed_warnings(raw) == [
        "1 jni copy no entry event(s): a call was in progress when tracing began "
        "(counted, its time not measured)",
        "5 syscall no entry event(s): a call was in progress when tracing began "    # 2 + 3
        "(counted, its time not measured)"]
    # they do not change the status
    assert decide_status(bpftrace_reasons(stopped_early=False, rc=0, raw=raw)) == "complete"


MARKER = {"type": "printf", "data": "jvmos-maps-printed\n"}


def test_maps_printed_at_the_stop_then_killed_is_complete():
    # common.bt printed every map at the stop, then its marker; jvmos killed bpftrace (rc None)
    raw = parse_lines(lines(ATTACHED, {"type": "map", "data": {"@calls": {"1,io,x": 4}}},
                            MARKER))
    assert raw.maps_printed
    reasons = bpftrace_reasons(stopped_early=False, rc=None, raw=raw)
    assert reasons == [] and decide_status(reasons) == "complete"


def test_maps_after_the_marker_are_not_taken():
    # bpftrace's own end-of-run printing after the marker (had it not been killed) would
    # print the maps again, and END's: the figures are those printed at the stop
    raw = parse_lines(lines(ATTACHED, {"type": "map", "data": {"@calls": {"1,io,x": 4}}},
                            MARKER, {"type": "map", "data": {"@calls": {"1,io,x": 9}}}, END))
    assert raw.keyed("@calls") == {("1", "io", "x"): 4}
    assert "@end_ns" not in raw.maps


def test_no_marker_and_killed_is_still_truncated():
    # the maps half printed when bpftrace died: no marker, so not complete
    raw = parse_lines(lines(ATTACHED, {"type": "map", "data": {"@calls": {"1,io,x": 4}}}))
    assert [st for st, _ in bpftrace_reasons(stopped_early=False, rc=None, raw=raw)] == \
        ["truncated"]


def test_a_marker_does_not_hide_parse_errors_or_lost_events():
    raw = parse_lines(lines(ATTACHED, {"type": "lost_events", "data": {"events": 2}}, MARKER)
                      + ["{cut"])
    assert [st for st, _ in bpftrace_reasons(stopped_early=False, rc=None, raw=raw)] == \
        ["truncated", "events_lost"]
