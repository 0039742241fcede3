"""The generic server experiment's pieces that need no tracing: levels, the server's port and
JVM found from /proc, a level's resources, the table."""
import os
import socket
import subprocess
import sys

import pytest

from jvmos import JvmosError
from jvmos.experiments import server as srv


def test_level_tokens():
    assert srv.parse_level_tokens("5,10, 20") == ["5", "10", "20"]
    assert srv.parse_level_tokens("10x10,c1") == ["10x10", "c1"]
    for bad in ("", " ", "5,,10", "a b", "5;rm", "$(x)", "5,5"):
        with pytest.raises(JvmosError):
            srv.parse_level_tokens(bad)


def test_positive_levels():
    assert srv.parse_positive_levels("5,10,20,40", "rooms") == [5, 10, 20, 40]
    for bad in ("0", "-1", "1.5", "x", "5,x", "05"):
        with pytest.raises(JvmosError) as e:
            srv.parse_positive_levels(bad, "rooms")
        assert "rooms" in str(e.value)


def test_check_commands():
    assert srv.check_commands("java -jar 'a b.jar'", "load {level}") == ["java", "-jar", "a b.jar"]
    for s, l in (("", "x {level}"), ("java 'unclosed", "x {level}"), ("java", "x"),
                 ("java", "x '{level}")):
        with pytest.raises(JvmosError):
            srv.check_commands(s, l)


def test_listening_ports_and_descendants():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    port = s.getsockname()[1]
    try:
        assert port in srv.listening_ports(os.getpid())
    finally:
        s.close()
    assert port not in srv.listening_ports(os.getpid())
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)"])
    try:
        assert child.pid in srv.descendants(os.getpid())
    finally:
        child.kill()
        child.wait()


def test_resource_times_zero_only_for_attached_layers():
    L = {"by_resource": {"io": 5.0, "links": 1.0}, "overhead_unknown": ["malloc"]}
    by = srv.resource_times(L, ["io", "threads", "links", "mem"])
    # threads attached, nothing created: 0; mem's time unknown: stays None
    assert by == {"io": 5.0, "links": 1.0, "threads": 0.0}
    by = srv.resource_times({"by_resource": {"io": 5.0}}, ["io"])
    assert by.get("threads") is None and by.get("mem") is None


def level(bare_cpu, rec_cpu, io, rate_b, rate_r):
    from jvmos.cputime import cpu_split
    L = {"bare": {"server_cpu_ns": bare_cpu, "rate": rate_b}, "recorded": {"rate": rate_r},
         "by_resource": {"io": io, "threads": 0.0, "links": 0.0, "mem": 0.0},
         "server_cpu_ns": rec_cpu, "bare_cpu_ns": bare_cpu,
         "probe_totals": {"probe_overhead_ns": rec_cpu - bare_cpu}}
    L.update(cpu_split(bare_cpu, rec_cpu, io))
    return L


def test_overhead_table_rows():
    levels = {"5": level(100e6, 150e6, 25e6, 1000.0, 800.0),
              "10": level(200e6, 260e6, 40e6, 1500.0, None)}
    t = srv.overhead_table("T", levels, "rooms", "rate", "messages/s")
    csv = t.csv().splitlines()
    assert csv[0].startswith("rooms,messages/s (bare),messages/s (recorded),I/O,memory")
    row = csv[1].split(",")
    assert row[0] == "5" and row[1] == "1000.0" and row[2] == "800.0"
    # overhead / bare CPU = 25 / 100; Java execution = 100 - 25
    assert float(row[7]) == 75e6 and float(row[8]) == 25.0
    assert levels["5"]["probe_effect"]["ratio"] == 1.0
    assert "—" in t.markdown().splitlines()[-1]        # a missing rate is a dash, not 0
