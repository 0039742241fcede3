"""`jvmos export RUN_DIR`: a finished recording in formats other tools read.

Two formats (FORMATS):

  * openmetrics: summary.json as OpenMetrics text (Prometheus, Grafana Agent, any scraper
    that reads a file), written as RUN_DIR/metrics.prom. Every metric is named jvmos_*; each
    HELP text says the unit and how the number was obtained: counted by the probes,
    estimated by a model or calibration, or sampled. A figure the summary does not know
    (null) is left out, never written as 0.
  * pprof: the CPU samples async-profiler took (RUN_DIR/profile-<pid>.collapsed) as a
    gzip-compressed pprof Profile (`go tool pprof`, Speedscope, Pyroscope...), written as
    RUN_DIR/profile.pb.gz. Each sample carries the jvmos category of its stack and the pid.

The export only reads the recording: manifest.json and summary.json are never written, and
the output file is replaced atomically (a failure leaves no half file).
"""
import functools
import gzip
import math
import os
import re
import tempfile
from datetime import datetime
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Tuple

from prometheus_client.metrics_core import Metric
from prometheus_client import exposition as classic
from prometheus_client.openmetrics.exposition import generate_latest
from prometheus_client.registry import CollectorRegistry

from jvmos import JvmosError
from jvmos.analyzers import stacks
from jvmos.report import load_run

FORMATS = ("openmetrics", "pprof")
DEFAULT_FILES = {"openmetrics": "metrics.prom", "pprof": "profile.pb.gz"}
# the interval async-profiler samples at, when neither the summary nor the manifest says it
# (jvmos.sampling.INTERVAL_NS: the only interval jvmos has recorded with)
_FALLBACK_INTERVAL_NS = 1_000_000

NS = 1e9

# --------------------------------------------------------------------------- OpenMetrics

_WHERE = ("per process (pid, with the JVM home or executable in jvm) when the recording kept "
          "per-process figures, else for the whole recording (no pid label)")


class _Families:
    """Metric families in the order they are first named, each with the samples added to
    it; label sets may differ between samples of a family (a pid where there is one)."""

    def __init__(self):
        self._metrics: Dict[str, Metric] = {}

    def add(self, name: str, typ: str, help_text: str, labels: Dict[str, str], value,
            unit: str = "") -> None:
        """One sample; value None (unknown) or not finite adds nothing."""
        if value is None or not math.isfinite(float(value)):
            return
        m = self._metrics.get(name)
        if m is None:
            m = self._metrics[name] = Metric(name, help_text, typ, unit)
        sample = {"counter": m.name + "_total", "info": m.name + "_info"}.get(typ, m.name)
        m.add_sample(sample, {k: str(v) for k, v in labels.items()}, value)

    def __iter__(self) -> Iterator[Metric]:
        return iter(self._metrics.values())


def _scopes(summary: dict) -> List[Tuple[Dict[str, str], dict]]:
    """(labels, categories) per process of by_pid, or the whole recording's categories."""
    by_pid = summary.get("by_pid") or {}
    if by_pid:
        return [({"pid": pid, "jvm": p.get("jvm") or p.get("exec") or ""},
                 p.get("categories") or {})
                for pid, p in sorted(by_pid.items(), key=lambda kv: _pid_key(kv[0]))]
    return [({}, summary.get("categories") or {})]


def _pid_key(pid: str):
    return (0, int(pid), "") if str(pid).isdigit() else (1, 0, str(pid))


def _category_metrics(fam: _Families, summary: dict) -> None:
    """Calls, bytes and times of each category. Calls and bytes are what the probes counted
    (a category whose calls are a model's estimate, calls_method "estimated", goes to
    jvmos_category_estimated_calls instead); the time's method label is the category's own:
    measured (probes timed it), estimated (a calibrated model), sampled (CPU samples x
    interval), measured+estimated (measured parts plus modelled ones)."""
    for scope, cats in _scopes(summary):
        for name, c in cats.items():
            lab = dict(scope, category=name)
            if c.get("calls_method") == "estimated":
                fam.add("jvmos_category_estimated_calls", "gauge",
                        "Calls of the category estimated by a model, not counted by probes "
                        "(e.g. free_estimated); " + _WHERE, lab, c.get("calls"))
            else:
                fam.add("jvmos_category_calls", "counter",
                        "Calls of the category counted by the probes during the recording; "
                        "categories overlap (kernel_copy and nio_copy count the I/O "
                        "syscalls that io_syscall counts: do not add categories up); "
                        + _WHERE, lab, c.get("calls"))
            fam.add("jvmos_category_bytes", "counter",
                    "Bytes moved by the category's calls, as the probes saw them; categories "
                    "overlap as the calls do; " + _WHERE,
                    lab, c.get("bytes"), unit="bytes")
            t = c.get("time_ns")
            if t is not None:
                fam.add("jvmos_category_time_seconds", "gauge",
                        "Time spent in the category, in seconds, summed over threads; method "
                        "says how it was obtained (measured by probes, estimated by a "
                        "calibrated model, sampled as CPU samples x interval); corrected=true "
                        "when the probes' own estimated cost was subtracted from the measured "
                        "time; floored=true when that subtraction went below 0 and the value "
                        "was set to 0 (the true time is small, not known to be 0); "
                        "corrected=not_applicable for estimated and sampled times; absent "
                        "when unknown; " + _WHERE,
                        dict(lab, method=c.get("method") or "unknown",
                             corrected=("true" if c.get("corrected") is True else
                                        "false" if c.get("method") == "measured" else
                                        "not_applicable"),
                             floored="true" if c.get("floored") else "false"),
                        t / NS, unit="seconds")
            raw = c.get("time_raw_ns")
            if raw is not None:
                fam.add("jvmos_category_time_raw_seconds", "gauge",
                        "Time the probes measured in the category, in seconds, before the "
                        "probe-effect correction (includes the probes' own cost: an upper "
                        "bound of the true time); " + _WHERE, lab, raw / NS, unit="seconds")
            corr = c.get("correction_ns")
            if corr is not None:
                fam.add("jvmos_category_probe_correction_seconds", "gauge",
                        "Estimated cost of the probes inside the measured spans, in seconds, "
                        "subtracted from the raw time to give the corrected time; " + _WHERE,
                        lab, corr / NS, unit="seconds")
            if isinstance(c.get("correction_dominates"), bool):
                fam.add("jvmos_category_correction_dominates", "gauge",
                        "1 when the subtracted probe-effect estimate is more than half of the "
                        "raw measured time (the corrected time rests mostly on the estimate), "
                        "else 0; " + _WHERE, lab, int(c["correction_dominates"]))
            ci = c.get("time_ci95_ns")
            if isinstance(ci, (list, tuple)) and len(ci) == 2:
                for bound, v in zip(("lower", "upper"), ci):
                    fam.add("jvmos_category_time_ci95_seconds", "gauge",
                            "Bounds of the 95% interval of jvmos_category_time_seconds, in "
                            "seconds (from the calibrated probe cost's interval); " + _WHERE,
                            dict(lab, bound=bound), None if v is None else v / NS,
                            unit="seconds")


def _sampling_metrics(fam: _Families, summary: dict, manifest: dict) -> None:
    """async-profiler's CPU samples per category (per pid when the profiles were per pid)."""
    samp = summary.get("sampling")
    if not samp:
        return
    fam.add("jvmos_sampling_interval_seconds", "gauge",
            "CPU time one async-profiler sample stands for, in seconds (the sampling interval)",
            {}, sampling_interval_ns(manifest, summary) / NS, unit="seconds")
    by_pid = samp.get("by_pid") or {}
    scopes = ([({"pid": pid}, p.get("categories") or {})
               for pid, p in sorted(by_pid.items(), key=lambda kv: _pid_key(kv[0]))]
              if by_pid else [({}, samp.get("categories") or {})])
    for scope, cats in scopes:
        for name, c in cats.items():
            fam.add("jvmos_sampled_cpu_samples", "counter",
                    "CPU samples async-profiler took whose stack jvmos attributes to the "
                    "category (sampled, not counted by probes); per pid when the profile was "
                    "per process", dict(scope, category=name), c.get("samples"))


def _total_metrics(fam: _Families, summary: dict, manifest: dict) -> None:
    """The recording's totals: wall time, the guaranteed overhead (the copies and OS work the
    JVM cannot avoid, the sum of its categories' times), the target's CPU time, the probes'
    estimated cost and hits."""
    t = summary.get("totals") or {}
    wall = t.get("wall_ns", manifest.get("wall_ns"))
    fam.add("jvmos_recording_wall_seconds", "gauge",
            "Wall-clock duration of the recording, in seconds (measured)", {},
            None if wall is None else wall / NS, unit="seconds")
    g = t.get("guaranteed_overhead_ns")
    fam.add("jvmos_guaranteed_overhead_seconds", "gauge",
            "Guaranteed overhead, in seconds: the sum of the times of the guaranteed-overhead "
            "categories (" + ", ".join(t.get("guaranteed_overhead_categories") or []) + "), "
            "each measured, estimated or sampled as jvmos_category_time_seconds says; summed "
            "over threads; absent when a term is unknown",
            {}, None if g is None else g / NS, unit="seconds")
    gk = t.get("guaranteed_overhead_known_ns")
    fam.add("jvmos_guaranteed_overhead_known_seconds", "gauge",
            "Sum of the guaranteed-overhead terms whose time is known, in seconds: equal to "
            "jvmos_guaranteed_overhead_seconds when every term is known, else a lower bound",
            {}, None if gk is None else gk / NS, unit="seconds")
    terms = t.get("guaranteed_overhead_terms") or {}
    for resource, ns in (t.get("guaranteed_by_resource") or {}).items():
        complete = all(x.get("time_ns") is not None for x in terms.get(resource) or [])
        fam.add("jvmos_guaranteed_overhead_by_resource_seconds", "gauge",
                "Guaranteed overhead of one resource (io, mem, threads, links), in seconds, "
                "summed over threads: the sum of the known times of its categories; "
                "complete=false when one of them is unknown (the value is then a lower bound)",
                {"resource": resource, "complete": str(complete).lower()},
                None if ns is None else ns / NS, unit="seconds")
    cpu = t.get("target_cpu_ns")
    fam.add("jvmos_target_cpu_seconds", "gauge",
            "CPU time (user + system) the traced processes used during the recording, in "
            "seconds (measured); complete=false when some of it could not be read (a lower "
            "bound)", {"complete": str(bool(t.get("target_cpu_complete"))).lower()},
            None if cpu is None else cpu / NS, unit="seconds")
    pct = t.get("guaranteed_overhead_pct_of_cpu")
    fam.add("jvmos_guaranteed_overhead_of_target_cpu_ratio", "gauge",
            "Guaranteed overhead divided by the target's CPU time during the recording (the "
            "CPU the traced processes used while traced, the probes' own estimated cost "
            "included: jvmos_probe_overhead_seconds), as a ratio (0..1, not a percentage; "
            "0.01 = 1%)", {},
            None if pct is None else pct / 100.0)
    po = t.get("probe_overhead_ns")
    fam.add("jvmos_probe_overhead_seconds", "gauge",
            "Estimated CPU time the probes added to the traced processes, in seconds: probe "
            "hits x calibrated cost per hit (an estimate, not a measurement)", {},
            None if po is None else po / NS, unit="seconds")
    if po is None:
        pk = t.get("probe_overhead_known_ns")
        fam.add("jvmos_probe_overhead_known_seconds", "gauge",
                "Estimated CPU time added by the probes whose cost per hit is calibrated, in "
                "seconds; the others are unknown: a lower bound of the probes' cost", {},
                None if pk is None else pk / NS, unit="seconds")
    ci = t.get("probe_overhead_ci95_ns")
    if isinstance(ci, (list, tuple)) and len(ci) == 2:
        for bound, v in zip(("lower", "upper"), ci):
            fam.add("jvmos_probe_overhead_ci95_seconds", "gauge",
                    "Bounds of the 95% interval of the estimated probe overhead, in seconds",
                    {"bound": bound}, None if v is None else v / NS, unit="seconds")
    for probe, n in sorted((t.get("probe_hits") or {}).items()):
        fam.add("jvmos_probe_hits", "counter",
                "Times a probe fired in the traced processes (counted by the probes); probe "
                "is layer:kind", {"probe": probe}, n)
    fam.add("jvmos_lost_events", "counter",
            "Events the probes lost (a full map, a skipped program run; counted by the "
            "engine, or reported by bpftrace in older recordings): figures may be short by "
            "these", {}, t.get("lost_events"))


def _jvm_facts(manifest: dict, summary: dict) -> Tuple[List[str], List[str]]:
    """(JDK versions, JVM homes) the recording names, each sorted and without repeats."""
    versions, homes = set(), set()
    jvms = list(manifest.get("jvms_probed") or [])
    for p in (manifest.get("processes") or {}).values():
        if isinstance(p, dict) and isinstance(p.get("jvm"), dict):
            jvms.append(p["jvm"])
    for j in jvms:
        if j.get("version"):
            versions.add(str(j["version"]))
        if j.get("home"):
            homes.add(str(j["home"]))
    for p in (summary.get("by_pid") or {}).values():
        if p.get("jvm"):
            homes.add(str(p["jvm"]))
    return sorted(versions), sorted(homes)


def _info_metric(fam: _Families, manifest: dict, summary: dict, run_name: str) -> None:
    versions, homes = _jvm_facts(manifest, summary)
    labels = {"run": run_name,
              "status": manifest.get("status") or summary.get("status"),
              "mode": manifest.get("mode") or (summary.get("totals") or {}).get("mode"),
              "target": manifest.get("target"),
              "scope": manifest.get("scope"),
              "layers": ",".join(manifest.get("layers") or []),
              "jdk_version": ",".join(versions),
              "jvm_home": ",".join(homes),
              "kernel": (manifest.get("host") or {}).get("kernel"),
              "engine": " ".join(str(x) for x in ((manifest.get("engine") or {}).get("name"),
                                                  (manifest.get("engine") or {}).get("version"))
                                 if x),
              "bpftrace": manifest.get("bpftrace"),         # recordings made with bpftrace
              "sampler": manifest.get("sampler"),
              "start_time": manifest.get("start_time"),
              "jvmos_version": manifest.get("jvmos_version")}
    fam.add("jvmos_recording", "info",
            "The recording: its directory (run), status, mode, JDK versions and homes, kernel, "
            "probe engine (or bpftrace version) or sampler, start time; labels the recording does not name are "
            "left out", {k: v for k, v in labels.items() if v not in (None, "")}, 1)


class SummaryCollector:
    """A prometheus_client collector of one finished recording's figures."""

    def __init__(self, manifest: dict, summary: dict, run_name: str = ""):
        self.manifest, self.summary, self.run_name = manifest, summary, run_name

    def collect(self) -> Iterable[Metric]:
        fam = _Families()
        _info_metric(fam, self.manifest, self.summary, self.run_name)
        _total_metrics(fam, self.summary, self.manifest)
        _category_metrics(fam, self.summary)
        _sampling_metrics(fam, self.summary, self.manifest)
        return list(fam)


def _registry(manifest: dict, summary: dict, run_name: str) -> CollectorRegistry:
    registry = CollectorRegistry(auto_describe=False)
    registry.register(SummaryCollector(manifest, summary, run_name))
    return registry


def openmetrics_text(manifest: dict, summary: dict, run_name: str = "") -> str:
    """The recording's summary as OpenMetrics text, ending with '# EOF'.

    run_name, the run directory's name, labels jvmos_recording_info (run); neither file
    names its directory, so without it the label is left out (export() passes it)."""
    return generate_latest(_registry(manifest, summary, run_name)).decode("utf-8")


def prometheus_text(manifest: dict, summary: dict, run_name: str = "") -> str:
    """The same metrics in Prometheus's classic text format (version 0.0.4), the one
    node-exporter's textfile collector and the Pushgateway parse: the info metric becomes a
    gauge named *_info with value 1, counters keep their _total samples."""
    return classic.generate_latest(_registry(manifest, summary, run_name)).decode("utf-8")


# --------------------------------------------------------------------------- pprof

# pprof's profile.proto (package perftools.profiles), proto3: (field, number, type, message)
_PROTO = {
    "Profile": [("sample_type", 1, "ValueType"), ("sample", 2, "Sample"),
                ("mapping", 3, "Mapping"), ("location", 4, "Location"),
                ("function", 5, "Function"), ("string_table", 6, "string*"),
                ("drop_frames", 7, "int64"), ("keep_frames", 8, "int64"),
                ("time_nanos", 9, "int64"), ("duration_nanos", 10, "int64"),
                ("period_type", 11, "ValueType?"), ("period", 12, "int64"),
                ("comment", 13, "int64*"), ("default_sample_type", 14, "int64"),
                ("doc_url", 15, "int64")],
    "ValueType": [("type", 1, "int64"), ("unit", 2, "int64")],
    "Sample": [("location_id", 1, "uint64*"), ("value", 2, "int64*"), ("label", 3, "Label")],
    "Label": [("key", 1, "int64"), ("str", 2, "int64"), ("num", 3, "int64"),
              ("num_unit", 4, "int64")],
    "Mapping": [("id", 1, "uint64"), ("memory_start", 2, "uint64"),
                ("memory_limit", 3, "uint64"), ("file_offset", 4, "uint64"),
                ("filename", 5, "int64"), ("build_id", 6, "int64"),
                ("has_functions", 7, "bool"), ("has_filenames", 8, "bool"),
                ("has_line_numbers", 9, "bool"), ("has_inline_frames", 10, "bool")],
    "Location": [("id", 1, "uint64"), ("mapping_id", 2, "uint64"), ("address", 3, "uint64"),
                 ("line", 4, "Line"), ("is_folded", 5, "bool")],
    "Line": [("function_id", 1, "uint64"), ("line", 2, "int64"), ("column", 3, "int64")],
    "Function": [("id", 1, "uint64"), ("name", 2, "int64"), ("system_name", 3, "int64"),
                 ("filename", 4, "int64"), ("start_line", 5, "int64")],
}
_PACKAGE = "perftools.profiles"


@functools.lru_cache(maxsize=None)
def profile_classes() -> Dict[str, type]:
    """pprof's message classes, from a descriptor built here (no protoc, no _pb2 module), in
    a pool of their own. Field types: a message name is a repeated message unless it ends
    with '?' (a single one); a scalar ending with '*' is repeated."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    F = descriptor_pb2.FieldDescriptorProto
    scalars = {"int64": F.TYPE_INT64, "uint64": F.TYPE_UINT64, "bool": F.TYPE_BOOL,
               "string": F.TYPE_STRING}
    fdp = descriptor_pb2.FileDescriptorProto(name="jvmos/pprof_profile.proto",
                                             package=_PACKAGE, syntax="proto3")
    for msg, fields in _PROTO.items():
        m = fdp.message_type.add(name=msg)
        for fname, number, typ in fields:
            base = typ.rstrip("*?")
            f = m.field.add(name=fname, number=number)
            if base in scalars:
                f.type = scalars[base]
                f.label = F.LABEL_REPEATED if typ.endswith("*") else F.LABEL_OPTIONAL
            else:
                f.type = F.TYPE_MESSAGE
                f.type_name = f".{_PACKAGE}.{base}"
                f.label = F.LABEL_OPTIONAL if typ.endswith("?") else F.LABEL_REPEATED
    pool = descriptor_pool.DescriptorPool()
    pool.Add(fdp)
    return {msg: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"{_PACKAGE}.{msg}"))
            for msg in _PROTO}


def sampling_interval_ns(manifest: dict, summary: dict) -> int:
    """CPU time per sample: the summary's sampling.interval_ns, else the interval the
    manifest's sampler names, else the interval jvmos samples at."""
    iv = (summary.get("sampling") or {}).get("interval_ns")
    if iv:
        return int(iv)
    m = re.search(r"(\d+) ns interval", str(manifest.get("sampler") or ""))
    return int(m.group(1)) if m else _FALLBACK_INTERVAL_NS


def collapsed_profiles(run_dir: Path) -> List[Tuple[str, Path]]:
    """(pid, file) of every profile-<pid>.collapsed in the run, by pid."""
    out = [(f.name[len("profile-"):-len(".collapsed")], f)
           for f in run_dir.glob("profile-*.collapsed") if f.is_file()]
    return sorted(out, key=lambda pf: _pid_key(pf[0]))


def _start_nanos(manifest: dict) -> Optional[int]:
    s = manifest.get("start_time")
    if not s:
        return None
    try:
        return int(datetime.strptime(s, "%Y-%m-%dT%H:%M:%S%z").timestamp()) * 1_000_000_000
    except ValueError:
        return None


FRAME_KINDS = ("frame kinds, as async-profiler annotated them (the suffix of a function's "
               "system_name): _[j] JIT-compiled Java, _[i] inlined Java, _[0] interpreted "
               "Java, _[1] C1-compiled Java, _[k] kernel; no suffix: native code")


def pprof_bytes(run_dir: Path, manifest: dict, summary: dict) -> bytes:
    """The run's sampled stacks as a gzip-compressed pprof Profile.

    Sample values: samples/count (the number of CPU samples of that stack in that process)
    and cpu/nanoseconds (samples x the sampling interval: sampled CPU time, not measured).
    Locations are leaf first; one Function and one Location per distinct frame as written in
    the profile, the function's name without async-profiler's annotation and its system_name
    the frame as written (with the annotation: the frame's kind). Labels: jvmos_category
    (the category jvmos attributes the stack to, as in summary.json's sampling) and pid (a
    string, from the profile's file name)."""
    run_dir = Path(run_dir)
    files = collapsed_profiles(run_dir)
    if not files:
        raise JvmosError(f"{run_dir}: no sampled stacks to export (sampling did not run: "
                         "record with --sample)")
    P = profile_classes()
    interval = sampling_interval_ns(manifest, summary)
    strings: Dict[str, int] = {}
    prof = P["Profile"]()

    def s(text: str) -> int:
        i = strings.get(text)
        if i is None:
            i = strings[text] = len(prof.string_table)
            prof.string_table.append(text)
        return i

    s("")                                               # string_table[0] is ""
    prof.sample_type.add(type=s("samples"), unit=s("count"))
    prof.sample_type.add(type=s("cpu"), unit=s("nanoseconds"))
    prof.period_type.type = s("cpu")
    prof.period_type.unit = s("nanoseconds")
    prof.period = interval
    prof.default_sample_type = s("cpu")
    locations: Dict[str, int] = {}

    def location(frame: str) -> int:
        lid = locations.get(frame)
        if lid is None:
            lid = locations[frame] = len(locations) + 1
            prof.function.add(id=lid, name=s(stacks.strip(frame)), system_name=s(frame))
            prof.location.add(id=lid).line.add(function_id=lid)
        return lid

    k_cat, k_pid = s("jvmos_category"), s("pid")
    for pid, f in files:
        for frames, n in stacks.parse_collapsed(f.read_text(errors="replace").splitlines()):
            sample = prof.sample.add()
            sample.location_id.extend(location(fr) for fr in reversed(frames) if fr)
            sample.value.extend([n, n * interval])
            sample.label.add(key=k_cat, str=s(stacks.categorize(frames)))
            sample.label.add(key=k_pid, str=s(pid))
    start = _start_nanos(manifest)
    if start is not None:
        prof.time_nanos = start
    wall = (summary.get("totals") or {}).get("wall_ns", manifest.get("wall_ns"))
    if wall is not None:
        prof.duration_nanos = int(wall)
    prof.comment.append(s(f"jvmos recording {run_dir.name}: async-profiler CPU samples of "
                          f"{interval} ns, {', '.join(f.name for _, f in files)}"))
    prof.comment.append(s(FRAME_KINDS))
    return gzip.compress(prof.SerializeToString(), mtime=0)


# --------------------------------------------------------------------------- files


def write_atomically(path: Path, data: bytes) -> None:
    """data into path through a temporary file of the same directory and os.replace: the
    path holds either its old content or all of the new one, never part of it."""
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def export(run_dir, fmt: str, out: Optional[Path] = None) -> Path:
    """Write the recording in RUN_DIR as fmt (one of FORMATS) to out, by default
    RUN_DIR/metrics.prom (openmetrics) or RUN_DIR/profile.pb.gz (pprof); return the path
    written. The recording's manifest.json and summary.json are read, never written."""
    if fmt not in FORMATS:
        raise JvmosError(f"unknown export format '{fmt}' (known: {', '.join(FORMATS)})")
    run_dir = Path(run_dir)
    manifest, summary = load_run(run_dir)
    target = Path(out) if out is not None else run_dir / DEFAULT_FILES[fmt]
    if target.resolve() in {(run_dir / n).resolve() for n in ("manifest.json", "summary.json")}:
        raise JvmosError(f"{target}: export would overwrite the recording itself; "
                         "choose another output file")
    from jvmos.writable import check_writable
    check_writable(target, "export file", make_parents=False)
    if fmt == "openmetrics":
        data = openmetrics_text(manifest, summary, run_name=run_dir.resolve().name).encode()
    else:
        data = pprof_bytes(run_dir, manifest, summary)
    try:
        write_atomically(target, data)
    except OSError as e:
        raise JvmosError(f"cannot write {target}: {e.strerror or e}")
    return target
