"""The status rules of jvmos.record (module docstring): which status a recording gets from the
engine's end, its maps and what happened to the target. The engine's end is built by hand."""
from types import SimpleNamespace

from jvmos.analyzers.records import Records
from jvmos.conclusion import engine_reasons
from jvmos.recording import STATUS_ORDER, decide_status, missed_warnings


def run(raw=None, stopped_early=False, end="stopped by jvmos: final maps read, every link "
                                           "closed"):
    return SimpleNamespace(engine_raw=raw, stopped_early=stopped_early, engine_end=end)


def maps(lost=None, errors=(), **named):
    r = Records()
    r.maps.update(named)
    r.errors = list(errors)
    r.engine_lost = dict(lost or {})
    return r


def test_final_maps_after_the_stop_are_complete():
    assert engine_reasons(run(maps())) == []
    assert decide_status(engine_reasons(run(maps()))) == "complete"


def test_an_engine_that_stopped_before_the_end_failed():
    reasons = engine_reasons(run(None, stopped_early=True, end="exited before the stop: boom"))
    assert reasons == [("failed", "the engine stopped before the end of the run: exited "
                                  "before the stop: boom; no figures were read")]
    assert decide_status(reasons) == "failed"


def test_no_final_maps_after_the_stop_is_truncated():
    reasons = engine_reasons(run(None, end="no final maps after the stop: timeout"))
    assert [st for st, _ in reasons] == ["truncated"] and "timeout" in reasons[0][1]


def test_unreadable_entries_are_truncated_and_counted():
    reasons = engine_reasons(run(maps(errors=["id 99: not in the plan", "id 98"])))
    assert reasons == [("truncated", "2 entr(y/ies) of the engine's maps could not be read "
                                     "(first: id 99: not in the plan)")]


def test_lost_events_are_said_with_their_count_and_not_complete():
    reasons = engine_reasons(run(maps(lost={"thread_state": 1200, "recursion": 0,
                                            "stats_entry": 3})))
    assert [st for st, _ in reasons] == ["events_lost"]
    # every kind with its count; a kind that lost nothing is not named
    assert "3 sum(s) not kept" in reasons[0][1] and "1,200 span(s) not followed" in reasons[0][1]
    assert "recursion" not in reasons[0][1] and "skipped" not in reasons[0][1]
    assert decide_status(reasons) == "events_lost"


def test_the_most_serious_status_wins_and_every_reason_is_kept():
    reasons = [("partial", "a"), ("command_failed", "b"), ("truncated", "c"),
               ("target_exited", "d")]
    assert decide_status(reasons) == "truncated"
    assert decide_status(reasons[:2]) == "command_failed"
    assert decide_status([("partial", "a"), ("events_lost", "e")]) == "events_lost"
    assert STATUS_ORDER[0] == "failed" and STATUS_ORDER[-1] == "complete"


def test_missed_entries_are_warned_with_their_count_per_kind():
    raw = maps(missed={("10", "syscall_no_entry"): 2, ("11", "syscall_no_entry"): 3,
                       ("10", "jni_copy_no_entry"): 1})
    assert missed_warnings(raw) == [
        "1 jni copy no entry event(s): a call was in progress when tracing began "
        "(counted, its time not measured)",
        "5 syscall no entry event(s): a call was in progress when tracing began "    # 2 + 3
        "(counted, its time not measured)"]
    # they do not change the status
    assert decide_status(engine_reasons(run(raw))) == "complete"
