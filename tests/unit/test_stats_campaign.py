"""The campaign statistics (seed 000: means, 99% intervals, Welch's t-test, R-delta %) against
values worked out by hand."""
import math

import pytest

from jvmos import netcount
from jvmos.analyzers import stats


def test_summary_99_interval_by_hand():
    # mean 3, sd sqrt(2.5), sem sqrt(0.5); t(0.995, 4 df) = 4.604 (tables)
    s = stats.summary([1, 2, 3, 4, 5], 0.99)
    assert s["mean"] == 3 and s["sd"] == pytest.approx(math.sqrt(2.5))
    # seed 000's equation 7 divides by n: sqrt(10 / 5)
    assert s["sigma"] == pytest.approx(math.sqrt(2.0))
    half = 4.604 * math.sqrt(0.5)
    assert s["ci"][0] == pytest.approx(3 - half, abs=1e-3)
    assert s["ci"][1] == pytest.approx(3 + half, abs=1e-3)
    # 95%: t(0.975, 4) = 2.776, as the hand-written table of mean_ci says
    assert stats.summary([1, 2, 3, 4, 5], 0.95)["ci"][1] == pytest.approx(
        stats.mean_ci([1, 2, 3, 4, 5])[2], abs=1e-3)


def test_summary_edges():
    assert stats.summary([7.0])["ci"] is None
    assert stats.summary([2.0, 2.0, 2.0])["ci"] == [2.0, 2.0]
    with pytest.raises(ValueError):
        stats.summary([])


def test_welch_by_hand():
    xs, ys = [1, 2, 3, 4, 5], [2, 4, 6, 8, 10]
    # means 3 and 6, variances 2.5 and 10: se = sqrt(0.5 + 2), t = -3 / se,
    # df = 2.5^2 / (0.5^2/4 + 2^2/4) = 6.25 / 1.0625
    w = stats.welch(xs, ys, alpha=0.01)
    assert w["t"] == pytest.approx(-3 / math.sqrt(2.5))
    assert w["df"] == pytest.approx(6.25 / 1.0625)
    assert 0.10 < w["p"] < 0.11          # two-sided, t = -1.897 on 5.88 df
    assert w["reject"] is False
    far = stats.welch([1.0, 1.1, 0.9, 1.0], [5.0, 5.2, 4.8, 5.1])
    assert far["reject"] is True and far["p"] < 0.01


def test_equal_floats_have_no_spread():
    # 0.17 ten times: the float mean is not exactly 0.17, the spread must still be 0
    s = stats.summary([0.17] * 10)
    assert s["sd"] == 0.0 and s["sigma"] == 0.0 and s["ci"] == [0.17, 0.17]
    w = stats.welch([0.17] * 10, [0.17] * 10)
    assert w["t"] is None and not w["reject"]
    w = stats.welch([0.17] * 10, [0.18] * 10)
    assert w["t"] is None and w["reject"] and w["p"] == 0.0


def test_welch_without_variance():
    # seed 000's GRAB on sockets: every trial the same time
    assert stats.welch([0.17, 0.17], [0.17, 0.17])["reject"] is False
    assert stats.welch([0.17, 0.17], [0.2, 0.2])["reject"] is True
    with pytest.raises(ValueError):
        stats.welch([1.0], [1.0, 2.0])


def test_pct_change():
    # seed 000: R(S) = 0.17 s, R(X) = 0.702 s -> +312.9%
    assert stats.pct_change(0.17, 0.702) == pytest.approx(312.94, abs=0.01)
    assert stats.pct_change(2.0, 1.0) == -50.0
    with pytest.raises(ValueError):
        stats.pct_change(0.0, 1.0)


def test_netcount_parses_net_bt_output():
    from jvmos import netcount
    text = "\n".join([
        '{"type": "attached_probes", "data": {"probes": 2}}',
        '{"type": "printf", "data": "jvmos-ready\\n"}',
        '{"type": "map", "data": {"@net_bytes": {"from_port": 1404, "to_port": 100470}}}',
        '{"type": "map", "data": {"@net_other_proto": 0}}',
        '{"type": "map", "data": {"@net_packets": {"from_port": 6, "to_port": 7}}}',
        '{"type": "map", "data": {"@net_payload": {"from_port": 1000, "to_port": 100000}}}',
        '{"type": "map", "data": {"@net_syn": {"to_port": 1, "from_port": 1}}}'])
    r = netcount.parse(text)
    assert r["to_port"] == {"packets": 7, "bytes": 100470, "payload_bytes": 100000,
                            "connections": 1, "mean_packet_bytes": 100470 / 7}
    assert r["from_port"]["packets"] == 6 and r["other_proto_packets"] == 0
    empty = netcount.parse('{"type": "map", "data": {"@net_other_proto": 3}}')
    assert empty["to_port"]["packets"] == 0 and empty["to_port"]["mean_packet_bytes"] is None
    assert empty["other_proto_packets"] == 3


class _FakeBt:
    def __init__(self, status):
        self.status = status

    def poll(self):
        return self.status


class _FakeSession:
    def __init__(self, status):
        self.bt = _FakeBt(status)
        self.interrupted = False

    def interrupt(self, timeout=0):
        self.interrupted = True
        return 0


def test_netcount_without_end_is_an_error_not_zero_traffic(tmp_path):
    from jvmos import JvmosError
    c = netcount.NetCounter(4242, tmp_path)
    # bpftrace died by itself: its output has the ready line and nothing else
    c.session = _FakeSession(1)
    c.raw.write_text('{"type": "printf", "data": "jvmos-ready\\n"}\n')
    with pytest.raises(JvmosError, match="exited by itself"):
        c.__exit__(None, None, None)
    assert c.result is None
    # stopped, but no END line (cut short): still not a count
    c.session = _FakeSession(None)
    with pytest.raises(JvmosError, match="did not reach its END"):
        c.__exit__(None, None, None)
    # an orderly stop with no packet of the port: zeros are a measurement now
    c.raw.write_text('{"type": "printf", "data": "jvmos-ready\\n"}\n'
                     '{"type": "printf", "data": "jvmos-maps-printed\\n"}\n')
    c.__exit__(None, None, None)
    assert c.session.interrupted and c.result["to_port"]["packets"] == 0
    # bpftrace's own end-of-run printing after the marker is not read
    c.raw.write_text('{"type": "map", "data": {"@net_packets": {"to_port": 4}}}\n'
                     '{"type": "printf", "data": "jvmos-maps-printed\\n"}\n'
                     '{"type": "map", "data": {"@net_packets": {"to_port": 0}}}\n')
    c.__exit__(None, None, None)
    assert c.result["to_port"]["packets"] == 4
