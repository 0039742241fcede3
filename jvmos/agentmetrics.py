"""The metrics `jvmos agent` serves: a prometheus_client collector over the agent's counters,
and the HTTP endpoint (GET /metrics; Prometheus's text format, or OpenMetrics when the
scraper asks for it).

Every per-JVM series is labelled pid, main_class and jdk_version (and category, resource or
layer where it is split). Counters start at zero when the agent begins watching a JVM: their
_created sample and jvmos_jvm_watch_start_time_seconds say when, and a restarted agent starts
them again. The names say what each number is: *_estimated_* rests on a calibrated model or
on a probe-effect correction, counts are what the probes saw, a *_ratio names its denominator.
Metric names follow `jvmos export --format openmetrics` (jvmos/export.py) where they mean the
same: jvmos_category_calls_total and jvmos_category_bytes_total.
"""
import json
import socket
import threading
from socketserver import ThreadingMixIn
from typing import Iterable, Tuple
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from prometheus_client.core import (CounterMetricFamily, GaugeMetricFamily,
                                    InfoMetricFamily)
from prometheus_client.exposition import make_wsgi_app
from prometheus_client.registry import CollectorRegistry

from jvmos import __version__

JVM_LABELS = ("pid", "main_class", "jdk_version")
NS = 1e9


class AgentCollector:
    """Reads Agent.exposed() at each scrape (the state as of the last interval of each JVM:
    a scrape never waits for the probes)."""

    def __init__(self, agent):
        self.agent = agent

    def collect(self) -> Iterable:
        a = self.agent
        x = a.exposed()
        cfg = x["cfg"]
        yield from agent_families(x, cfg, a.cpu_seconds())
        yield from jvm_families(x["jvms"])


def agent_families(x: dict, cfg, cpu_s: float) -> Iterable:
    start = x["start"]
    info = InfoMetricFamily(
        "jvmos_agent", "The agent's configuration (labels); the value is 1",
        labels=("version", "mode", "layers", "max_overhead", "match", "max_jvms"))
    info.add_metric([__version__, "count", ",".join(cfg.layers),
                     f"{cfg.max_overhead_pct:g}%" if cfg.max_overhead_pct else "none",
                     " or ".join(m.text for m in cfg.match) or "every JVM",
                     str(cfg.max_jvms) if cfg.max_jvms else "none"], {})
    yield info
    yield GaugeMetricFamily("jvmos_agent_start_time_seconds",
                            "When this agent started (Unix time); every counter of a JVM "
                            "starts at zero at that JVM's watch start, after this",
                            value=start, unit="seconds")
    yield CounterMetricFamily("jvmos_agent_cpu_seconds", "CPU time the agent used (user + "
                              "system, measured): its own process, the children it reaped "
                              "(host engines it stopped) and its live host engine; the "
                              "probes' own "
                              "cost is in the JVMs' CPU, not here",
                              value=cpu_s, created=start, unit="seconds")
    yield GaugeMetricFamily("jvmos_agent_watched_jvms", "JVMs the agent counts in its host "
                            "engine (or watches with every layer shed)", value=len(x["jvms"]))
    yield CounterMetricFamily("jvmos_agent_engine_starts", "Host engines the agent started "
                              "(one runs while any JVM is watched; it stops with the last)",
                              value=x.get("host_starts", 0), created=start)
    elost = CounterMetricFamily(
        "jvmos_agent_engine_lost_events", "Events the host engine lost that no JVM can be "
        "named for (a full ring buffer or map, by kind): every watched JVM's figures may be "
        "short by these; the host engines' count since the agent started", labels=("kind",))
    for kind, n in sorted((x.get("engine_lost") or {}).items()):
        elost.add_metric([kind], n, created=start)
    yield elost
    yield CounterMetricFamily("jvmos_agent_attach_failures", "Failures of a JVM's watch (an "
                              "attach, an interval, an engine's death or a reload that failed; "
                              "each is logged with its reason)",
                              value=x["attach_failures"], created=start)
    yield CounterMetricFamily("jvmos_agent_engine_deaths", "Host engines that stopped without "
                              "being asked to (each is logged; its JVMs are attached again to "
                              "a new one, at most 3 tries, with their shed state reset)",
                              value=x["engine_deaths"], created=start)
    pushes = CounterMetricFamily("jvmos_agent_otlp_pushes", "Pushes of these metrics to "
                                 "--otlp-endpoint, by result: ok, partial (the collector "
                                 "rejected some data points), failed (no answer in time, an "
                                 "error status, or an error of the agent's own mapping: the "
                                 "log says which; the next push carries the counters' full "
                                 "values)", labels=("result",))
    for result, n in sorted((x.get("otlp_pushes") or {}).items()):
        pushes.add_metric([result], n, created=start)
    yield pushes
    reloads = CounterMetricFamily("jvmos_agent_config_reloads", "SIGHUP re-reads of the "
                                  "configuration, by result (failed: the running one was "
                                  "kept)", labels=("result",))
    for result, n in sorted(x["reloads"].items()):
        reloads.add_metric([result], n, created=start)
    yield reloads
    if cfg.max_overhead_pct is not None:
        yield GaugeMetricFamily("jvmos_agent_max_probe_effect_ratio",
                                "--max-overhead: the estimated probe effect a JVM may have, as "
                                "a ratio of its CPU time (0.02 = 2%)",
                                value=cfg.max_overhead_pct / 100.0)
    unwatched = GaugeMetricFamily(
        "jvmos_jvm_unwatched", "A JVM --match selects that the agent does not watch, and why: "
        "max_jvms (--max-jvms reached), attach_failed (its engine could not attach: "
        "permissions, a libjvm without the layers' symbols, a process that only looks like a "
        "JVM; three attempts in all), watch_failed (an interval, its engine or a change of "
        "its layers failed); the value is 1, the detail is in /status",
        labels=list(JVM_LABELS) + ["user", "reason"])
    for u in x.get("unwatched") or []:
        unwatched.add_metric([u["labels"][k] for k in JVM_LABELS]
                             + [u["proc"].user or "", u["reason"]], 1)
    yield unwatched
    if x["scan_seconds"] is not None:
        yield GaugeMetricFamily("jvmos_agent_scan_seconds", "Wall time of the last discovery "
                                "scan of /proc (measured)", value=x["scan_seconds"],
                                unit="seconds")


def jvm_families(jvms: list) -> Iterable:
    L = list(JVM_LABELS)
    fam = dict(_count_families(L), **_window_families(L))
    for j in jvms:
        lv = [j["labels"][k] for k in JVM_LABELS]
        _add_counts(fam, j, lv)
        _add_windows(fam, j, lv)
    yield from fam.values()


def _count_families(L: list) -> dict:
    return {
        "info": InfoMetricFamily(
            "jvmos_jvm", "A JVM the agent watches: its user, jar, JDK home, the process's "
                         "start time and the layers asked for; the value is 1",
            labels=L + ["user", "jar", "jvm_home", "process_start_time", "layers"]),
        "watch_start": GaugeMetricFamily(
            "jvmos_jvm_watch_start_time_seconds", "When the agent began this JVM's counters "
            "(Unix time)", labels=L, unit="seconds"),
        "cpu": CounterMetricFamily(
            "jvmos_jvm_cpu_seconds", "CPU time (user + system) the JVM used during the "
            "agent's intervals (measured, its CPU clock; the probes' cost included); the "
            "moments while its layers are changed are not in it, nor in any other counter",
            labels=L, unit="seconds"),
        "counted": CounterMetricFamily(
            "jvmos_jvm_counted_seconds", "Wall time the counters cover: the summed lengths of "
            "the intervals added to them (the engine's clock, snapshot to snapshot). A count's "
            "increase divided by this one's is a rate per second of the JVM's time that does "
            "not depend on when the agent took its snapshots or Prometheus scraped them (a "
            "busy host delays snapshots; rate() alone then shifts counts between windows); "
            "the guaranteed overhead and the CPU time skip the intervals where they are "
            "unknown (the former counts them in jvmos_guaranteed_overhead_unknown_intervals), "
            "so theirs is a lower bound then",
            labels=L, unit="seconds"),
        "calls": CounterMetricFamily(
            "jvmos_category_calls", "Calls of the category counted by the probes; categories "
            "overlap (kernel_copy and nio_copy count calls that io_syscall counts too)",
            labels=L + ["category"]),
        "bytes": CounterMetricFamily(
            "jvmos_category_bytes", "Bytes moved by the category's calls as the probes saw "
            "them; categories overlap as the calls do", labels=L + ["category"], unit="bytes"),
        "time": CounterMetricFamily(
            "jvmos_category_estimated_time_seconds",
            "Time spent in the category, summed over threads: method=estimated is a "
            "calibrated model's estimate from the counted calls and bytes (--mode count), "
            "method=measured a time the probes measured less the estimated cost of the "
            "probes inside it (an interval where that went below 0 adds 0, see "
            "jvmos_category_floored_intervals_total); both rest on calibrations",
            labels=L + ["category", "method"], unit="seconds"),
        "floored": CounterMetricFamily(
            "jvmos_category_floored_intervals", "Intervals whose probe-effect correction "
            "exceeded the category's measured time: they added 0 to its estimated time",
            labels=L + ["category"]),
        "guaranteed": CounterMetricFamily(
            "jvmos_guaranteed_overhead_estimated_seconds",
            "Guaranteed overhead of one resource (io: jni_copy+nio_copy+kernel_copy; threads, "
            "mem, links as jvmos record sums them): the sum of its categories' estimated "
            "times, only over intervals where every one of them was known; for a layer "
            "counted in windows, of the windows only (the ratio gauge extrapolates)",
            labels=L + ["resource"], unit="seconds"),
        "g_unknown": CounterMetricFamily(
            "jvmos_guaranteed_overhead_unknown_intervals", "Intervals in which a category of "
            "the resource had no time (a calibration missing): not in the guaranteed "
            "overhead's counter", labels=L + ["resource"]),
        "g_ratio": GaugeMetricFamily(
            "jvmos_guaranteed_overhead_of_cpu_ratio", "The last interval's guaranteed "
            "overhead, each windowed resource's part extrapolated to the whole interval (its "
            "count / its layer's coverage), divided by the JVM's CPU time in that interval "
            "(0.01 = 1%); absent when a term was unknown or its layer was off all the "
            "interval", labels=L),
        "probe": CounterMetricFamily(
            "jvmos_probe_effect_estimated_seconds", "CPU time the agent's probes added to "
            "the JVM, estimated: hits counted x the calibrated cost per hit (platform file, "
            "engine_probes), by layer (common: the probes every engine has); a kind without "
            "a calibrated cost is left out (jvmos_probe_effect_unknown_intervals_total)",
            labels=L + ["layer"], unit="seconds"),
        "p_unknown": CounterMetricFamily(
            "jvmos_probe_effect_unknown_intervals", "Intervals in which some probe that "
            "fired had no calibrated cost: the probe effect of those is a lower bound",
            labels=L),
        "p_ratio": GaugeMetricFamily(
            "jvmos_probe_effect_of_cpu_ratio", "The last interval's estimated probe effect "
            "(every layer, in its windows) divided by the JVM's CPU time in it: what "
            "--max-overhead bounds (windows are sized to 80% of it; the layers that are not "
            "windowed are shed when the rest passes it)", labels=L),
        "shed": GaugeMetricFamily(
            "jvmos_probes_shed", "1 while the layer's probes are taken off the JVM because "
            "its probe effect passed --max-overhead, 0 while attached", labels=L + ["layer"]),
        "sheds": CounterMetricFamily(
            "jvmos_probe_sheds", "Times the layer was shed from the JVM", labels=L + ["layer"]),
        "returns": CounterMetricFamily(
            "jvmos_probe_returns", "Times a shed layer was put back after its back-off",
            labels=L + ["layer"]),
        "intervals": CounterMetricFamily(
            "jvmos_jvm_intervals", "Intervals (snapshot differences) added to the counters",
            labels=L),
    }


def _window_families(L: list) -> dict:
    """Duty cycling's series (jvmos/dutycycle.py): coverage, windows, extrapolations."""
    return {
        "coverage": GaugeMetricFamily(
            "jvmos_coverage_ratio", "The share of the last interval the layer's probes were "
            "on (their on-time, measured by the engine, / the interval): 1 for a layer on all "
            "the time, under 1 for a layer counted in windows (duty cycling), 0 for a "
            "windowed layer shed (a shed layer that is not windowed has no series: its "
            "programs are gone); its counts (jvmos_category_calls_total) are exact for that "
            "share only",
            labels=L + ["layer"]),
        "window": GaugeMetricFamily(
            "jvmos_window_seconds", "The window sized for the current interval of a layer "
            "counted in windows (duty cycling): how long its probes are meant to be on in "
            "this --interval; what they were on is measured, in jvmos_layer_on_seconds_total",
            labels=L + ["layer"], unit="seconds"),
        "on": CounterMetricFamily(
            "jvmos_layer_on_seconds", "Time the layer's probes were on while the agent "
            "watched the JVM (measured by the engine; the counts are of this time)",
            labels=L + ["layer"], unit="seconds"),
        "windows": CounterMetricFamily(
            "jvmos_layer_windows", "Windows in which the layer's probes were turned on again "
            "(duty cycling; the first attach is not one)", labels=L + ["layer"]),
        "calls_est": CounterMetricFamily(
            "jvmos_category_calls_estimated", "Calls of the category extrapolated to the "
            "whole of each interval from its windows (each interval's count / its layer's "
            "coverage): an estimate, exact where the coverage was 1; intervals in which the "
            "layer was off (shed) add nothing", labels=L + ["category"]),
        "bytes_est": CounterMetricFamily(
            "jvmos_category_bytes_estimated", "Bytes of the category extrapolated as "
            "jvmos_category_calls_estimated_total is", labels=L + ["category"],
            unit="bytes"),
        "rate": GaugeMetricFamily(
            "jvmos_category_call_rate_estimated", "Calls per second of the category "
            "extrapolated from its layer's last windows (up to 12): bound=estimate is the "
            "count / the on-time; lower95 and upper95 its 95% interval (Student's t over the "
            "windows' spread, from 3 windows on; jvmos_category_rate_windows says how many)",
            labels=L + ["category", "bound"]),
        "rate_n": GaugeMetricFamily(
            "jvmos_category_rate_windows", "Intervals with on-time the category's rate "
            "estimate rests on (one entry per interval: a window that spans a snapshot is "
            "two, a layer always on gives one per interval)", labels=L + ["category"]),
        "prof_windows": CounterMetricFamily(
            "jvmos_profile_windows", "CPU profile windows (--sample) finished for the JVM; "
            "the last is served as pprof at /debug/pprof/profile?pid=PID", labels=L),
        "prof_failures": CounterMetricFamily(
            "jvmos_profile_failures", "Profile windows that could not be started or wrote "
            "nothing (the reason is in /status and the log)", labels=L),
        "prof_last": GaugeMetricFamily(
            "jvmos_profile_last_window_end_time_seconds", "When the JVM's last finished "
            "profile window ended (Unix time)", labels=L, unit="seconds"),
        "prof_skipped": CounterMetricFamily(
            "jvmos_profile_skipped", "Profile windows not started: even the longest window "
            "without a sample, or the coarsest sampling, would pass the sampler's share of "
            "--max-overhead, or the JVM used no CPU (the reason is in /status and the log)",
            labels=L),
        "prof_interval": GaugeMetricFamily(
            "jvmos_profile_interval_seconds", "The last profile window's sampling interval: a "
            "sample per this much of the process's CPU time; 0.01 by default (and always "
            "without --max-overhead), longer when the sampler's share of --max-overhead "
            "needs it", labels=L, unit="seconds"),
        "prof_window": GaugeMetricFamily(
            "jvmos_profile_window_seconds", "The last profile window's length: "
            "--sample-window, or the shortest longer one (at most half of --sample-every) "
            "whose start, stop, seconds open and samples fit the sampler's share of "
            "--max-overhead",
            labels=L, unit="seconds"),
        "prof_cost": CounterMetricFamily(
            "jvmos_profile_estimated_cost_seconds", "CPU time the finished profile windows "
            "cost the JVM, an upper estimate (each calibrated constant at the upper end of its "
            "95% interval): per window the cost of its start and stop, "
            "its cost per second open x its seconds, and its cost per sample x (the JVM's CPU "
            "during the window / the sampling interval) (jvmos calibrate --sampler); absent "
            "when not calibrated",
            labels=L, unit="seconds"),
    }


def _add_counts(fam: dict, j: dict, lv: list) -> None:
    p = j["proc"]
    c = j["start"]
    fam["info"].add_metric(lv + [p.user or "", p.jar or "", p.home_seen,
                                 f"{p.start_time:.2f}", ",".join(j["layers_wanted"])], {})
    fam["watch_start"].add_metric(lv, c)
    fam["cpu"].add_metric(lv, j["cpu_ns"] / NS, created=c)
    fam["counted"].add_metric(lv, j.get("counted_ns", 0.0) / NS, created=c)
    for cat, n in sorted(j["calls"].items()):
        fam["calls"].add_metric(lv + [cat], n, created=c)
    for cat, n in sorted(j["bytes"].items()):
        fam["bytes"].add_metric(lv + [cat], n, created=c)
    for (cat, method), ns in sorted(j["time_ns"].items()):
        fam["time"].add_metric(lv + [cat, method], ns / NS, created=c)
    for cat, n in sorted(j["floored"].items()):
        fam["floored"].add_metric(lv + [cat], n, created=c)
    for res, ns in sorted(j["guaranteed_ns"].items()):
        fam["guaranteed"].add_metric(lv + [res], ns / NS, created=c)
    for res, n in sorted(j["guaranteed_unknown"].items()):
        fam["g_unknown"].add_metric(lv + [res], n, created=c)
    last = j["last"]
    if last.get("guaranteed_ratio") is not None:
        fam["g_ratio"].add_metric(lv, last["guaranteed_ratio"])
    for layer, ns in sorted(j["probe_by_layer_ns"].items()):
        fam["probe"].add_metric(lv + [layer], ns / NS, created=c)
    fam["p_unknown"].add_metric(lv, j["probe_unknown_intervals"], created=c)
    if last.get("probe_ratio") is not None:
        fam["p_ratio"].add_metric(lv, last["probe_ratio"])
    for layer in j["layers_wanted"]:
        fam["shed"].add_metric(lv + [layer], 1 if layer in j["shed"] else 0)
        fam["sheds"].add_metric(lv + [layer], j["sheds"].get(layer, 0), created=c)
        fam["returns"].add_metric(lv + [layer], j["returns"].get(layer, 0), created=c)
    fam["intervals"].add_metric(lv, j["intervals"], created=c)


def _add_windows(fam: dict, j: dict, lv: list) -> None:
    c = j["start"]
    prof = j.get("profiles")
    if prof is not None:
        fam["prof_windows"].add_metric(lv, prof["windows"], created=c)
        fam["prof_failures"].add_metric(lv, prof["failures"], created=c)
        if prof["last_end"] is not None:
            fam["prof_last"].add_metric(lv, prof["last_end"])
        fam["prof_skipped"].add_metric(lv, prof.get("skipped", 0), created=c)
        if prof.get("interval_s") is not None:
            fam["prof_interval"].add_metric(lv, prof["interval_s"])
        if prof.get("window_s") is not None:
            fam["prof_window"].add_metric(lv, prof["window_s"])
        if prof.get("estimated_cost_s") is not None:
            fam["prof_cost"].add_metric(lv, prof["estimated_cost_s"], created=c)
    for layer, cov in sorted(j["coverage"].items()):
        if layer in j["layers_wanted"]:
            fam["coverage"].add_metric(lv + [layer], cov)
    for layer in j["cycled"]:
        if j["window_s"].get(layer) is not None and layer not in j["shed"]:
            fam["window"].add_metric(lv + [layer], j["window_s"][layer])
        fam["windows"].add_metric(lv + [layer], j["windows"].get(layer, 0), created=c)
    for layer, ns in sorted(j["on_ns"].items()):
        if layer in j["layers_wanted"]:
            fam["on"].add_metric(lv + [layer], ns / NS, created=c)
    for cat, n in sorted(j["calls_est"].items()):
        fam["calls_est"].add_metric(lv + [cat], n, created=c)
    for cat, n in sorted(j["bytes_est"].items()):
        fam["bytes_est"].add_metric(lv + [cat], n, created=c)
    for cat, r in sorted(j["rates"].items()):
        for bound, key in (("estimate", "rate"), ("lower95", "lower95"),
                           ("upper95", "upper95")):
            if r[key] is not None:
                fam["rate"].add_metric(lv + [cat, bound], r[key])
        fam["rate_n"].add_metric(lv + [cat], r["n"])


# --------------------------------------------------------------------------- the endpoint

class _Server(ThreadingMixIn, WSGIServer):
    daemon_threads = True
    allow_reuse_address = True


class _Server6(_Server):
    address_family = socket.AF_INET6


class _Quiet(WSGIRequestHandler):
    def log_message(self, fmt, *args):      # a scrape every few seconds is not news
        pass


def url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def status(agent) -> dict:
    """/status: what the agent watches and what it does not, with the reasons."""
    x = agent.exposed()

    def who(p) -> dict:
        return {"pid": p.pid, "main_class": p.main_class, "jar": p.jar, "user": p.user,
                "jdk_version": p.jdk_version}
    return {"config": x["cfg"].describe(),
            "host_engine": x.get("host_engine"),
            "engine_lost": x.get("engine_lost") or {},
            "watched": [dict(who(j["proc"]), layers_wanted=list(j["layers_wanted"]),
                             layers_attached=list(j["layers_attached"]),
                             coverage=j["coverage"], window_s=j["window_s"],
                             profiles=j.get("profiles"),
                             rates={k: {x: v[x] for x in ("rate", "lower95", "upper95", "n",
                                                          "method")}
                                    for k, v in j["rates"].items()},
                             shed={k: v["reason"] for k, v in j["shed"].items()})
                        for j in x["jvms"]],
            "unwatched": [dict(who(u["proc"]), reason=u["reason"], detail=u["detail"])
                          for u in x["unwatched"]]}


def pprof(agent, environ, start_response):
    """GET /debug/pprof/profile?pid=PID: the JVM's last finished CPU profile window (--sample)
    as gzipped pprof. It does not wait for a new window (a `seconds` parameter is ignored):
    the window's start and end are in the X-Jvmos-Window-Start/End headers (Unix time)."""
    from urllib.parse import parse_qs
    q = parse_qs(environ.get("QUERY_STRING") or "")
    text = [("Content-Type", "text/plain; charset=utf-8")]
    if agent.profiles is None:
        start_response("404 Not Found", text)
        return [b"profiles are off: start the agent with --sample\n"]
    try:
        pid = int((q.get("pid") or [""])[0])
    except ValueError:
        start_response("400 Bad Request", text)
        return [b"give the JVM's pid: /debug/pprof/profile?pid=PID\n"]
    try:
        w = agent.profiles.pprof(pid)
    except LookupError as e:
        start_response("404 Not Found", text)
        return [f"{e}\n".encode()]
    except Exception as e:          # noqa: BLE001 - a failed conversion is the client's answer
        start_response("500 Internal Server Error", text)
        return [f"the profile could not be converted: {e}\n".encode()]
    start_response("200 OK", [("Content-Type", "application/octet-stream"),
                              ("Content-Disposition", f'attachment; filename="cpu-{pid}.pb.gz"'),
                              ("X-Jvmos-Window-Start", f"{w.start:.3f}"),
                              ("X-Jvmos-Window-End", f"{w.end:.3f}")])
    return [w.pprof]


def app_for(registry, agent=None):
    metrics = make_wsgi_app(registry)

    def app(environ, start_response):
        path = environ.get("PATH_INFO") or "/"
        if path == "/metrics":
            return metrics(environ, start_response)
        if path == "/debug/pprof/profile" and agent is not None:
            return pprof(agent, environ, start_response)
        if path == "/status" and agent is not None:
            start_response("200 OK", [("Content-Type", "application/json")])
            return [json.dumps(status(agent), indent=1).encode() + b"\n"]
        if path == "/":
            start_response("200 OK", [("Content-Type", "text/plain; charset=utf-8")])
            return [b"jvmos agent: the metrics are at /metrics, what it watches at /status\n"]
        start_response("404 Not Found", [("Content-Type", "text/plain; charset=utf-8")])
        return [b"not found: the metrics are at /metrics, what it watches at /status\n"]
    return app


def registry_for(agent) -> CollectorRegistry:
    from prometheus_client import ProcessCollector
    registry = CollectorRegistry(auto_describe=False)
    registry.register(AgentCollector(agent))
    # process_* of the agent's own Python process (the client library's collector)
    ProcessCollector(registry=registry)
    return registry


def serve(listen: Tuple[str, int], agent) -> WSGIServer:
    """The endpoint on listen (host, port), served by a daemon thread; OSError when the
    address cannot be bound."""
    host, port = listen
    cls = _Server6 if ":" in host else _Server
    server = make_server(host, port, app_for(registry_for(agent), agent), server_class=cls,
                         handler_class=_Quiet)
    threading.Thread(target=server.serve_forever, name="jvmos-agent-http",
                     daemon=True).start()
    return server
