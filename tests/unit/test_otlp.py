"""The agent's OTLP push (jvmos/otlp.py): the mapping of the Prometheus families to OTLP
metrics, the endpoint's checks, and a push's failure counted and said once."""
import http.server
import threading

import pytest
from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    InfoMetricFamily)

from jvmos import JvmosError, agentconfig, otlp
from jvmos.agentconfig import Config

START = 1_800_000_000.0
NOW_NS = 1_800_000_100 * 10**9


def families():
    c = CounterMetricFamily("jvmos_category_calls", "Calls", labels=["pid", "category"])
    c.add_metric(["42", "jni_copy"], 1000, created=START)
    c.add_metric(["43", "jni_copy"], 7)                      # no _created: the agent's start
    t = CounterMetricFamily("jvmos_jvm_cpu_seconds", "CPU", labels=["pid"], unit="seconds")
    t.add_metric(["42"], 2.5, created=START + 1)
    g = GaugeMetricFamily("jvmos_coverage_ratio", "coverage", labels=["pid", "layer"],
                          unit="ratio")
    g.add_metric(["42", "io"], 0.125)
    i = InfoMetricFamily("jvmos_jvm", "a JVM", labels=["pid", "jar"])
    i.add_metric(["42", "/srv/app.jar"], {})
    return [c, t, g, i]


def attrs(point):
    return {a.key: a.value.string_value for a in point.attributes}


def test_counters_are_cumulative_sums_from_their_own_start_and_gauges_stay_gauges():
    req = otlp.to_request(families(), {"service.name": "jvmos-agent"}, NOW_NS, 5 * 10**9)
    (rm,) = req.resource_metrics
    assert attrs(rm.resource) == {"service.name": "jvmos-agent"}
    got = {m.name: m for m in rm.scope_metrics[0].metrics}
    assert set(got) == {"jvmos_category_calls", "jvmos_jvm_cpu_seconds",
                        "jvmos_coverage_ratio", "jvmos_jvm_info"}
    calls = got["jvmos_category_calls"]
    assert calls.WhichOneof("data") == "sum" and calls.sum.is_monotonic
    assert calls.sum.aggregation_temporality == 2          # CUMULATIVE
    pts = {attrs(p)["pid"]: p for p in calls.sum.data_points}
    assert pts["42"].as_double == 1000 and pts["42"].start_time_unix_nano == int(START * 1e9)
    assert pts["43"].as_double == 7 and pts["43"].start_time_unix_nano == 5 * 10**9
    assert all(p.time_unix_nano == NOW_NS for p in pts.values())
    assert attrs(pts["42"]) == {"pid": "42", "category": "jni_copy"}
    cpu = got["jvmos_jvm_cpu_seconds"]
    assert cpu.unit == "s" and cpu.sum.data_points[0].as_double == 2.5
    cov = got["jvmos_coverage_ratio"]
    assert cov.WhichOneof("data") == "gauge" and cov.unit == "1"
    assert cov.gauge.data_points[0].as_double == 0.125
    info = got["jvmos_jvm_info"].gauge.data_points[0]
    assert info.as_double == 1 and attrs(info) == {"pid": "42", "jar": "/srv/app.jar"}
    # no _created series of its own: the start time carries it
    assert not any(n.endswith("_created") for n in got)


@pytest.mark.parametrize("bad", ["127.0.0.1:4318", "ftp://h:1", "http://", "http://h:x",
                                 "http://h:4318?x=1"])
def test_an_endpoint_that_is_no_http_url_is_one_line(bad):
    with pytest.raises(JvmosError, match="--otlp-endpoint") as e:
        agentconfig.parse_otlp_endpoint(bad)
    assert "\n" not in str(e.value)


def test_the_endpoint_is_optional_and_kept_without_a_trailing_slash():
    assert agentconfig.parse_otlp_endpoint(None) is None
    assert agentconfig.parse_otlp_endpoint("") is None
    assert agentconfig.parse_otlp_endpoint("http://[::1]:4318/") == "http://[::1]:4318"


class _Registry:
    def collect(self):
        return families()


class _Agent:
    def __init__(self, endpoint):
        self.cfg = Config(otlp_endpoint=endpoint, otlp_every_s=0.05)


def receiver(answers):
    """A local OTLP/HTTP stand-in: each POST answered by the next of answers, a callable
    (handler) -> None; returns (server, the bodies it got)."""
    got = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            got.append(self.rfile.read(int(self.headers["Content-Length"])))
            answers[min(len(got), len(answers)) - 1](self)

        def log_message(self, *a):
            pass
    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv, got


def _status(code, body=b"", ctype="application/x-protobuf"):
    def answer(h):
        h.send_response(code)
        h.send_header("Content-Type", ctype)
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body)
    return answer


def _hanging(release):
    """An answer that comes once release is set (15 s at most)."""
    def answer(h):
        release.wait(15)
        _status(200)(h)
    return answer


def test_a_collector_that_hangs_costs_a_failed_push_in_bounded_time():
    import time
    release = threading.Event()

    srv, got = receiver([_hanging(release), _status(200)])
    said = []
    try:
        p = otlp.Pusher(_Agent(f"http://127.0.0.1:{srv.server_port}"), _Registry(),
                        said.append, "0.1.0")
        t = time.monotonic()
        assert not p.push_once(deadline_s=0.5)
        assert time.monotonic() - t < 2 and p.counts["failed"] == 1
        # the deadline's or the socket's own timeout, whichever comes first
        assert "no answer within 0.5 s" in said[-1] or "timed out" in said[-1], said
        # while that one hangs, no other is started
        assert not p.push_once(deadline_s=0.5) and len(got) == 1
        release.set()
        p._worker.join(5)
        assert p.push_once(deadline_s=5) and p.ok == 1 and said[-1].endswith("works again")
    finally:
        release.set()
        srv.shutdown()


def test_rejected_points_count_as_partial():
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import \
        ExportMetricsPartialSuccess, ExportMetricsServiceResponse
    body = ExportMetricsServiceResponse(partial_success=ExportMetricsPartialSuccess(
        rejected_data_points=3, error_message="bad name")).SerializeToString()
    srv, _ = receiver([_status(200, body)])
    said = []
    try:
        p = otlp.Pusher(_Agent(f"http://127.0.0.1:{srv.server_port}"), _Registry(),
                        said.append, "0.1.0")
        assert p.push_once()
        assert p.counts == {"ok": 0, "partial": 1, "failed": 0}
        assert any("rejected 3 data points" in s for s in said)
    finally:
        srv.shutdown()


def test_stop_makes_a_last_push_and_returns():
    import time
    srv, got = receiver([_status(200)])
    try:
        a = _Agent(f"http://127.0.0.1:{srv.server_port}")
        a.cfg.otlp_every_s = 3600                # no periodic push before the stop
        p = otlp.Pusher(a, _Registry(), lambda s: None, "0.1.0").start()
        t = time.monotonic()
        p.stop()
        assert time.monotonic() - t < 1.0
        assert len(got) == 1 and p.ok == 1 and not p.thread.is_alive()
    finally:
        srv.shutdown()


def test_a_stop_during_a_hung_push_still_makes_the_last_push():
    import time
    release = threading.Event()

    srv, got = receiver([_hanging(release), _status(200)])
    said = []
    try:
        a = _Agent(f"http://127.0.0.1:{srv.server_port}")
        a.cfg.otlp_every_s = 0.1
        p = otlp.Pusher(a, _Registry(), said.append, "0.1.0").start()
        while len(got) < 1:                     # the first periodic push hangs
            time.sleep(0.02)
        t = time.monotonic()
        p.stop()
        assert time.monotonic() - t < 1.5, said
        assert len(got) == 2 and p.ok == 1, (got, said)
        assert said[-1] == f"OTLP: last push to {a.cfg.otlp_endpoint}: ok"
    finally:
        release.set()
        srv.shutdown()


def test_a_new_endpoint_is_pushed_to_while_the_old_one_hangs_and_said_anew():
    release = threading.Event()

    old, _ = receiver([_hanging(release)])
    new, got = receiver([_status(503), _status(200)])
    said = []
    try:
        a = _Agent(f"http://127.0.0.1:{old.server_port}")
        p = otlp.Pusher(a, _Registry(), said.append, "0.1.0")
        assert not p.push_once(deadline_s=0.3)
        a.cfg.otlp_endpoint = f"http://127.0.0.1:{new.server_port}"     # a SIGHUP's
        assert not p.push_once(deadline_s=5) and len(got) == 1
        assert said[-1].startswith(f"OTLP push to {a.cfg.otlp_endpoint} failed: HTTP 503")
        assert p.push_once(deadline_s=5)
        assert said[-1].endswith("works again")
    finally:
        release.set()
        old.shutdown()
        new.shutdown()


def test_a_kick_pushes_at_once():
    import time
    srv, got = receiver([_status(200)])
    try:
        a = _Agent(f"http://127.0.0.1:{srv.server_port}")
        a.cfg.otlp_every_s = 3600
        p = otlp.Pusher(a, _Registry(), lambda s: None, "0.1.0").start()
        p.kick()
        deadline = time.monotonic() + 5
        while not got and time.monotonic() < deadline:
            time.sleep(0.02)
        assert len(got) == 1
        p.stop()
    finally:
        srv.shutdown()


def test_process_counters_start_at_the_process_start():
    from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
    c = CounterMetricFamily("process_cpu_seconds", "cpu", unit="seconds")
    c.add_metric([], 3.0)
    g = GaugeMetricFamily("process_start_time_seconds", "start", value=1_700_000_000.5)
    req = otlp.to_request([c, g], {}, NOW_NS, 5 * 10**9)
    m = {x.name: x for x in req.resource_metrics[0].scope_metrics[0].metrics}
    assert m["process_cpu_seconds"].sum.data_points[0].start_time_unix_nano == \
        1_700_000_000_500_000_000


def test_a_push_reaches_a_receiver_and_a_failure_is_counted_and_said_once():
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import \
        ExportMetricsServiceRequest
    got, status = [], [200]

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            body = self.rfile.read(int(self.headers["Content-Length"]))
            got.append((self.path, self.headers["Content-Type"], body))
            self.send_response(status[0])
            self.end_headers()

        def log_message(self, *a):
            pass
    srv = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    said = []
    try:
        p = otlp.Pusher(_Agent(f"http://127.0.0.1:{srv.server_port}"), _Registry(),
                        said.append, "0.1.0")
        assert p.push_once() and p.ok == 1
        path, ctype, body = got[-1]
        assert path == "/v1/metrics" and ctype == "application/x-protobuf"
        req = ExportMetricsServiceRequest.FromString(body)
        res = {a.key: a.value.string_value for a in req.resource_metrics[0].resource.attributes}
        assert res["service.name"] == "jvmos-agent" and res["service.version"] == "0.1.0"
        status[0] = 503
        assert not p.push_once() and not p.push_once()
        assert p.failed == 2 and sum("failed: HTTP 503" in s for s in said) == 1
        assert sum("failed" in s for s in said) == 1
        status[0] = 200
        assert p.push_once() and p.ok == 2 and said[-1].endswith("works again")
    finally:
        srv.shutdown()


def test_no_endpoint_no_push():
    p = otlp.Pusher(_Agent(None), _Registry(), lambda s: None, "0.1.0")
    assert not p.push_once() and p.ok == 0 and p.failed == 0


def test_the_deployed_config_knows_every_option_it_shows(tmp_path):
    """deploy/agent.toml with each commented-out option turned on is a valid configuration
    (the OTLP keys among them)."""
    from pathlib import Path
    from types import SimpleNamespace
    src = Path(__file__).resolve().parents[2] / "deploy" / "agent.toml"
    lines = [line[2:] if line.startswith("# ") and "=" in line.split("#")[1] else line
             for line in src.read_text().splitlines()]
    f = tmp_path / "agent.toml"
    f.write_text("\n".join(lines) + "\n")
    cfg = agentconfig.load_config(SimpleNamespace(config=str(f)))
    assert cfg.otlp_endpoint == "http://127.0.0.1:4318" and cfg.otlp_every_s == 15
    assert cfg.sample and cfg.max_jvms == 30 and len(cfg.match) == 3
