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
full values: cumulative sums lose nothing between pushes."""
import socket
import threading
import time
import urllib.error
import urllib.request
from typing import Callable, Dict, Iterable, Optional, Tuple

UNITS = {"seconds": "s", "bytes": "By", "ratio": "1"}
PATH = "/v1/metrics"
TIMEOUT_S = 10.0


def _attrs(labels: Dict[str, str]):
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    return [KeyValue(key=k, value=AnyValue(string_value=str(v)))
            for k, v in sorted(labels.items())]


def _key(labels: Dict[str, str]) -> Tuple:
    return tuple(sorted(labels.items()))


def to_request(families: Iterable, resource: Dict[str, str], now_ns: int,
               default_start_ns: int):
    """An ExportMetricsServiceRequest of prometheus_client's families (registry.collect())."""
    from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import \
        ExportMetricsServiceRequest
    from opentelemetry.proto.metrics.v1 import metrics_pb2 as m
    from opentelemetry.proto.resource.v1.resource_pb2 import Resource
    CUMULATIVE = m.AGGREGATION_TEMPORALITY_CUMULATIVE
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
                start = int(created[k] * 1e9) if k in created else default_start_ns
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


def post(endpoint: str, body: bytes, timeout: float = TIMEOUT_S) -> None:
    """One OTLP/HTTP export; OSError (with the status) when the collector does not take it."""
    req = urllib.request.Request(endpoint.rstrip("/") + PATH, data=body, method="POST",
                                 headers={"Content-Type": "application/x-protobuf"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            r.read()
    except urllib.error.HTTPError as e:
        raise OSError(f"HTTP {e.code} {e.reason}") from None


class Pusher:
    """The push thread: every cfg.otlp_every_s while cfg.otlp_endpoint is set (read again at
    each push, so a SIGHUP that sets, changes or clears it applies at the next one)."""

    def __init__(self, agent, registry, log: Callable[[str], None], version: str):
        self.agent, self.registry, self.log = agent, registry, log
        self.resource = {"service.name": "jvmos-agent", "service.version": version,
                         "host.name": socket.gethostname()}
        self.start_ns = time.time_ns()
        self.ok = 0
        self.failed = 0
        self.last_error: Optional[str] = None
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._loop, name="jvmos-agent-otlp", daemon=True)

    def start(self) -> "Pusher":
        self.thread.start()
        return self

    def stop(self) -> None:
        """Stops the loop after one last push (the counters' final values)."""
        self.stopping.set()
        self.thread.join(timeout=TIMEOUT_S + 5)

    def push_once(self) -> bool:
        endpoint = self.agent.cfg.otlp_endpoint
        if not endpoint:
            return False
        body = to_request(self.registry.collect(), self.resource, time.time_ns(),
                          self.start_ns).SerializeToString()
        try:
            post(endpoint, body)
        except (OSError, ValueError) as e:
            self.failed += 1
            why = str(getattr(e, "reason", None) or e)
            if self.last_error is None:
                self.log(f"OTLP push to {endpoint} failed: {why} (counted in "
                         "jvmos_agent_otlp_pushes_total{result=\"failed\"}; retried each "
                         f"{self.agent.cfg.otlp_every_s:g} s)")
            self.last_error = why
            return False
        self.ok += 1
        if self.last_error is not None:
            self.log(f"OTLP push to {endpoint} works again")
        elif self.ok == 1:
            self.log(f"OTLP push to {endpoint}{PATH} every {self.agent.cfg.otlp_every_s:g} s")
        self.last_error = None
        return True

    def _loop(self) -> None:
        while not self.stopping.wait(self.agent.cfg.otlp_every_s):
            self._guarded()
        self._guarded()

    def _guarded(self) -> None:
        """push_once, where an error of the mapping itself (a bug) is counted and said, not
        the end of the pushes."""
        try:
            self.push_once()
        except Exception as e:      # noqa: BLE001 (the thread must not die)
            self.failed += 1
            self.log(f"OTLP push failed: {type(e).__name__}: {e}")
