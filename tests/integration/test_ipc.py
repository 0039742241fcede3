"""Seed 000's suite as `jvmos run ipc`: one nano benchmark per primitive with two trials,
validated answers, statistics and a network count; and its bad input."""
import csv
import io
import json
import math
import socket
import subprocess
import threading

import pytest

from conftest import ROOT, can_trace, one_error_line, run_jvmos

pytestmark = pytest.mark.integration
traced = pytest.mark.skipif(bool(can_trace()), reason=can_trace() or "ok")

IPC_JAR = ROOT / "workloads" / "java" / "ipc" / "target" / "jvmos-ipc.jar"


@traced
def test_ipc_one_nano_benchmark_per_primitive(tmp_path):
    out = tmp_path / "ipc"
    r = run_jvmos(["run", "ipc", "--campaigns", "VV:50", "--trials", "2", "--pause", "0.1",
                   "--boundary", "none", "--out", str(out)], timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "ipc.json").read_text())
    assert set(res["campaigns"]) == {"sockets:VV:50", "xmlrpc:VV:50"}
    for key, c in res["campaigns"].items():
        assert len(c["trials"]) == 2
        assert all(t["validated"] == 1 for t in c["trials"]), key
        for timer in ("os", "language"):
            s = c[timer]
            xs = c[f"{timer}_s"]
            mean = sum(xs) / 2
            sd = abs(xs[0] - xs[1]) / math.sqrt(2)
            # two trials: the 99% half-width is t(0.995, 1 df) = 63.657 (tables) x sd / sqrt(2)
            assert s["n"] == 2 and s["mean"] == pytest.approx(mean), key
            assert s["ci"][1] - mean == pytest.approx(63.657 * sd / math.sqrt(2), rel=1e-3), key
        # the OS timer holds the client JVM's whole life, the language timer the call only
        assert c["os"]["mean"] > c["language"]["mean"], key
        n = c["network"]
        # a vector of 50 ints goes each way: payload both ways, one connection per trial at least
        assert n["to_port"]["packets"] > 0 and n["from_port"]["packets"] > 0, key
        assert n["to_port"]["payload_bytes"] >= 2 * 50 * 4, key
        assert n["to_port"]["connections"] >= 2, key
        # both JVMs' own GC record: allocation is never zero for a JVM that ran a call
        assert c["gc"]["client_per_trial"]["allocated_bytes"] > 0, key
        assert c["gc"]["server"]["allocated_bytes"] > 0, key
        assert c["server_end"]["calls"] == 2, key        # the server saw both trials' calls
    md = (out / "ipc.md").read_text()
    assert "Welch" in md and "R-delta" in md and "Garbage collection" in md
    # R-delta% (seed 000 eq. 3) is positive exactly when XML-RPC's mean time is the larger
    rows = [r for r in csv.reader(io.StringIO((out / "ipc-3.csv").read_text()))][1:]
    vv = next(r for r in rows if r[0] == "VV")
    s_os = sum(res["campaigns"]["sockets:VV:50"]["os_s"]) / 2
    x_os = sum(res["campaigns"]["xmlrpc:VV:50"]["os_s"]) / 2
    assert float(vv[3]) == pytest.approx(100 * (x_os - s_os) / s_os)
    assert (out / "ipc-size.png").stat().st_size > 5000


def test_unknown_benchmark(tmp_path):
    line = one_error_line(run_jvmos(["run", "ipc", "--campaigns", "VV:5,MATMUL:5", "--out",
                                     str(tmp_path / "x")]))
    assert "unknown benchmark 'MATMUL:5'" in line and "GRAB" in line
    assert not (tmp_path / "x").exists()


def test_server_that_does_not_come_up(tmp_path):
    # a heap too small for the JVM to start: the server exits before it listens
    line = one_error_line(run_jvmos(["run", "ipc", "--campaigns", "SS:5", "--trials", "2",
                                     "--no-net", "--out", str(tmp_path / "y")],
                                    env={"JAVA_TOOL_OPTIONS": "-Xmx1k"}, timeout=300))
    assert "the server command exited" in line and "before listening" in line


def test_server_port_in_use():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    try:
        for prim in ("sockets", "xmlrpc"):
            r = subprocess.run(["java", "-cp", str(IPC_JAR), "org.jvmos.workloads.ipc.IpcServer",
                                "--primitive", prim, "--port", str(port), "--max-seconds", "10"],
                               capture_output=True, text=True, timeout=60)
            assert r.returncode == 1, prim
            lines = [l for l in r.stderr.strip().splitlines() if l]
            assert len(lines) == 1 and lines[0].startswith("error:"), (prim, r.stderr)
    finally:
        s.close()


def test_serialization_every_format(tmp_path):
    out = tmp_path / "ser"
    r = run_jvmos(["run", "serialization", "--graphs", "vector,nested", "--sizes", "5",
                   "--iterations", "20", "--warmup", "5", "--repeat", "2", "--out", str(out)],
                  timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "serialization.json").read_text())
    assert len(res["runs"]) == 4 * 2
    for key, run in res["runs"].items():
        assert all(rep["validated"] == 25 for rep in run["repeats"]), key
        assert run["bytes_per_object"] > 0 and run["serialize"]["mean"] > 0, key
        assert run["serialize"]["n"] == 2, key
    # the same vector of 5 ints: Kryo's varints are smaller than Java serialization's stream
    assert res["runs"]["kryo:vector:5"]["bytes_per_object"] < \
        res["runs"]["serializable:vector:5"]["bytes_per_object"]
    assert (out / "serialization-bytes.png").stat().st_size > 5000


def test_serialization_bad_format(tmp_path):
    line = one_error_line(run_jvmos(["run", "serialization", "--formats", "json", "--out",
                                     str(tmp_path / "z")]))
    assert "unknown format(s) json" in line and "kryo" in line
    assert not (tmp_path / "z").exists()


@traced
def test_ipc_boundary_per_call(platform_file, tmp_path):
    """Both JVMs recorded with 1 and 1 + K calls: the per-call difference is there, and the
    socket primitive's object streams make more I/O syscalls per call than XML-RPC's HTTP."""
    out = tmp_path / "b"
    r = run_jvmos(["run", "ipc", "--campaigns", "SS:5", "--trials", "2", "--pause", "0.1",
                   "--no-net", "--boundary", "VV:500", "--boundary-calls", "20", "--out",
                   str(out)], timeout=2400)
    assert r.returncode == 0, r.stderr
    res = json.loads((out / "ipc.json").read_text())
    for prim in ("sockets", "xmlrpc"):
        b = res["boundary"][f"{prim}:VV:500"]
        assert b["app_bytes_per_call"] > 2 * 500 * 4, prim       # 500 ints each way at least
        for calls in ("1", "21"):
            run = b["runs"][calls]
            assert run["client_json"]["validated"] == int(calls), prim
            assert run["server"]["io_syscalls"] > 0 and run["client"]["io_syscalls"] > 0, prim
    s, x = (res["boundary"][f"{p}:VV:500"]["per_call"]["both"] for p in ("sockets", "xmlrpc"))
    assert s["io_syscalls"] > 10 * x["io_syscalls"] > 0
    assert "The OS boundary per call" in (out / "ipc.md").read_text()


@traced
def test_net_counter_sees_exactly_the_payload_sent(tmp_path):
    """net.bt's payload bytes against what a client and server on one port sent each other
    (counted by the sender), and its connections against the connects made."""
    from jvmos.netcount import NetCounter
    srv = socket.socket()
    srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    port = srv.getsockname()[1]

    def serve():
        for _ in range(3):
            c, _ = srv.accept()
            got = 0
            while got < 50_000:
                got += len(c.recv(65536))
            c.sendall(b"y" * 500)
            c.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    with NetCounter(port, tmp_path) as net:
        for _ in range(3):
            k = socket.create_connection(("127.0.0.1", port))
            k.sendall(b"x" * 50_000)
            got = 0
            while got < 500:
                got += len(k.recv(4096))
            k.close()
        t.join(30)
    srv.close()
    r = net.result
    assert r["to_port"]["payload_bytes"] == 3 * 50_000
    assert r["from_port"]["payload_bytes"] == 3 * 500
    assert r["to_port"]["connections"] == 3 and r["from_port"]["connections"] == 3
    # every packet's bytes hold its payload and at least its link, IP and TCP headers
    for d in ("to_port", "from_port"):
        assert r[d]["bytes"] >= r[d]["payload_bytes"] + r[d]["packets"] * (14 + 20 + 20)
