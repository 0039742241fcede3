import json
import locale
import shutil

import pytest

from jvmos import JvmosError, report

from _unit_helpers import FIXTURE_NAMES, FIXTURES


def run_dir(tmp_path, name, with_summary=True):
    d = tmp_path / name
    d.mkdir()
    shutil.copy(FIXTURES / name / "manifest.json", d)
    if with_summary:
        shutil.copy(FIXTURES / name / "summary.json", d)
    return d


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_render_of_a_recorded_run(tmp_path, name):
    d = run_dir(tmp_path, name)
    text = report.render(d)
    summary = json.loads((d / "summary.json").read_text())
    manifest = json.loads((d / "manifest.json").read_text())
    assert text.startswith(f"run {d}: {' '.join(manifest['command'])}\n")
    assert "\nstatus complete\n" in text
    assert "exit code" not in text                         # 0 is not worth a mention
    assert "JDK 17.0.15 (/usr/lib/jvm/java-17-openjdk-amd64)" in text
    assert f"layers {','.join(manifest['layers'])}" in text
    assert "kernel 6.18.44-fc-v657" in text
    assert "= jni_copy + nio_copy + kernel_copy" in text
    pct = summary["totals"]["guaranteed_overhead_pct"]
    assert f"({pct:.1f}% of wall)" in text
    for cat in summary["categories"]:
        assert f"\n| {cat} | " in text, cat
    for path in ("jni", "nio", "other"):
        assert f"\n| {path} | " in text
    assert "### JNI copy functions" in text
    assert "\n| GetByteArrayRegion | " in text
    assert "note: 1 syscall no entry event(s): a call was in progress when tracing began" in text
    assert "warning: bpftrace lost" not in text
    assert "kernel_copy (estimated): bytes moved by the I/O syscalls" in text


def test_render_figures_of_socket_census(tmp_path):
    text = report.render(run_dir(tmp_path, "socket-census"))
    assert "| jni_call | 1,728 | — | — | on-CPU |  |  | — | measured |" in text
    assert "| nio_copy | 72,432 | 1 MB |" in text
    assert "| nio | 72,432 | 1 MB |" in text
    assert "| other | — | 357 kB |" in text
    assert "wall 413.2 ms; guaranteed overhead 1.05 ms (0.3% of wall)" in text
    # JNI copy functions ordered by calls, descending
    fn_rows = [l for l in text.splitlines() if l.startswith("| Get") or l.startswith("| Set")
               or l.startswith("| Release")]
    calls = [int(l.split("|")[2].strip().replace(",", "")) for l in fn_rows]
    assert calls == sorted(calls, reverse=True) and len(calls) == 7


def test_render_shows_failed_status_exit_code_and_lost_events(tmp_path):
    d = run_dir(tmp_path, "blocking-java17")
    s = json.loads((d / "summary.json").read_text())
    s["status"], s["exit_code"] = "command_failed", 3
    s["totals"]["lost_events"] = 42
    s["totals"]["guaranteed_overhead_pct"] = None
    (d / "summary.json").write_text(json.dumps(s))
    text = report.render(d)
    assert "\nstatus command_failed (exit code 3)\n" in text
    assert "warning: bpftrace lost 42 events" in text
    assert "% of wall" not in text


def test_render_of_an_attach_run_without_command(tmp_path):
    d = run_dir(tmp_path, "blocking-java17")
    m = json.loads((d / "manifest.json").read_text())
    m["command"], m["attach_pid"], m["jvms_probed"] = None, 4242, []
    (d / "manifest.json").write_text(json.dumps(m))
    text = report.render(d)
    assert text.startswith(f"run {d}: pid 4242\n")
    assert "JVMs probed: none;" in text


def test_load_run_returns_both_files(tmp_path):
    d = run_dir(tmp_path, "socket-census")
    manifest, summary = report.load_run(d)
    assert manifest["schema"] == "jvmos.manifest/1"
    assert summary["schema"] == "jvmos.summary/1"


def test_load_run_without_summary_names_the_manifest_status(tmp_path):
    d = run_dir(tmp_path, "blocking-java17", with_summary=False)
    m = json.loads((d / "manifest.json").read_text())
    m["status"] = "recording"
    (d / "manifest.json").write_text(json.dumps(m))
    with pytest.raises(JvmosError, match=r"no summary\.json.*did not finish.*manifest status: "
                                         r"recording"):
        report.load_run(d)


def test_load_run_of_a_directory_without_manifest(tmp_path):
    with pytest.raises(JvmosError, match="not a jvmos run directory"):
        report.load_run(tmp_path)


def test_load_run_of_something_that_is_not_a_directory(tmp_path):
    f = tmp_path / "file"
    f.write_text("x")
    with pytest.raises(JvmosError, match="is not a directory"):
        report.load_run(f)
    with pytest.raises(JvmosError, match="is not a directory"):
        report.load_run(tmp_path / "nope")


@pytest.mark.parametrize("damage", ["truncate", "empty", "garbage"])
def test_load_run_of_a_damaged_summary(tmp_path, damage):
    d = run_dir(tmp_path, "socket-census")
    text = (d / "summary.json").read_text()
    (d / "summary.json").write_text({"truncate": text[: len(text) // 2], "empty": "",
                                     "garbage": "}{"}[damage])
    with pytest.raises(JvmosError, match=r"summary\.json is damaged"):
        report.load_run(d)


def test_load_run_of_a_damaged_manifest(tmp_path):
    d = run_dir(tmp_path, "socket-census")
    (d / "manifest.json").write_text('{"schema": ')
    with pytest.raises(JvmosError, match=r"manifest\.json is damaged"):
        report.load_run(d)


@pytest.mark.skipif(locale.getpreferredencoding(False).lower().replace("-", "") != "utf8",
                    reason="needs a UTF-8 locale for the bytes to be undecodable")
def test_load_run_of_a_summary_damaged_into_binary(tmp_path):
    d = run_dir(tmp_path, "socket-census")
    (d / "summary.json").write_bytes(b"\x00\xff\xfe\x81" * 16)
    with pytest.raises(JvmosError):
        report.load_run(d)


def test_a_recording_with_syscall_tracepoints_says_what_they_cost_the_host():
    """Issue 31: whenever syscall tracepoints were on, the report prints the calibrated tax
    every task of the host paid per syscall; unknown (and why) when not calibrated; nothing
    when no syscall tracepoint was on."""
    from jvmos import conclusion, report
    kinds = {"tracepoint:syscalls:sys_enter_close": "tracepoint"}
    plat = {"engine_probes": {"syscall_tracepoint_tax": {"mean_ns": 42.0,
                                                         "ci95_ns": [30.0, 54.0]},
                              "bare_write": {"mean_ns": 280.0}}}
    tax = conclusion.host_tax(plat, kinds)
    assert tax["ns_per_syscall"] == 42.0 and tax["pct_of_bare_write"] == pytest.approx(15.0)
    text = report.tax_text(tax)
    assert "one idle syscall tracepoint costs every task about 42 ns more per syscall, 95% " \
        "[30, 54]" in text
    assert "+15% on a bare 280 ns write(2) on this machine" in text
    assert "more tracepoints" in text
    # calibrated but not resolved from the noise: said so, not "not calibrated"
    unres = conclusion.host_tax({"engine_probes": {"unresolved": {"syscall_tracepoint_tax": {}}}},
                            kinds)
    assert "not resolved from the noise" in report.tax_text(unres)
    assert conclusion.host_tax(plat, {"uprobe:/lib/libc.so.6:close": "uprobe"}) is None
    unknown = conclusion.host_tax({"engine_probes": {}}, kinds)
    assert unknown["ns_per_syscall"] is None
    assert "unknown, not calibrated on this machine" in report.tax_text(unknown)
    m = {"engine": {"name": "bpf"}, "scope": "host", "host_tax": tax,
         "probes": {"kinds": kinds}}
    assert "about 42 ns more per syscall" in report.scope_line(m)
    assert "libc's wrappers stand for" not in report.scope_line(m)      # host scope
    m["probes"]["kinds"] = {}
    assert "per syscall" not in report.scope_line(m)


def test_the_probe_effect_is_shown_by_probe_kind_largest_first():
    from jvmos import report
    t = {"probe_overhead_ns": 1000.0,
         "probe_hits": {"io:jni_copy": 2, "threads:futex_pair": 1, "x:unknown": 5},
         "probe_cost_per_hit_ns": {
             "io:jni_copy": {"ns": 100.0, "ci95_ns": [90.0, 110.0], "total_ns": 200.0,
                             "source": "measured: io.bpf.c's ...",
                             "calibration_key": "jni_copy_time_hit", "what": "a JNI copy"},
             "threads:futex_pair": {"ns": 800.0, "total_ns": 800.0,
                                    "source": "borrowed: calib ...", "what": "a futex"}}}
    tab = report.probe_kinds_table(t)
    assert [r[0] for r in tab.rows] == ["threads:futex_pair", "io:jni_copy", "x:unknown"]
    assert tab.rows[0][4] == "borrowed" and tab.rows[0][6] == "80.0%"
    assert tab.rows[1][3] == "100 [90, 110]" and tab.rows[1][4] == "measured (jni_copy_time_hit)"
    assert tab.rows[2][3] == "unknown" and tab.rows[2][5] == "unknown"
    assert report.probe_kinds_table({}) is None


def test_the_io_wrappers_are_set_against_the_kernels_count_range():
    from jvmos import conclusion, report
    man = {"scope": "process", "layers": ["io"],
           "kernel_io": {"pid": 7, "syscr": [10, 12], "syscw": [1000, 1040]}}
    summ = {"by_pid": {"7": {"categories": {"io_syscall": {"syscalls": {
        "write": {"calls": 990}, "read": {"calls": 11}}}}}}}
    b = conclusion.io_wrapper_bound(man, summ)
    assert b["kernel_writes_range"] == [1000, 1040] and b["wrapper_writes"] == 990
    assert b["writes_not_seen_at_least"] == 10 and b["reads_not_seen_at_least"] == 0
    assert not b["within"]
    line = report.probe_effect_lines({"io_wrapper_bound": b})[-1]
    assert "writes 990 seen, the kernel's 1,000-1,040" in line and "at least 0 reads" in line
    summ["by_pid"]["7"]["categories"]["io_syscall"]["syscalls"]["write"]["calls"] = 1020
    b = conclusion.io_wrapper_bound(man, summ)
    assert b["within"] and "not seen" not in report.probe_effect_lines({"io_wrapper_bound": b})[-1]
    # not a process-scope io recording: no bound
    assert conclusion.io_wrapper_bound(dict(man, scope="host"), summ) is None
