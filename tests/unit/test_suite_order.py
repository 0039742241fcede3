"""The integration suite's order (tests/suiteorder.py): the longest tests dealt so that each
of xdist's equal-count worksteal queues gets a like share of the expected time."""
import importlib.util
from pathlib import Path

_spec = importlib.util.spec_from_file_location(
    "suiteorder", Path(__file__).resolve().parents[1] / "suiteorder.py")
so = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(so)


def queues(order, workers):
    n = len(order)
    out, start = [], 0
    for k in range(workers):            # worksteal's first split: len(pending) // remaining
        num = (n - start) // (workers - k)
        out.append(order[start:start + num])
        start += num
    return out


def test_three_long_tests_go_to_three_queues_each_first():
    secs = {"a": 300, "b": 150, "c": 140, **{f"s{i}": 1 for i in range(9)}}
    order = so.deal(list(secs), secs, 3)
    assert sorted(order) == sorted(secs)
    qs = queues(order, 3)
    # by hand: a, b, c open one queue each; the nine short ones fill the queues' ends
    assert [q[0] for q in qs] == ["a", "b", "c"]
    assert all(len(q) == 4 for q in qs)
    # in file order the same tests put a, b and c in the first queue (its 591 s the suite's)
    assert max(sum(secs[i] for i in q) for q in qs) == 303


def test_unknown_tests_count_as_the_median_and_one_worker_is_longest_first():
    secs = {"a": 10, "b": 20, "c": 30}
    order = so.deal(["x", "a", "b", "c"], secs, 1)
    assert order == ["c", "b", "x", "a"]            # x counts as 20 (median), ties by name


def test_queues_line_up_with_worksteals_split_when_counts_do_not_divide():
    # 10 tests on 3 workers: worksteal sends 3, 3 and 4; a long test placed one slot off
    # would open the next worker's queue instead of its own
    secs = {"a": 100, "b": 90, "c": 80, **{f"s{i}": 1 for i in range(7)}}
    qs = queues(so.deal(list(secs), secs, 3), 3)
    assert [len(q) for q in qs] == [3, 3, 4]
    assert sorted(q[0] for q in qs) == ["a", "b", "c"]
    assert sum(1 for q in qs for i in q if secs[i] > 1) == 3
