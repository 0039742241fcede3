"""jvmos.export: OpenMetrics text and pprof profiles of committed recordings, checked against
figures read here from summary.json and the .collapsed files, not against the exporter's own
reading of them."""
import gzip
import json
import os
import re
import shutil
import subprocess
from collections import Counter
from pathlib import Path

import pytest
from prometheus_client.openmetrics.parser import text_string_to_metric_families

from jvmos import JvmosError, ROOT, export

TIME_RUN = ROOT / "results" / "accuracy" / "runs" / "socket-time"
SAMPLE_RUN = ROOT / "results" / "accuracy" / "runs" / "socket-sample"
PID_TIME = "19070"
PID_SAMPLE = "19186"
SUFFIX = re.compile(r"_\[(j|i|k|0|1)\]$")


def read_json(path: Path) -> dict:
    with open(path) as f:
        return json.load(f)


def run_copy(tmp_path: Path, src: Path, name: str = None) -> Path:
    """The recording's manifest, summary and profiles, copied where the test may write."""
    d = tmp_path / (name or src.name)
    d.mkdir()
    for f in src.iterdir():
        if f.name in ("manifest.json", "summary.json") or f.name.endswith(".collapsed"):
            shutil.copy(f, d)
    return d


def families(text: str) -> dict:
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(fams: dict, family: str, **labels) -> list:
    """The samples of a family whose labels include the given ones."""
    if family not in fams:
        return []
    return [s for s in fams[family].samples
            if all(s.labels.get(k) == v for k, v in labels.items())]


def one(fams: dict, family: str, **labels):
    found = samples(fams, family, **labels)
    assert len(found) == 1, (family, labels, found)
    return found[0]


def collapsed_lines(path: Path) -> list:
    """(root-first frames, count) of each line, parsed here without jvmos."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip():
            stack, count = line.rsplit(" ", 1)
            out.append((stack.split(";"), int(count)))
    return out


# ------------------------------------------------------------------ OpenMetrics


@pytest.fixture(scope="module")
def time_text():
    return export.openmetrics_text(read_json(TIME_RUN / "manifest.json"),
                                   read_json(TIME_RUN / "summary.json"), run_name=TIME_RUN.name)


def test_openmetrics_calls_and_bytes_are_the_summarys(time_text):
    summary = read_json(TIME_RUN / "summary.json")
    cats = summary["by_pid"][PID_TIME]["categories"]
    fams = families(time_text)
    jni = one(fams, "jvmos_category_calls", pid=PID_TIME, category="jni_copy")
    assert jni.name == "jvmos_category_calls_total"
    assert jni.value == cats["jni_copy"]["calls"] == 381
    assert jni.labels["jvm"] == summary["by_pid"][PID_TIME]["jvm"]
    b = one(fams, "jvmos_category_bytes", pid=PID_TIME, category="jni_copy")
    assert b.name == "jvmos_category_bytes_total"
    assert b.value == cats["jni_copy"]["bytes"] == 50521
    for name, c in cats.items():
        assert one(fams, "jvmos_category_calls", pid=PID_TIME, category=name).value == c["calls"]
        assert one(fams, "jvmos_category_bytes", pid=PID_TIME, category=name).value == c["bytes"]
    assert fams["jvmos_category_calls"].type == "counter"
    assert fams["jvmos_category_bytes"].unit == "bytes"


def test_openmetrics_times_carry_their_method(time_text):
    cats = read_json(TIME_RUN / "summary.json")["by_pid"][PID_TIME]["categories"]
    fams = families(time_text)
    assert fams["jvmos_category_time_seconds"].unit == "seconds"
    for name, c in cats.items():
        t = one(fams, "jvmos_category_time_seconds", pid=PID_TIME, category=name)
        assert t.value == pytest.approx(c["time_ns"] / 1e9, rel=1e-12)
        assert t.labels["method"] == c["method"]
        assert t.labels["corrected"] == ("true" if c.get("corrected") else
                                         "false" if c["method"] == "measured" else
                                         "not_applicable")
        assert t.labels["floored"] == ("true" if c.get("floored") else "false")
    assert one(fams, "jvmos_category_time_seconds", category="nio_copy").labels["method"] \
        == "estimated"
    # the raw time is apart from the corrected one, and only where the probes timed it
    raw = one(fams, "jvmos_category_time_raw_seconds", category="jni_copy")
    assert raw.value == pytest.approx(cats["jni_copy"]["time_raw_ns"] / 1e9)
    assert not samples(fams, "jvmos_category_time_raw_seconds", category="nio_copy")
    lo = one(fams, "jvmos_category_time_ci95_seconds", category="jni_copy", bound="lower")
    hi = one(fams, "jvmos_category_time_ci95_seconds", category="jni_copy", bound="upper")
    assert lo.value * 1e9 == pytest.approx(cats["jni_copy"]["time_ci95_ns"][0])
    assert hi.value * 1e9 == pytest.approx(cats["jni_copy"]["time_ci95_ns"][1])
    assert one(fams, "jvmos_category_correction_dominates", category="jni_copy").value == 1
    assert one(fams, "jvmos_category_correction_dominates", category="io_syscall").value == 0


def test_openmetrics_totals(time_text):
    t = read_json(TIME_RUN / "summary.json")["totals"]
    fams = families(time_text)
    assert one(fams, "jvmos_recording_wall_seconds").value == pytest.approx(t["wall_ns"] / 1e9)
    g = one(fams, "jvmos_guaranteed_overhead_seconds").value
    assert g == pytest.approx(t["guaranteed_overhead_ns"] / 1e9)
    io = one(fams, "jvmos_guaranteed_overhead_by_resource_seconds", resource="io")
    assert io.value == pytest.approx(t["guaranteed_by_resource"]["io"] / 1e9)
    assert io.labels["complete"] == "true"
    cpu = one(fams, "jvmos_target_cpu_seconds").value
    assert cpu == pytest.approx(t["target_cpu_ns"] / 1e9)
    ratio = one(fams, "jvmos_guaranteed_overhead_of_target_cpu_ratio").value
    assert ratio == pytest.approx(t["guaranteed_overhead_pct_of_cpu"] / 100)
    assert ratio == pytest.approx(g / cpu)                     # a ratio, not a percentage
    assert 0 < ratio < 1
    po = one(fams, "jvmos_probe_overhead_seconds")
    assert po.value == pytest.approx(t["probe_overhead_ns"] / 1e9)
    assert "estimated" in fams["jvmos_probe_overhead_seconds"].documentation.lower()
    for probe, n in t["probe_hits"].items():
        assert one(fams, "jvmos_probe_hits", probe=probe).value == n


def test_openmetrics_info_and_eof(time_text):
    manifest = read_json(TIME_RUN / "manifest.json")
    fams = families(time_text)
    assert fams["jvmos_recording"].type == "info"
    info = one(fams, "jvmos_recording")
    assert info.name == "jvmos_recording_info" and info.value == 1
    assert info.labels["status"] == manifest["status"] == "complete"
    assert info.labels["mode"] == "time"
    assert info.labels["kernel"] == manifest["host"]["kernel"]
    assert info.labels["bpftrace"] == manifest["bpftrace"]
    assert info.labels["jvm_home"] == manifest["jvms_probed"][0]["home"]
    assert info.labels["jdk_version"] == manifest["jvms_probed"][0]["version"]
    assert info.labels["run"] == "socket-time"
    assert time_text.endswith("# EOF\n")
    assert all(name.startswith("jvmos_") for name in fams)
    for f in fams.values():
        assert f.documentation, f.name


def test_openmetrics_unknown_is_absent_not_zero():
    manifest = {"status": "complete", "mode": "time", "host": {"kernel": "k"}}
    summary = {
        "status": "complete",
        "totals": {"wall_ns": 2_000_000_000, "guaranteed_overhead_ns": None,
                   "guaranteed_overhead_known_ns": 1_000,
                   "guaranteed_by_resource": {"io": 1_000, "mem": 500},
                   "guaranteed_overhead_terms": {
                       "io": [{"category": "jni_copy", "method": "measured", "time_ns": None},
                              {"category": "kernel_copy", "method": "estimated",
                               "time_ns": 1_000}],
                       "mem": [{"category": "malloc", "method": "measured", "time_ns": 500}]},
                   "target_cpu_ns": None, "guaranteed_overhead_pct_of_cpu": None,
                   "probe_overhead_ns": None, "probe_overhead_known_ns": 7_000},
        "categories": {},
        "by_pid": {"42": {"exec": "/bin/java", "jvm": None, "categories": {
            "jni_copy": {"calls": 3, "bytes": None, "time_ns": None, "time_raw_ns": 5_000,
                         "corrected": False, "method": "measured"},
            "free_estimated": {"calls": 9, "calls_method": "estimated", "bytes": None,
                               "time_ns": 0, "method": "estimated"}}}},
    }
    fams = families(export.openmetrics_text(manifest, summary))
    assert one(fams, "jvmos_category_calls", pid="42", category="jni_copy").value == 3
    assert one(fams, "jvmos_category_calls", pid="42", category="jni_copy").labels["jvm"] \
        == "/bin/java"                                     # no JVM home: the executable
    assert not samples(fams, "jvmos_category_bytes")       # unknown bytes: no sample at all
    assert not samples(fams, "jvmos_category_time_seconds", category="jni_copy")
    assert one(fams, "jvmos_category_time_raw_seconds", category="jni_copy").value \
        == pytest.approx(5e-6)
    # a known 0 stays 0: only unknown is left out
    assert one(fams, "jvmos_category_time_seconds", category="free_estimated").value == 0
    # estimated calls are not probe counts
    assert not samples(fams, "jvmos_category_calls", category="free_estimated")
    assert one(fams, "jvmos_category_estimated_calls", category="free_estimated").value == 9
    for absent in ("jvmos_guaranteed_overhead_seconds", "jvmos_target_cpu_seconds",
                   "jvmos_guaranteed_overhead_of_target_cpu_ratio",
                   "jvmos_probe_overhead_seconds", "jvmos_probe_hits"):
        assert not samples(fams, absent), absent
    assert one(fams, "jvmos_guaranteed_overhead_known_seconds").value == pytest.approx(1e-6)
    assert one(fams, "jvmos_probe_overhead_known_seconds").value == pytest.approx(7e-6)
    assert one(fams, "jvmos_guaranteed_overhead_by_resource_seconds",
               resource="io").labels["complete"] == "false"
    assert one(fams, "jvmos_guaranteed_overhead_by_resource_seconds",
               resource="mem").labels["complete"] == "true"
    assert "run" not in one(fams, "jvmos_recording").labels


def test_openmetrics_of_a_sampled_run():
    summary = read_json(SAMPLE_RUN / "summary.json")
    fams = families(export.openmetrics_text(read_json(SAMPLE_RUN / "manifest.json"), summary))
    assert summary["by_pid"] == {}
    for name, c in summary["categories"].items():
        t = one(fams, "jvmos_category_time_seconds", category=name)
        assert "pid" not in t.labels                       # the whole recording
        assert t.labels["method"] == "sampled"
        assert t.value == pytest.approx(c["time_ns"] / 1e9)
    assert not samples(fams, "jvmos_category_calls")      # calls unknown when sampled
    for name, c in summary["sampling"]["by_pid"][PID_SAMPLE]["categories"].items():
        assert one(fams, "jvmos_sampled_cpu_samples", pid=PID_SAMPLE,
                   category=name).value == c["samples"]
    assert one(fams, "jvmos_sampling_interval_seconds").value == pytest.approx(1e-3)
    assert "bpftrace" not in one(fams, "jvmos_recording").labels


def committed_runs() -> list:
    """The run directories of results/ that git tracks (a recording being written now is not
    one of them), or every one on disk outside a git checkout."""
    r = subprocess.run(["git", "ls-files", "results/*/runs/**/summary.json"], cwd=ROOT,
                       capture_output=True, text=True) if shutil.which("git") else None
    files = (r.stdout.split() if r is not None and r.returncode == 0 else
             [str(p.relative_to(ROOT)) for p in (ROOT / "results").glob("*/runs/**/summary.json")])
    return sorted(str(Path(f).parent) for f in files)


@pytest.mark.parametrize("path", committed_runs())
def test_openmetrics_of_every_committed_run_parses(path):
    d = ROOT / path
    text = export.openmetrics_text(read_json(d / "manifest.json"), read_json(d / "summary.json"))
    fams = families(text)
    assert "jvmos_recording" in fams and text.endswith("# EOF\n")


# ------------------------------------------------------------------ pprof


@pytest.fixture(scope="module")
def profile():
    data = export.pprof_bytes(SAMPLE_RUN, read_json(SAMPLE_RUN / "manifest.json"),
                              read_json(SAMPLE_RUN / "summary.json"))
    assert data[:2] == b"\x1f\x8b"                          # gzip
    return export.profile_classes()["Profile"].FromString(gzip.decompress(data))


def _labels(p, sample) -> dict:
    return {p.string_table[l.key]: p.string_table[l.str] for l in sample.label}


def _names(p, sample) -> list:
    """Function names of a sample's locations, leaf first."""
    fn = {f.id: f for f in p.function}
    loc = {l.id: l for l in p.location}
    return [p.string_table[fn[loc[i].line[0].function_id].name] for i in sample.location_id]


def test_pprof_header(profile):
    p = profile
    st = p.string_table
    assert st[0] == ""
    assert [(st[v.type], st[v.unit]) for v in p.sample_type] == [("samples", "count"),
                                                                  ("cpu", "nanoseconds")]
    assert (st[p.period_type.type], st[p.period_type.unit]) == ("cpu", "nanoseconds")
    assert p.period == read_json(SAMPLE_RUN / "summary.json")["sampling"]["interval_ns"]
    manifest = read_json(SAMPLE_RUN / "manifest.json")
    assert p.duration_nanos == manifest["wall_ns"]
    assert p.time_nanos == 1795498256 * 10 ** 9             # 2026-11-24T05:30:56+0000
    ids = [f.id for f in p.function]
    assert ids == list(range(1, len(ids) + 1)) == [l.id for l in p.location]


def test_pprof_samples_are_the_collapsed_stacks(profile):
    p = profile
    lines = collapsed_lines(SAMPLE_RUN / f"profile-{PID_SAMPLE}.collapsed")
    total = sum(n for _, n in lines)
    assert total == 368
    assert sum(s.value[0] for s in p.sample) == total
    assert sum(s.value[1] for s in p.sample) == total * 1_000_000
    want = Counter((tuple(SUFFIX.sub("", f) for f in reversed(frames)), n)
                   for frames, n in lines)
    got = Counter((tuple(_names(p, s)), s.value[0]) for s in p.sample)
    assert got == want
    # one location per distinct frame as written
    assert len(p.location) == len({f for frames, _ in lines for f in frames})


def test_pprof_leaf_is_the_first_location(profile):
    p = profile
    frames, n = collapsed_lines(SAMPLE_RUN / f"profile-{PID_SAMPLE}.collapsed")[0]
    assert frames[-1] == "validate_xmit_skb.isra.0_[k]" and n == 1      # the file's first stack
    stack = [SUFFIX.sub("", f) for f in frames]
    leaf = [s for s in p.sample if _names(p, s)[::-1] == stack]
    assert len(leaf) == 1 and leaf[0].value[0] == n
    assert _names(p, leaf[0])[0] == "validate_xmit_skb.isra.0"                # leaf first
    assert _names(p, leaf[0])[-1] == "org/jvmos/workloads/SocketStream.main"   # root last
    fn = {f.id: f for f in p.function}
    loc = {l.id: l for l in p.location}
    first = fn[loc[leaf[0].location_id[0]].line[0].function_id]
    assert p.string_table[first.system_name] == "validate_xmit_skb.isra.0_[k]"   # its kind


def test_pprof_category_labels_match_the_summary(profile):
    p = profile
    sampled = read_json(SAMPLE_RUN / "summary.json")["sampling"]["categories"]
    per_cat = Counter()
    for s in p.sample:
        labels = _labels(p, s)
        assert labels["pid"] == PID_SAMPLE
        per_cat[labels["jvmos_category"]] += s.value[0]
    assert per_cat == Counter({c: v["samples"] for c, v in sampled.items()})


def test_pprof_read_by_go_tool_pprof(tmp_path, profile):
    if not shutil.which("go"):
        pytest.skip("go is not on PATH")
    f = tmp_path / "profile.pb.gz"
    f.write_bytes(export.pprof_bytes(SAMPLE_RUN, read_json(SAMPLE_RUN / "manifest.json"),
                                     read_json(SAMPLE_RUN / "summary.json")))
    r = subprocess.run(["go", "tool", "pprof", "-raw", str(f)], capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert "validate_xmit_skb.isra.0" in out
    assert "org/jvmos/workloads/SocketStream.run" in out
    assert "jvmos_category:[io_syscall]" in out
    # the sample lines ("  count  nanoseconds: location ids"), summed as pprof decoded them
    block = out.split("Samples:", 1)[1].split("Locations", 1)[0]
    rows = re.findall(r"^\s+(\d+)\s+(\d+):", block, re.M)
    total = sum(n for _, n in collapsed_lines(SAMPLE_RUN / f"profile-{PID_SAMPLE}.collapsed"))
    assert sum(int(a) for a, _ in rows) == total
    assert sum(int(b) for _, b in rows) == total * 1_000_000


# ------------------------------------------------------------------ export()


def listing(d: Path) -> dict:
    return {f.name: f.read_bytes() for f in d.iterdir()}


def test_export_writes_both_formats(tmp_path):
    d = run_copy(tmp_path, SAMPLE_RUN)
    before = listing(d)
    om = export.export(d, "openmetrics")
    assert om == d / "metrics.prom"
    assert one(families(om.read_text()), "jvmos_recording").labels["run"] == "socket-sample"
    pb = export.export(d, "pprof")
    assert pb == d / "profile.pb.gz"
    p = export.profile_classes()["Profile"].FromString(gzip.decompress(pb.read_bytes()))
    assert sum(s.value[0] for s in p.sample) == 368
    after = listing(d)
    assert set(after) == set(before) | {"metrics.prom", "profile.pb.gz"}   # no temporary left
    for name, data in before.items():
        assert after[name] == data                          # the recording is untouched
    out = tmp_path / "elsewhere.prom"
    assert export.export(d, "openmetrics", out) == out and out.read_text().endswith("# EOF\n")
    assert export.FORMATS == ("openmetrics", "pprof")


def test_export_unknown_format(tmp_path):
    d = run_copy(tmp_path, TIME_RUN)
    before = listing(d)
    with pytest.raises(JvmosError) as e:
        export.export(d, "csv")
    assert str(e.value) == "unknown export format 'csv' (known: openmetrics, pprof)"
    assert listing(d) == before


def test_export_pprof_without_samples(tmp_path):
    d = run_copy(tmp_path, TIME_RUN)
    before = listing(d)
    with pytest.raises(JvmosError) as e:
        export.export(d, "pprof")
    msg = str(e.value)
    assert msg == (f"{d}: no sampled stacks to export (sampling did not run: record with "
                   "--sample)")
    assert "\n" not in msg
    assert listing(d) == before                             # no profile.pb.gz, no temporary


def test_export_of_a_directory_without_a_recording(tmp_path):
    with pytest.raises(JvmosError, match="not a jvmos run directory"):
        export.export(tmp_path, "openmetrics")
    assert list(tmp_path.iterdir()) == []


def test_export_never_writes_over_the_recording(tmp_path):
    d = run_copy(tmp_path, TIME_RUN)
    before = listing(d)
    for name in ("summary.json", "manifest.json"):
        with pytest.raises(JvmosError, match="overwrite the recording"):
            export.export(d, "openmetrics", d / name)
    assert listing(d) == before


@pytest.mark.parametrize("failing", ["replace", "fsync"])
def test_export_is_atomic(tmp_path, monkeypatch, failing):
    d = run_copy(tmp_path, TIME_RUN)
    old = b"the previous export\n"
    (d / "metrics.prom").write_bytes(old)
    before = listing(d)

    def boom(*a, **k):
        raise OSError(28, "No space left on device")
    monkeypatch.setattr(export.os, failing, boom)
    with pytest.raises(JvmosError) as e:
        export.export(d, "openmetrics")
    assert str(e.value) == f"cannot write {d / 'metrics.prom'}: No space left on device"
    assert listing(d) == before                             # old file whole, no temporary
    monkeypatch.undo()
    export.export(d, "openmetrics")
    assert (d / "metrics.prom").read_text().endswith("# EOF\n")
    assert oct(os.stat(d / "metrics.prom").st_mode & 0o777) == "0o644"


def test_classic_text_for_the_textfile_collector():
    """node-exporter's textfile collector reads Prometheus's classic format: no 'info' type,
    counters typed on their base name; prometheus_client's classic parser reads it back."""
    from prometheus_client.parser import text_string_to_metric_families as classic_parse
    m, s = read_json(TIME_RUN / "manifest.json"), read_json(TIME_RUN / "summary.json")
    text = export.prometheus_text(m, s, "socket-time")
    assert "# TYPE jvmos_recording_info gauge" in text and " info" not in text.split("# EOF")[0] \
        .replace("_info", "")
    assert "# EOF" not in text
    fams = {f.name: f for f in classic_parse(text)}
    calls = [x for x in fams["jvmos_category_calls"].samples
             if x.labels.get("pid") == PID_TIME and x.labels.get("category") == "jni_copy"]
    assert [x.value for x in calls] == [s["by_pid"][PID_TIME]["categories"]["jni_copy"]["calls"]]
