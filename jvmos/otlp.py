"""OTLP push of the agent's metrics (`jvmos agent --otlp-endpoint URL`): every
--otlp-every seconds the series that /metrics serves are sent, as they are, to an
OpenTelemetry collector's OTLP/HTTP receiver (POST URL/v1/metrics, protobuf).

The mapping keeps each number's meaning: a Prometheus counter is a cumulative monotonic sum
whose start time is the series' own `_created` (the moment the agent began that JVM's
counters), a gauge is a gauge, an info series is a gauge of 1 with its labels as
attributes. Names are the families' (a counter without `_total`, which a Prometheus
exporter behind the collector adds back); units are UCUM (`s`, `By`, `1`). The resource
names the agent: service.name jvmos-agent, its version and host.

A push that fails is counted (jvmos_agent_otlp_pushes_total{result="failed"}), logged
when it starts failing and when it works again, and the next push carries the counters'
full values: cumulative sums lose nothing between pushes, except the last counts of a JVM
that exits between two pushes (its series go at the next scan). A point's time is the
push's; its value is as of its JVM's last interval."""
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Callable, Dict, Iterable, Optional, Tuple

UNITS = {"seconds": "s", "bytes": "By", "ratio": "1"}
PATH = "/v1/metrics"
PUSH_DEADLINE_S = 10.0      # a push's, whole (a socket operation's: 2 s more)
FINAL_DEADLINE_S = 2.0      # the last push's, at stop: inside docker stop's 10 s


def _attrs(labels: Dict[str, str]):
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    return [KeyValue(key=k, value=AnyValue(string_value=str(v)))
            for k, v in sorted(labels.items())]


def _key(labels: Dict[str, str]) -> Tuple:
    return tuple(sorted(labels.items()))


def to_request(families: Iterable, resource: Dict[str, str], now_ns: int,
               default_start_ns: int):
    """An ExportMetricsServiceRequest of prometheus_client's families (registry.collect()).
    A counter's start is its `_created`; without one, process_* counters start at
    process_start_time_seconds and the others at default_start_ns (the agent's start)."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import \
        ExportMetricsServiceRequest
    from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    CUMULATIVE = m.AGGREGATION_TEMPORALITY_CUMULATIVE
    families = list(families)
    # process_* counters (the client library's, of the agent's process) count from the
    # process's start, which its own gauge gives
    proc_start = next((int(s.value * 1e9) for f in families for s in f.samples
                       if s.name == "process_start_time_seconds"), default_start_ns)
    out = []
    for fam in families:
        unit = UNITS.get(fam.unit or "", fam.unit or "")
        if fam.type == "counter":
            created = {_key(s.labels): s.value for s in fam.samples
                       if s.name == fam.name + "_created"}
            points = []
            for s in fam.samples:
                if s.name != fam.name + "_total":
                    continue
                k = _key(s.labels)
                start = (int(created[k] * 1e9) if k in created else
                         proc_start if fam.name.startswith("process_") else default_start_ns)
                points.append(m.NumberDataPoint(
                    attributes=_attrs(s.labels), as_double=float(s.value),
                    time_unix_nano=now_ns, start_time_unix_nano=start))
            if points:
                out.append(m.Metric(name=fam.name, description=fam.documentation, unit=unit,
                                    sum=m.Sum(data_points=points, is_monotonic=True,
                                              aggregation_temporality=CUMULATIVE)))
            continue
        # a gauge, an info (value 1, its labels the attributes) or any other type's samples,
        # each sample name its own gauge
        by_name: Dict[str, list] = {}
        for s in fam.samples:
            by_name.setdefault(s.name, []).append(m.NumberDataPoint(
                attributes=_attrs(s.labels), as_double=float(s.value), time_unix_nano=now_ns))
        for name, points in by_name.items():
            out.append(m.Metric(name=name, description=fam.documentation, unit=unit,
                                gauge=m.Gauge(data_points=points)))
    return ExportMetricsServiceRequest(resource_metrics=[m.ResourceMetrics(
        resource=Resource(attributes=_attrs(resource)),
        scope_metrics=[m.ScopeMetrics(metrics=out)])])


def post(endpoint: str, body: bytes, timeout: float = PUSH_DEADLINE_S) -> int:
    """One OTLP/HTTP export; returns the data points the collector says it rejected (its
    partial_success, 0 when it took them all); OSError (with the status) when it does not
    take the export, http.client.HTTPException on a broken answer."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import \
        ExportMetricsServiceResponse
    req = urllib.request.Request(endpoint.rstrip("/") + PATH, data=body, method="POST",
                                 headers={"Content-Type": "application/x-protobuf"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            answer = r.read()
            ctype = r.headers.get("Content-Type") or ""
    except urllib.error.HTTPError as e:
        raise OSError(f"HTTP {e.code} {e.reason}") from None
    if not answer or "protobuf" not in ctype:
        return 0
    try:
        return int(ExportMetricsServiceResponse.FromString(answer)
                   .partial_success.rejected_data_points)
    except Exception:       # noqa: BLE001 (an answer we cannot read says nothing rejected)
        return 0


class Pusher:
    """The push thread: every cfg.otlp_every_s while cfg.otlp_endpoint is set (read at each
    push; a SIGHUP's new configuration applies at once: kick()). Each push runs in a worker
    thread of its own and is given PUSH_DEADLINE_S at most: a collector that hangs costs a
    failed push, never the loop, and while one push to an endpoint still hangs no other to it
    is started (one to a new endpoint is). At stop() the push under way is no longer waited
    for, and one last push (the counters' final values) is given FINAL_DEADLINE_S, whatever
    still hangs; its result is logged."""

    def __init__(self, agent, registry, log: Callable[[str], None], version: str,
                 start_s: Optional[float] = None):
        self.agent, self.registry, self._log = agent, registry, log
        self.resource = {"service.name": "jvmos-agent", "service.version": version,
                         "host.name": socket.gethostname()}
        self.start_ns = int((start_s if start_s is not None else time.time()) * 1e9)
        self.counts = {"ok": 0, "partial": 0, "failed": 0}
        self.last_error: Optional[str] = None
        self.stopping = threading.Event()
        self._kick = threading.Event()
        self._worker: Optional[threading.Thread] = None
        self._worker_endpoint: Optional[str] = None
        self._endpoint: Optional[str] = None      # the endpoint the messages below are of
        self._said_first = False
        self.thread = threading.Thread(target=self._loop, name="jvmos-agent-otlp", daemon=True)

    @property
    def ok(self) -> int:
        return self.counts["ok"]

    @property
    def failed(self) -> int:
        return self.counts["failed"]

    def log(self, msg: str) -> None:
        try:
            self._log(msg)
        except Exception:       # noqa: BLE001 (a log that fails must not end the pushes)
            pass

    def start(self) -> "Pusher":
        self.thread.start()
        return self

    def kick(self) -> None:
        """A new configuration (SIGHUP): the next push is now, at its new endpoint."""
        self._kick.set()

    def stop(self) -> None:
        """The last push (the counters' final values), then the loop's end: FINAL_DEADLINE_S
        and a little more at most."""
        self.stopping.set()
        self._kick.set()
        self.thread.join(timeout=FINAL_DEADLINE_S + 1.5)
        if self.thread.is_alive():
            self.log("OTLP: the pusher did not end in time; stopping without it")

    def push_once(self, deadline_s: float = PUSH_DEADLINE_S, final: bool = False) -> bool:
        """One push, waited for deadline_s at most (True: the collector took it). A regular
        push stops waiting when stop() is called (not counted: the last push follows)."""
        cfg = self.agent.cfg
        endpoint = cfg.otlp_endpoint
        if not endpoint:
            return False
        if endpoint != self._endpoint:          # a new endpoint's first success and failure
            self._endpoint, self.last_error, self._said_first = endpoint, None, False
        busy = (self._worker is not None and self._worker.is_alive()
                and self._worker_endpoint == endpoint)
        if busy and not final:
            return self._failed(endpoint, cfg, "the previous push still has no answer")
        body = to_request(self.registry.collect(), self.resource, time.time_ns(),
                          self.start_ns).SerializeToString()
        got: dict = {}

        def work():
            try:
                # the socket's timeout beyond the deadline: the deadline decides, and an
                # abandoned worker still ends on its own
                got["rejected"] = post(endpoint, body, timeout=deadline_s + 2.0)
            except Exception as e:      # noqa: BLE001 (reported by the loop)
                got["error"] = str(getattr(e, "reason", None) or e) or type(e).__name__
        worker = threading.Thread(target=work, name="jvmos-agent-otlp-push", daemon=True)
        self._worker, self._worker_endpoint = worker, endpoint
        worker.start()
        end = time.monotonic() + deadline_s
        while worker.is_alive() and time.monotonic() < end:
            worker.join(timeout=0.05)
            if not final and self.stopping.is_set():
                return False
        if worker.is_alive():
            return self._failed(endpoint, cfg, f"no answer within {deadline_s:g} s", final)
        if "error" in got:
            return self._failed(endpoint, cfg, got["error"], final)
        if got.get("rejected"):
            self.counts["partial"] += 1
            self.log(f"OTLP push to {endpoint}: the collector rejected {got['rejected']} "
                     "data points")
        else:
            self.counts["ok"] += 1
        if final:
            self.log(f"OTLP: last push to {endpoint}: "
                     + ("ok" if not got.get("rejected") else "partial"))
        elif self.last_error is not None:
            self.log(f"OTLP push to {endpoint} works again")
        elif not self._said_first:
            self.log(f"OTLP push to {endpoint}{PATH} every {cfg.otlp_every_s:g} s")
        self._said_first = True
        self.last_error = None
        return True

    def _failed(self, endpoint: str, cfg, why: str, final: bool = False) -> bool:
        self.counts["failed"] += 1
        if final:
            self.log(f"OTLP: last push to {endpoint}: failed: {why}")
        elif self.last_error is None:
            self.log(f"OTLP push to {endpoint} failed: {why} (counted in "
                     "jvmos_agent_otlp_pushes_total{result=\"failed\"}; tried again every "
                     f"{cfg.otlp_every_s:g} s)")
        self.last_error = why
        return False

    def _loop(self) -> None:
        while True:
            self._kick.wait(self.agent.cfg.otlp_every_s)
            self._kick.clear()
            if self.stopping.is_set():
                break
            self._guarded(PUSH_DEADLINE_S, False)
        self._guarded(FINAL_DEADLINE_S, True)

    def _guarded(self, deadline_s: float, final: bool) -> None:
        """push_once, where an error of the mapping itself (a bug) is counted and said, not
        the end of the pushes."""
        try:
            self.push_once(deadline_s, final)
        except Exception as e:      # noqa: BLE001 (the thread must not die)
            self.counts["failed"] += 1
            self.log(f"OTLP push failed: {type(e).__name__}: {e}")
