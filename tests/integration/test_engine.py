"""The compiled engine (`jvmos record`) on real processes, with bpftrace as the
independent witness: two implementations count the same events, and must agree exactly.

  - a C loop of 100,000 write(2): the engine's count of write calls (libc's wrapper at
    --scope process, the syscall tracepoints at --scope host) against bpftrace's count of
    sys_exit_write for the same program;
  - a JVM's FileOutputStream writes: the engine's jni_GetByteArrayRegion calls against
    bpftrace's uprobe on the same function of the same libjvm.so, for the same pid;
  - a shell that starts two programs: each child is held at its exec until its uprobes are
    open, so every one of its writes is counted;
and the engine's promises: a SIGKILLed recording leaves no link behind, two recordings at
once count only their own process, a program the verifier refuses is said in one line.
"""
import json
import os
import secrets
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest

from conftest import bpftrace_witness, stop_witness, JVMOS, ROOT, can_trace, one_error_line, run_jvmos, wait_for_manifest

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")]

PROBECAL = ROOT / "workloads/c/build/probecal"
ENGINE = ROOT / "build/jvmos-engine"
GATED = Path(__file__).resolve().parent / "java" / "GatedWrites.java"
WRITES = 100_000


@pytest.fixture(autouse=True)
def _built():
    if not ENGINE.exists():
        pytest.fail("build/jvmos-engine is not built: make build")


def unique_copy(tmp_path: Path) -> Path:
    """probecal under a name no other process has: its comm identifies it to the witness."""
    p = tmp_path / f"jw{secrets.token_hex(4)}"
    shutil.copy(PROBECAL, p)
    return p


class Witness:
    """bpftrace counting one thing into @n (and, given a body, whatever else it sums),
    attached before the workload starts."""

    def __init__(self, tmp_path: Path, probe: str, body: str = "@n = count();"):
        self.out = tmp_path / f"witness-{secrets.token_hex(3)}.json"
        self.p = bpftrace_witness(self.out, probe + " { " + body + " }")

    def stop(self) -> int:
        return self.stop_maps().get("@n", 0)

    def stop_maps(self) -> dict:
        stop_witness(self.p)
        maps = {}
        for line in self.out.read_text().splitlines():
            rec = json.loads(line)
            if rec.get("type") == "map":
                maps.update(rec["data"])
        return maps


def summary(out: Path) -> dict:
    return json.loads((out / "summary.json").read_text())


def manifest(out: Path) -> dict:
    return json.loads((out / "manifest.json").read_text())


def syscall_calls(s: dict, name: str) -> int:
    return sum(((p["categories"].get("io_syscall") or {}).get("syscalls") or {})
               .get(name, {}).get("calls", 0) for p in s["by_pid"].values())


@pytest.mark.parametrize("scope,mode", [("process", "time"), ("host", "time"),
                                        ("process", "count")])
def test_write_loop_agrees_with_bpftrace(platform_file, tmp_path, scope, mode):
    prog = unique_copy(tmp_path)
    # the witness counts the calls and sums the bytes the kernel returned
    w = Witness(tmp_path, f'tracepoint:syscalls:sys_exit_write /comm == "{prog.name}"/',
                "@n = count(); @b = sum(args->ret > 0 ? args->ret : 0);")
    out = tmp_path / "rec"
    try:
        r = run_jvmos(["record", "--scope", scope, "--mode", mode,
                       "--out", str(out), "--", str(prog), "--mode", "write", "--iterations",
                       str(WRITES)], timeout=600)
    finally:
        seen = w.stop_maps()
    assert r.returncode == 0, r.stderr
    s, m = summary(out), manifest(out)
    assert s["status"] == "complete" and m["engine"]["name"] == "bpf"
    assert m["attached_probe_count"] > 0
    counted = syscall_calls(s, "write")
    # the loop's writes and probecal's result line, each seen by both
    assert counted == seen["@n"] >= WRITES, (counted, seen)
    io = s["categories"]["io_syscall"]
    assert io["syscalls"]["write"]["bytes"] == seen["@b"] >= 10 * WRITES
    # the engine's own calibration corrected the time, and says which
    assert io["syscalls"]["write"]["time_hits"] == counted
    assert "corrected" in io["syscalls"]["write"]
    if scope == "process":
        site = next(x for x in m["probes"]["sites"] if x["symbol"] == "write")
        assert site["class"] == "emulated", site      # moved off write's rip-relative cmp
    assert m["teardown_seconds"] < 60 and m["attach_seconds"] < 120


def _gated_java(tmp_path: Path, n: int):
    from test_record import java
    classes = tmp_path / "classes"
    subprocess.run(["javac", "-d", str(classes), str(GATED)], check=True, timeout=300)
    go = tmp_path / "GO"
    p = subprocess.Popen([java(), "-cp", str(classes), "GatedWrites", str(go), str(n), "10"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    # the JVM's start-up (which may copy through JNI too) is over before any witness attaches:
    # a loaded machine would otherwise let a witness count a start-up copy the recording,
    # attached a moment later, does not
    line = p.stderr.readline()
    assert line.startswith("waiting for"), line
    return p, go


def _libjvm_of(pid: int, timeout=60) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in open(f"/proc/{pid}/maps"):
            if line.rstrip().endswith("/libjvm.so"):
                return line.split()[-1]
        time.sleep(0.1)
    raise AssertionError(f"pid {pid} mapped no libjvm.so")


def test_jni_copies_agree_with_bpftrace_attached(platform_file, tmp_path):
    """Attach mode, to a JVM that waits for a file before it writes: the engine's
    GetByteArrayRegion count against bpftrace's uprobe on the same function, same pid."""
    n = 20_000
    target, go = _gated_java(tmp_path, n)
    out = tmp_path / "rec"
    rec = None
    try:
        libjvm = _libjvm_of(target.pid)
        w = Witness(tmp_path, f"uprobe:{libjvm}:jni_GetByteArrayRegion /pid == {target.pid}/")
        rec = subprocess.Popen(JVMOS + ["record", "--pid", str(target.pid),
                                        "--duration", "600", "--out", str(out)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               cwd=ROOT)
        try:
            wait_for_manifest(out, started=True)
            go.write_text("")
            assert target.wait(timeout=300) == 0, target.stderr.read()
            _, err = rec.communicate(timeout=300)
        finally:
            seen = w.stop()
    finally:
        for p in (target, rec):
            if p is not None and p.poll() is None:
                p.kill()
                p.wait()
    s, m = summary(out), manifest(out)
    # the target exited before the recording was stopped: said, with the figures of its run
    assert s["status"] == "target_exited", err
    counted = s["categories"]["jni_copy"]["functions"]["GetByteArrayRegion"]["calls"]
    assert counted == seen >= n, (counted, seen)
    assert syscall_calls(s, "write") >= n
    # the JNI path: every loop write sends the buffer GetByteArrayRegion had just filled
    paths = s["by_pid"][str(target.pid)]["paths"]
    assert paths["jni"]["calls"] >= n and paths["jni"]["bytes"] >= 10 * n, paths
    assert m["engine"]["uprobe_multi"] is True


def test_children_are_held_at_exec_and_counted(platform_file, tmp_path):
    """A shell starts two programs: each is a new process held at its exec until the engine
    has opened its uprobes, so every write of both is counted (the witness counts them too)."""
    prog = unique_copy(tmp_path)
    w = Witness(tmp_path, f'tracepoint:syscalls:sys_exit_write /comm == "{prog.name}"/')
    out = tmp_path / "rec"
    try:
        r = run_jvmos(["record", "--out", str(out), "--", "sh", "-c",
                       f"{prog} --mode write --iterations 5000; "
                       f"{prog} --mode write --iterations 7000"], timeout=600)
    finally:
        seen = w.stop()
    assert r.returncode == 0, r.stderr
    s, m = summary(out), manifest(out)
    held = [p for p in m["engine"]["procs"] if p["kind"] == "exec" and p["held"]]
    assert len(held) >= 2 and all(p["uprobes"] > 0 and not p.get("error") for p in held), held
    per_child = sorted(syscall_calls({"by_pid": {k: v}}, "write")
                       for k, v in s["by_pid"].items() if v.get("exec", "").endswith(prog.name))
    assert per_child == [5001, 7001], s["by_pid"].keys()
    assert sum(per_child) == seen


def _links() -> set:
    r = subprocess.run(["bpftool", "-j", "link", "list"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 0, r.stderr
    return {(l["id"], l.get("type")) for l in json.loads(r.stdout or "[]")}


def test_sigkill_leaves_no_probe_behind(platform_file, tmp_path):
    prog = unique_copy(tmp_path)
    out = tmp_path / "rec"
    before = _links()
    rec = subprocess.Popen(JVMOS + ["record", "--out", str(out), "--",
                                    str(prog), "--mode", "write", "--iterations", "400000000"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                           cwd=ROOT)
    try:
        wait_for_manifest(out, started=True)
        ours = _links() - before
        # bpftool 7.1 predates the name: BPF_LINK_TYPE_UPROBE_MULTI is 12
        assert any(t in ("uprobe_multi", 12) for _, t in ours), ours
        rec.kill()
        rec.wait(timeout=60)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and ours & _links():
            time.sleep(0.2)
        assert not (ours & _links()), "links outlived the killed recording"
    finally:
        if rec.poll() is None:
            rec.kill()
        subprocess.run(["pkill", "-KILL", "-x", prog.name])
    # the manifest says the recording never ended (jvmos died), not that it completed
    assert manifest(out)["status"] == "running"
    events = Path("/sys/kernel/tracing/uprobe_events")
    if events.exists():
        assert prog.name not in events.read_text()


def test_two_recordings_count_only_their_own(platform_file, tmp_path):
    progs = [unique_copy(tmp_path) for _ in range(2)]
    iters = [30_000, 50_000]
    outs = [tmp_path / f"rec{i}" for i in range(2)]
    recs = [subprocess.Popen(JVMOS + ["record", "--out", str(o), "--",
                                      str(p), "--mode", "write", "--iterations", str(n)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             cwd=ROOT)
            for p, n, o in zip(progs, iters, outs)]
    for r in recs:
        _, err = r.communicate(timeout=600)
        assert r.returncode == 0, err
    for o, n in zip(outs, iters):
        s = summary(o)
        assert len(s["by_pid"]) == 1
        assert syscall_calls(s, "write") == n + 1      # its loop and its result line only


def test_verifier_rejection_is_one_line(platform_file, tmp_path):
    """A layer whose program the kernel refuses: one line naming the layer and the program,
    and the command never runs."""
    objs = tmp_path / "objs"
    objs.mkdir()
    shutil.copy(ROOT / "build/probes/common.bpf.o", objs / "common.bpf.o")
    bad = tmp_path / "io.bpf.c"
    bad.write_text('#include "common.bpf.h"\n'
                   'const volatile __u32 timing = 1;\n'
                   'SEC("uprobe.multi")\nint jni_get_region(struct pt_regs *ctx)\n'
                   '{\n\tchar *p = (char *)PT_REGS_PARM1(ctx);\n\treturn *p;\n}\n')
    r = subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_x86",
                        f"-I{ROOT / 'build'}", f"-I{ROOT / 'probes'}", "-c", str(bad), "-o",
                        str(objs / "io.bpf.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    marker = tmp_path / "ran"
    r = run_jvmos(["record", "--out", str(tmp_path / "rec"), "--",
                   "sh", "-c", f"touch {marker}"],
                  env={"JVMOS_ENGINE_OBJECTS": str(objs)}, timeout=300)
    line = one_error_line(r)
    assert "layer io" in line and "jni_get_region" in line, line
    assert not marker.exists()
    assert manifest(tmp_path / "rec")["status"] == "failed"


def test_the_engine_names_its_records_as_the_header_does():
    """C, Go and Python agree on every record: the schema the engine publishes (from its
    bpf2go-generated types) names each field of probes/jvmos.h's structs in order, and holds
    every column jvmos reads."""
    import re
    from jvmos import engine as eng
    out = subprocess.run([str(ENGINE), "--schema"], capture_output=True, text=True, check=True)
    schema = json.loads(out.stdout)["schema"]
    header = (ROOT / "probes/jvmos.h").read_text()
    fields = {m.group(1): [f for f in re.findall(r"(?m)^\s*(?:__u\d+|char)\s+(\w+)", m.group(2))
                           if f != "pad"]
              for m in re.finditer(r"(?s)struct (jvmos_\w+) \{(.*?)\n\};", header)}
    assert schema["stats"] == fields["jvmos_stat_key"] + fields["jvmos_stat_val"]
    assert schema["counts"] == fields["jvmos_count_key"] + ["value"]
    assert schema["proc_event"] == fields["jvmos_proc_event"]
    assert schema["proc"][1:] == fields["jvmos_proc"]
    for name, needed in eng.NEEDED_COLUMNS.items():
        assert set(needed) <= set(schema[name]), (name, needed, schema[name])


def test_a_common_object_with_other_records_is_refused(platform_file, tmp_path):
    """A developer's common object (JVMOS_ENGINE_OBJECTS) whose records differ from those the
    engine's types were generated from is refused in one line naming the struct, before
    anything is attached: the engine would otherwise read its sums in the wrong columns."""
    src = tmp_path / "probes"
    shutil.copytree(ROOT / "probes", src, ignore=shutil.ignore_patterns("engine"))
    h = src / "jvmos.h"
    text = h.read_text()
    swapped = text.replace("\t__u64 time_ns;", "\t__u64 time_swapped;", 1)
    assert swapped != text
    h.write_text(swapped.replace("t->time_ns", "t->time_swapped"))
    objs = tmp_path / "objs"
    objs.mkdir()
    for f in (ROOT / "build/probes").glob("*.bpf.o"):
        shutil.copy(f, objs / f.name)
    r = subprocess.run(["clang", "-O2", "-g", "-target", "bpf", "-D__TARGET_ARCH_x86",
                        f"-I{ROOT / 'build'}", f"-I{src}", "-c", str(src / "common.bpf.c"),
                        "-o", str(objs / "common.bpf.o")], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    marker = tmp_path / "ran"
    r = run_jvmos(["record", "--layers", "io", "--out", str(tmp_path / "rec"), "--",
                   "sh", "-c", f"touch {marker}"],
                  env={"JVMOS_ENGINE_OBJECTS": str(objs)}, timeout=300)
    line = one_error_line(r)
    assert "jvmos_stat_val" in line and "records" in line, line
    assert not marker.exists()


def test_live_view_of_a_launched_command(platform_file, tmp_path):
    """--interval works for a launched command with the engine: snapshots come from the
    engine's maps, and the intervals' calls add up to no more than the whole recording's."""
    prog = unique_copy(tmp_path)
    out = tmp_path / "rec"
    r = run_jvmos(["record", "--interval", "0.5", "--out", str(out), "--",
                   str(prog), "--mode", "write", "--iterations", "3000000"], timeout=600)
    assert r.returncode == 0, r.stderr
    tl = json.loads((out / "timeline.json").read_text())
    assert tl["intervals"], tl
    s = summary(out)
    per = sum((i.get("categories", {}).get("io_syscall") or {}).get("calls", 0)
              for i in tl["intervals"])
    assert 0 < per <= syscall_calls(s, "write") + syscall_calls(s, "read")


def test_engine_killed_mid_recording_is_failed(platform_file, tmp_path):
    """The engine dies during the recording: the run is `failed`, said in one line, and the
    manifest says what ended it; the command is let run to its end."""
    prog = unique_copy(tmp_path)
    out = tmp_path / "rec"
    rec = subprocess.Popen(JVMOS + ["record", "--out", str(out), "--",
                                    str(prog), "--mode", "write", "--iterations", "3000000"],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        wait_for_manifest(out, started=True)
        os.kill(manifest(out)["engine"]["pid"], signal.SIGKILL)
        _, err = rec.communicate(timeout=600)
    finally:
        if rec.poll() is None:
            rec.kill()
    assert rec.returncode != 0
    assert "recording failed: the engine stopped before the end of the run" in err, err
    m = manifest(out)
    assert m["status"] == "failed" and "exited before the stop" in m["engine"]["end"]


MANY = Path(__file__).resolve().parent / "java" / "ManyThreads.java"


def test_a_jvm_with_2000_threads(platform_file, tmp_path):
    """2,000 threads of one JVM, all alive at once, each making 50 JNI copies and writes: every
    thread is traced (a thread belongs to its process), nothing is lost, and the copies the
    threads made are all counted."""
    from test_record import java
    n, k = 2000, 50
    classes = tmp_path / "classes"
    subprocess.run(["javac", "-d", str(classes), str(MANY)], check=True, timeout=300)
    out = tmp_path / "rec"
    r = run_jvmos(["record", "--layers", "io,threads", "--out", str(out),
                   "--", java(), "-Xss256k", "-cp", str(classes), "ManyThreads", str(n),
                   str(k)], timeout=900)
    assert r.returncode == 0, r.stderr
    s = summary(out)
    assert s["status"] == "complete", s.get("status_reason")
    gbar = s["categories"]["jni_copy"]["functions"]["GetByteArrayRegion"]["calls"]
    assert gbar >= n * k, gbar
    assert syscall_calls(s, "write") >= n * k
    created = s["categories"]["thread_create"]
    assert created["calls"] >= n, created


def test_classic_uprobes_count_the_same(platform_file, tmp_path):
    """The path of a kernel without uprobe_multi (before 6.6): classic per-pid uprobes, forced
    with JVMOS_ENGINE_CLASSIC=1; the counts are the witness's, and the fallback is said."""
    prog = unique_copy(tmp_path)
    w = Witness(tmp_path, f'tracepoint:syscalls:sys_exit_write /comm == "{prog.name}"/')
    out = tmp_path / "rec"
    try:
        r = run_jvmos(["record", "--out", str(out), "--", str(prog),
                       "--mode", "write", "--iterations", "20000"],
                      env={"JVMOS_ENGINE_CLASSIC": "1"}, timeout=600)
    finally:
        seen = w.stop()
    assert r.returncode == 0, r.stderr
    m = manifest(out)
    assert m["engine"]["uprobe_multi"] is False and "classic" in m["engine"]["fallback"]
    assert syscall_calls(summary(out), "write") == seen >= 20000


def test_two_jvms_recorded_at_once_count_only_their_own(platform_file, tmp_path):
    """Two JVMs, each recorded by its own jvmos at the same time: each recording holds its
    own JVM only, with that JVM's JNI copies."""
    from test_record import java
    classes = tmp_path / "classes"
    subprocess.run(["javac", "-d", str(classes), str(GATED)], check=True, timeout=300)
    go = tmp_path / "GO"
    go.write_text("")           # no waiting: each JVM writes as soon as it starts
    ns = [3000, 7000]
    outs = [tmp_path / f"rec{i}" for i in range(2)]
    recs = [subprocess.Popen(JVMOS + ["record", "--out", str(o), "--",
                                      java(), "-cp", str(classes), "GatedWrites", str(go),
                                      str(n), "10"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
                             cwd=ROOT)
            for n, o in zip(ns, outs)]
    for r in recs:
        _, err = r.communicate(timeout=600)
        assert r.returncode == 0, err
    got = []
    for o in outs:
        s = summary(o)
        assert s["status"] == "complete" and len(s["by_pid"]) == 1
        got.append(s["categories"]["jni_copy"]["functions"]["GetByteArrayRegion"]["calls"])
    # each JVM's writes, and a few of its start-up (the same few for both: same program)
    assert ns[0] <= got[0] < ns[1] <= got[1] and got[1] - got[0] == ns[1] - ns[0], got


def test_many_short_children_are_all_let_go(platform_file, tmp_path):
    """A script that starts 100 short programs one after the other: each is held at its exec
    until its uprobes are open, and every one is let go (a SIGCONT that came before the
    deferred SIGSTOP once left a child stopped for good: make demo's antlr and its gofmt)."""
    out = tmp_path / "rec"
    r = run_jvmos(["record", "--out", str(out), "--", "sh", "-c",
                   "i=0; while [ $i -lt 100 ]; do /bin/true; i=$((i+1)); done"], timeout=300)
    assert r.returncode == 0, r.stderr
    m = manifest(out)
    held = [p for p in m["engine"]["procs"] if p["kind"] == "exec" and p["held"]]
    assert len(held) >= 100 and summary(out)["status"] == "complete"
