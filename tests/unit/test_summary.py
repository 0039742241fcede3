import copy

import pytest

from jvmos.analyzers import summary as summ
from jvmos.analyzers.bpftrace import parse_lines
from jvmos.analyzers.records import Records

from _unit_helpers import map_lines, recording

# ---------------------------------------------------------------- the recorded fixtures


# the fixtures were recorded without a probe calibration; these costs (ns) let the rebuild
# correct their times (the arithmetic checked below does not depend on their values)
FIXTURE_PROBES = {"jni_copy_time_window": {"mean_ns": 100.0}, "jni_copy_time_hit": {"mean_ns": 900.0},
                  "io_syscall_window": {"mean_ns": 50.0}, "io_syscall_hit": {"mean_ns": 400.0},
                  "uprobe": {"mean_ns": 300.0}, "jni_copy_count_hit": {"mean_ns": 500.0}}


def test_the_parsed_fixtures_are_consistent(rec):
    s = rec.rebuild(probes=FIXTURE_PROBES)
    cats, totals = s["categories"], s["totals"]
    assert s["schema"] == "jvmos.summary/1"
    assert s["status"] == "complete" and s["exit_code"] == 0
    # categories are the sums of their parts, raw and corrected
    jc = cats["jni_copy"]
    for field in ("calls", "bytes", "time_raw_ns", "time_ns"):
        assert jc[field] == pytest.approx(sum(f[field] for f in jc["functions"].values())), field
    assert all(not k.startswith("jni_") for k in jc["functions"])
    sc = cats["io_syscall"]
    for field in ("calls", "bytes", "time_raw_ns", "time_ns"):
        assert sc[field] == pytest.approx(sum(f[field] for f in sc["syscalls"].values())), field
    # each syscall: raw - calls x 50, or 0 when that is negative (then flagged)
    for name, f in sc["syscalls"].items():
        assert f["time_ns"] == pytest.approx(max(0, f["time_raw_ns"] - f["calls"] * 50.0)), name
        assert f["floored"] == (f["time_raw_ns"] < f["calls"] * 50.0)
    # kernel copy: the syscall bytes x the calibrated per-byte costs
    kc, k = cats["kernel_copy"], s["constants"]
    assert kc["bytes"] == kc["copyin_bytes"] + kc["copyout_bytes"]
    assert kc["copyin_bytes"] == sum(sc["syscalls"].get(n, {}).get("bytes", 0)
                                     for n in ("write", "pwrite64", "writev", "sendto", "sendmsg"))
    assert kc["time_ns"] == pytest.approx(kc["copyin_bytes"] * k["kernel_copyin"]["ns_per_byte"]
                                          + kc["copyout_bytes"] * k["kernel_copyout"]["ns_per_byte"])
    # paths: other is what neither path explains
    p = s["paths"]
    assert p["nio"]["bytes"] == cats.get("nio_copy", {}).get("bytes", 0)
    # guaranteed overhead = the copying categories only, syscall time excluded
    g = sum(cats[c]["time_ns"] for c in ("jni_copy", "nio_copy", "kernel_copy") if c in cats)
    assert totals["guaranteed_overhead_ns"] == pytest.approx(g)
    assert totals["guaranteed_overhead_pct"] == pytest.approx(100 * g / totals["wall_ns"])
    # totals are the sums over the processes
    assert totals["processes"] == len(s["by_pid"])
    for name, cat in cats.items():
        for field in ("calls", "bytes", "time_ns"):
            vals = [bp["categories"][name][field] for bp in s["by_pid"].values()
                    if name in bp["categories"]]
            if any(v is not None for v in vals):
                assert cat[field] == pytest.approx(sum(v or 0 for v in vals)), (name, field)
    for path in ("jni", "nio", "other"):
        assert p[path]["bytes"] == sum(bp["paths"][path]["bytes"] for bp in s["by_pid"].values())
    # jni_call census, when the jni layer was loaded
    if "jni_call" in cats:
        j = cats["jni_call"]
        assert j["bytes"] is None and j["time_ns"] is None
        assert j["copying_calls"] == jc["calls"]
        assert j["calls"] == sum(j["functions"].values())
        counts = list(j["functions"].values())
        assert counts == sorted(counts, reverse=True)
        for fn, f in jc["functions"].items():      # the copy functions are counted in the census
            assert j["functions"][fn] >= f["calls"]
    if "nio_copy" in cats:
        n = cats["nio_copy"]
        assert n["calls"] <= n["nio_native_calls"]   # each NIO syscall follows a libnio native
        assert n["confirmed_calls"] <= n["unsafe_copy_calls"]


def test_blocking_java17_facts():
    s = recording("blocking-java17").rebuild()
    cats = s["categories"]
    gbar = cats["jni_copy"]["functions"]["GetByteArrayRegion"]
    assert gbar["calls"] >= 100_000
    assert gbar["bytes"] >= 1_000_000              # 100,000 writes of 10 bytes
    assert cats["jni_copy"]["bytes"] >= 1_000_000
    assert cats["io_syscall"]["syscalls"]["write"]["calls"] >= 100_000
    assert cats["io_syscall"]["syscalls"]["write"]["bytes"] >= 1_000_000
    assert s["paths"]["jni"]["bytes"] >= 1_000_000
    assert s["paths"]["jni"]["calls"] >= 100_000
    assert s["paths"]["nio"] == {"calls": 0, "bytes": 0}
    assert "jni_call" not in cats                  # io layer only
    # FileOutputStream writes are JNI copies, which dominate the overhead (raw: the fixture
    # has no probe calibration, so its corrected times are unknown)
    assert cats["jni_copy"]["time_ns"] is None
    assert cats["jni_copy"]["time_raw_ns"] > cats["kernel_copy"]["time_ns"]
    assert s["by_pid"]["6841"]["exec"] == "/usr/bin/java"
    assert s["by_pid"]["6841"]["jvm"] == "/usr/lib/jvm/java-17-openjdk-amd64"


def test_socket_census_facts():
    s = recording("socket-census").rebuild()
    cats = s["categories"]
    writes = cats["io_syscall"]["syscalls"]["write"]["calls"]
    assert writes >= 50_000
    # java.net.Socket copies through NIO's temporary direct buffer, not through JNI
    assert cats["jni_copy"]["calls"] < 0.01 * writes
    assert cats["jni_copy"]["functions"]["GetByteArrayRegion"]["calls"] < 100
    assert s["paths"]["nio"]["bytes"] >= 500_000
    assert s["paths"]["nio"]["calls"] >= 50_000
    assert s["paths"]["jni"]["bytes"] < 0.05 * s["paths"]["nio"]["bytes"]
    n = cats["nio_copy"]
    model = s["constants"]["nio_heap_to_direct"]["/usr/lib/jvm/java-17-openjdk-amd64"]
    assert n["time_ns"] == pytest.approx(n["calls"] * model["ns_per_call"]
                                         + n["bytes"] * model["ns_per_byte"])
    assert n["confirmed_calls"] > 0
    assert cats["jni_call"]["calls"] > cats["jni_copy"]["calls"]


def test_randomrw_census_facts():
    s = recording("randomrw-census").rebuild()
    cats = s["categories"]
    f = cats["jni_copy"]["functions"]
    assert f["GetByteArrayRegion"]["calls"] + f["SetByteArrayRegion"]["calls"] >= 100_000
    assert f["GetByteArrayRegion"]["calls"] >= 40_000 and f["SetByteArrayRegion"]["calls"] >= 40_000
    sc = cats["io_syscall"]["syscalls"]
    assert sc["read"]["calls"] + sc["write"]["calls"] >= 100_000
    assert s["paths"]["jni"]["calls"] >= 100_000
    assert s["paths"]["nio"]["bytes"] == 0
    j = cats["jni_call"]
    # RandomAccessFile goes through JNI for every op: the census sees the array accesses
    assert j["functions"]["GetByteArrayRegion"] == f["GetByteArrayRegion"]["calls"]
    assert j["calls"] >= 400_000


def test_rebuild_without_costs_keeps_counts_and_drops_estimates(rec):
    s, stored = rec.rebuild(costs={}), rec.summary
    for name, cat in stored["categories"].items():
        assert s["categories"][name]["calls"] == cat["calls"]
        assert s["categories"][name]["bytes"] == cat["bytes"]
    assert s["categories"]["kernel_copy"]["time_ns"] is None
    assert "no calibration available" in s["categories"]["kernel_copy"]["basis"]
    if "nio_copy" in s["categories"]:
        assert s["categories"]["nio_copy"]["time_ns"] is None
    # nothing calibrated: no term of the guaranteed overhead is known, and it says so
    assert s["totals"]["guaranteed_overhead_ns"] is None          # unknown, never 0
    assert s["totals"]["guaranteed_overhead_pct"] is None
    assert any("guaranteed overhead unknown" in w for w in s["warnings"])
    assert "jni_copy" in s["totals"]["guaranteed_overhead_unknown"]
    assert "kernel_copy" in s["totals"]["guaranteed_overhead_unknown"]
    assert s["constants"] == {}


def test_socket_census_without_jvm_home_falls_back_to_memcpy():
    r = recording("socket-census")
    s = r.rebuild(jvms_by_pid={})
    n = s["categories"]["nio_copy"]
    m = r.costs["memcpy"]
    assert n["time_ns"] == pytest.approx(n["calls"] * m["ns_per_call"] + n["bytes"] * m["ns_per_byte"])
    assert n["time_ns"] != pytest.approx(r.summary["categories"]["nio_copy"]["time_ns"])
    assert "memcpy" in n["basis"]
    assert s["by_pid"]["7095"]["jvm"] is None


def test_rebuild_without_addresses_cannot_name_jni_functions():
    s = recording("blocking-java17").rebuild(addresses={})
    fns = s["categories"]["jni_copy"]["functions"]
    assert "GetByteArrayRegion" not in fns
    assert all(k.isdigit() for k in fns)
    assert s["categories"]["jni_copy"]["calls"] == 100234


# ---------------------------------------------------------------- hand-built raw output

JVM = "/jdk/lib/server/libjvm.so"
NIO = "/jdk/lib/libnio.so"
ADDR = {"GetByteArrayRegion": 4096, "GetPrimitiveArrayCritical": 8192, "GetVersion": 12288,
        "FindClass": 16384, "Unsafe_CopyMemory0": 20480}
ADDRESSES = {f"{JVM}:{a}": (s if s.startswith("Unsafe") else "jni_" + s) for s, a in ADDR.items()}
ADDRESSES[f"{NIO}:777"] = "Java_sun_nio_ch_SocketDispatcher_write0"


def U(sym):
    return f"uprobe:{JVM}:{ADDR[sym]}"


def R(sym):
    return f"uretprobe:{JVM}:{ADDR[sym]}"


def TP(sc):
    return f"tracepoint:syscalls:sys_exit_{sc}"


KERNEL = {"kernel_copyin": {"ns_per_byte": 0.5, "ns_per_call": 100.0},
          "kernel_copyout": {"ns_per_byte": 0.25, "ns_per_call": 100.0}}


# small windows (ns per hit) for the hand-built raw output below
PROBES = {"jni_copy_time_window": {"mean_ns": 10.0}, "jni_copy_time_hit": {"mean_ns": 40.0},
          "io_syscall_window": {"mean_ns": 5.0}, "io_syscall_hit": {"mean_ns": 20.0}}


def build(maps, *, costs=None, jvms=None, wall_ns=10_000, status="complete", exit_code=0,
          lost=(), addresses=ADDRESSES, probes=PROBES):
    raw = parse_lines(map_lines(maps, lost=lost))
    return summ.build(raw, wall_ns=wall_ns, status=status, addresses=addresses,
                      costs=KERNEL if costs is None else costs,
                      jvms_by_pid={} if jvms is None else jvms, exit_code=exit_code,
                      probes=probes)


def syscalls(pid, table):
    """{syscall: (calls, bytes, time)} -> @calls/@bytes/@time entries."""
    return ({f"{pid},io_syscall,{TP(s)}": c for s, (c, b, t) in table.items()},
            {f"{pid},io_syscall,{TP(s)}": b for s, (c, b, t) in table.items()},
            {f"{pid},io_syscall,{TP(s)}": t for s, (c, b, t) in table.items()})


def test_kernel_copy_is_bytes_times_per_byte_cost_and_excludes_sendfile():
    c, b, t = syscalls(100, {"write": (3, 3000, 900), "read": (2, 500, 100),
                             "sendfile64": (1, 10_000, 50)})
    s = build({"@calls": c, "@bytes": b, "@time": t})
    sc, kc = s["categories"]["io_syscall"], s["categories"]["kernel_copy"]
    # 900 + 100 + 50 raw, minus 6 hits x 5
    assert (sc["calls"], sc["bytes"], sc["time_ns"]) == (6, 13_500, 1020)
    assert sc["time_raw_ns"] == 1050
    assert sc["method"] == "measured"
    assert kc["copyin_bytes"] == 3000 and kc["copyout_bytes"] == 500
    assert kc["bytes"] == 3500 and kc["calls"] == 5
    assert kc["time_ns"] == pytest.approx(3000 * 0.5 + 500 * 0.25)
    assert kc["method"] == "estimated"
    assert s["totals"]["guaranteed_overhead_ns"] == pytest.approx(1625.0)   # syscall time excluded
    assert s["totals"]["guaranteed_overhead_pct"] == pytest.approx(16.25)


@pytest.mark.parametrize("sc,direction", [
    ("write", "in"), ("pwrite64", "in"), ("writev", "in"), ("sendto", "in"), ("sendmsg", "in"),
    ("read", "out"), ("pread64", "out"), ("readv", "out"), ("recvfrom", "out"),
    ("recvmsg", "out"), ("sendfile64", None)])
def test_kernel_copy_direction_of_each_syscall(sc, direction):
    c, b, t = syscalls(1, {sc: (4, 1000, 10)})
    kc = build({"@calls": c, "@bytes": b, "@time": t})["categories"]["kernel_copy"]
    assert kc["copyin_bytes"] == (1000 if direction == "in" else 0)
    assert kc["copyout_bytes"] == (1000 if direction == "out" else 0)
    assert kc["calls"] == (0 if direction is None else 4)
    assert kc["time_ns"] == pytest.approx({"in": 500.0, "out": 250.0, None: 0.0}[direction])


@pytest.mark.parametrize("costs", [{}, {"kernel_copyin": KERNEL["kernel_copyin"]}])
def test_kernel_copy_without_calibration_has_no_time(costs):
    c, b, t = syscalls(1, {"write": (1, 10, 5)})
    s = build({"@calls": c, "@bytes": b, "@time": t}, costs=costs)
    kc = s["categories"]["kernel_copy"]
    assert kc["time_ns"] is None and kc["bytes"] == 10
    assert kc["basis"].endswith("no calibration available")
    assert s["totals"]["guaranteed_overhead_ns"] is None          # unknown, never 0
    assert s["totals"]["guaranteed_overhead_pct"] is None
    assert any("guaranteed overhead unknown" in w for w in s["warnings"])


NIO_MAPS = {"@calls": {f"100,nio_native,uprobe:{NIO}:777": 12,
                       f"100,unsafe_copy_out,{U('Unsafe_CopyMemory0')}": 3},
            "@bytes": {f"100,unsafe_copy_out,{U('Unsafe_CopyMemory0')}": 300},
            "@path_calls": {"100,nio,any": 10}, "@path_bytes": {"100,nio,any": 4000},
            "@nio_confirmed": {"100": 2}}
NIO_MODEL = {"ns_per_call": 5.0, "ns_per_byte": 0.01}
MEMCPY = {"ns_per_call": 0.0, "ns_per_byte": 0.03}


def test_nio_copy_uses_the_jdks_model():
    s = build(NIO_MAPS, costs={"nio_heap_to_direct": {"/jdk": NIO_MODEL}, "memcpy": MEMCPY},
              jvms={"100": "/jdk"})
    n = s["categories"]["nio_copy"]
    assert (n["calls"], n["bytes"]) == (10, 4000)
    assert n["time_ns"] == pytest.approx(10 * 5.0 + 4000 * 0.01)
    assert n["nio_native_calls"] == 12 and n["confirmed_calls"] == 2
    assert n["unsafe_copy_calls"] == 3 and n["unsafe_copy_bytes"] == 300
    assert "this JDK" in n["basis"]
    assert s["paths"]["nio"] == {"calls": 10, "bytes": 4000}
    assert s["totals"]["guaranteed_overhead_ns"] == pytest.approx(90.0)


@pytest.mark.parametrize("jvms", [{"100": "/another-jdk"}, {}])
def test_nio_copy_falls_back_to_memcpy_when_the_jdk_has_no_model(jvms):
    s = build(NIO_MAPS, costs={"nio_heap_to_direct": {"/jdk": NIO_MODEL}, "memcpy": MEMCPY},
              jvms=jvms)
    n = s["categories"]["nio_copy"]
    assert n["time_ns"] == pytest.approx(4000 * 0.03)
    assert "memcpy" in n["basis"]


def test_nio_copy_memcpy_model_without_ns_per_call():
    s = build(NIO_MAPS, costs={"memcpy": {"ns_per_byte": 0.5}}, jvms={"100": "/jdk"})
    assert s["categories"]["nio_copy"]["time_ns"] == pytest.approx(2000.0)


@pytest.mark.parametrize("costs", [{}, {"nio_heap_to_direct": {"/other": NIO_MODEL}}])
def test_nio_copy_without_any_cost_model_has_no_time(costs):
    s = build(NIO_MAPS, costs=costs, jvms={"100": "/jdk"})
    n = s["categories"]["nio_copy"]
    assert n["time_ns"] is None and n["bytes"] == 4000
    assert s["totals"]["guaranteed_overhead_ns"] is None          # unknown, never 0
    assert s["totals"]["guaranteed_overhead_pct"] is None
    assert any("guaranteed overhead unknown" in w for w in s["warnings"])


def test_no_nio_copy_category_without_nio_activity():
    c, b, t = syscalls(5, {"write": (1, 10, 5)})
    assert "nio_copy" not in build({"@calls": c, "@bytes": b, "@time": t})["categories"]


JNI_MAPS = {
    "@calls": {f"7,jni_copy,{U('GetByteArrayRegion')}": 5,
               f"7,jni_copy,{U('GetPrimitiveArrayCritical')}": 2,
               f"7,jni_call,{U('GetVersion')}": 3, f"7,jni_call,{U('FindClass')}": 20},
    "@bytes": {f"7,jni_copy,{U('GetByteArrayRegion')}": 50},
    "@time": {f"7,jni_copy,{R('GetByteArrayRegion')}": 500,
              f"7,jni_copy,{R('GetPrimitiveArrayCritical')}": 30},
}


def test_jni_copy_and_census():
    s = build(JNI_MAPS, costs={})
    jc = s["categories"]["jni_copy"]
    # 500 - 5 x 10 + 30 - 2 x 10
    assert (jc["calls"], jc["bytes"], jc["time_ns"]) == (7, 50, 460)
    assert jc["calls_without_bytes"] == 2           # Critical does not say how much it copies
    assert {k: {f: v[f] for f in ("calls", "bytes", "time_ns")}
            for k, v in jc["functions"].items()} == {"GetByteArrayRegion": {"calls": 5, "bytes": 50, "time_ns": 450},
                               "GetPrimitiveArrayCritical": {"calls": 2, "bytes": 0, "time_ns": 10}}
    j = s["categories"]["jni_call"]
    assert j["calls"] == 30 and j["copying_calls"] == 7
    assert j["copying_pct"] == pytest.approx(100 * 7 / 30)
    assert list(j["functions"].items()) == [("FindClass", 20), ("GetByteArrayRegion", 5),
                                            ("GetVersion", 3), ("GetPrimitiveArrayCritical", 2)]
    assert s["totals"]["guaranteed_overhead_ns"] == 460
    assert list(s["categories"]) == ["jni_copy", "jni_call"]   # catalogue order


def test_guaranteed_overhead_is_the_sum_of_the_copy_categories():
    maps = copy.deepcopy(JNI_MAPS)
    for k, v in NIO_MAPS.items():
        maps.setdefault(k, {}).update({key.replace("100,", "7,", 1): x for key, x in v.items()})
    c, b, t = syscalls(7, {"write": (10, 4000, 99_999), "read": (1, 100, 7)})
    maps["@calls"].update(c)
    maps["@bytes"].update(b)
    maps["@time"].update(t)
    costs = dict(KERNEL, nio_heap_to_direct={"/jdk": NIO_MODEL})
    s = build(maps, costs=costs, jvms={"7": "/jdk"}, wall_ns=1_000_000)
    cats = s["categories"]
    expected = 460 + (10 * 5.0 + 4000 * 0.01) + (4000 * 0.5 + 100 * 0.25)
    assert cats["jni_copy"]["time_ns"] + cats["nio_copy"]["time_ns"] \
        + cats["kernel_copy"]["time_ns"] == pytest.approx(expected)
    assert s["totals"]["guaranteed_overhead_ns"] == pytest.approx(expected)
    assert s["totals"]["guaranteed_overhead_pct"] == pytest.approx(100 * expected / 1_000_000)
    assert s["totals"]["guaranteed_overhead_categories"] == ["jni_copy", "nio_copy", "kernel_copy"]
    assert list(cats) == ["jni_copy", "nio_copy", "io_syscall", "kernel_copy", "jni_call"]
    assert s["constants"] == costs


def test_totals_over_processes():
    maps = {"@calls": {f"1,jni_copy,{U('GetByteArrayRegion')}": 1, f"1,jni_call,{U('GetVersion')}": 1,
                       f"2,jni_copy,{U('GetByteArrayRegion')}": 1, f"2,jni_call,{U('GetVersion')}": 3,
                       f"1,io_syscall,{TP('write')}": 2, f"2,io_syscall,{TP('write')}": 5},
            "@bytes": {f"1,jni_copy,{U('GetByteArrayRegion')}": 10,
                       f"2,jni_copy,{U('GetByteArrayRegion')}": 20,
                       f"1,io_syscall,{TP('write')}": 100, f"2,io_syscall,{TP('write')}": 1000},
            "@path_bytes": {"1,jni,out": 30, "2,jni,out": 300, "2,nio,any": 200},
            "@path_calls": {"1,jni,out": 1, "2,jni,out": 2, "2,nio,any": 1},
            "@missed": {"1,syscall_no_entry": 2, "2,syscall_no_entry": 3, "2,jni_copy_no_entry": 1},
            "@exec": {"1": "/usr/bin/java", "2": "/usr/bin/java", "3": "/bin/sh"}}
    s = build(maps, costs={}, jvms={"1": "/jdk", "2": "/jdk"})
    assert list(s["by_pid"]) == ["1", "2", "3"]
    assert s["totals"]["processes"] == 3
    assert s["by_pid"]["3"] == {"exec": "/bin/sh", "jvm": None, "categories": {},
                                "guaranteed_by_resource": {},
                                "paths": {"jni": {"calls": 0, "bytes": 0},
                                          "nio": {"calls": 0, "bytes": 0}, "other": {"bytes": 0}}}
    j1, j2 = (s["by_pid"][p]["categories"]["jni_call"] for p in ("1", "2"))
    assert j1["copying_pct"] == pytest.approx(50.0) and j2["copying_pct"] == pytest.approx(25.0)
    j = s["categories"]["jni_call"]
    assert (j["calls"], j["copying_calls"]) == (6, 2)
    assert j["copying_pct"] == pytest.approx(100 * 2 / 6)       # recomputed, not summed
    assert j["functions"] == {"GetVersion": 4, "GetByteArrayRegion": 2}
    jc = s["categories"]["jni_copy"]
    assert {f: jc["functions"]["GetByteArrayRegion"][f] for f in ("calls", "bytes", "time_ns")} \
        == {"calls": 2, "bytes": 30, "time_ns": 0}
    # per-process figures are left alone by the totals
    assert s["by_pid"]["1"]["categories"]["jni_copy"]["functions"]["GetByteArrayRegion"]["calls"] == 1
    assert s["categories"]["io_syscall"]["calls"] == 7
    assert {f: s["categories"]["io_syscall"]["syscalls"]["write"][f]
            for f in ("calls", "bytes", "time_ns")} == {"calls": 7, "bytes": 1100,
                                                                  "time_ns": 0}
    assert s["by_pid"]["1"]["paths"]["other"] == {"bytes": 70}
    assert s["by_pid"]["2"]["paths"]["other"] == {"bytes": 500}
    assert s["paths"] == {"jni": {"calls": 3, "bytes": 330}, "nio": {"calls": 1, "bytes": 200},
                          "other": {"bytes": 570}}
    assert s["totals"]["missed_events"] == {"syscall_no_entry": 5, "jni_copy_no_entry": 1}


def test_pids_are_ordered_numerically():
    s = build({"@exec": {"10": "/a", "9": "/b", "100": "/c"}})
    assert list(s["by_pid"]) == ["9", "10", "100"]


def test_total_time_is_none_only_when_every_process_has_none():
    maps = {k: {} for k in NIO_MAPS}
    for pid in ("1", "2"):
        for k, v in NIO_MAPS.items():
            maps[k].update({key.replace("100", pid, 1): x for key, x in v.items()})
    costs = {"nio_heap_to_direct": {"/jdk": NIO_MODEL}}
    s = build(maps, costs=costs, jvms={"1": "/unknown", "2": "/jdk"})
    assert s["by_pid"]["1"]["categories"]["nio_copy"]["time_ns"] is None
    assert s["categories"]["nio_copy"]["time_ns"] == pytest.approx(90.0)   # pid 2's only
    # the partial sum says whose time it lacks
    assert s["categories"]["nio_copy"]["time_unknown_pids"] == ["1"]
    assert any(w.startswith("nio_copy: time unknown for process(es) 1") for w in s["warnings"])
    assert s["categories"]["nio_copy"]["bytes"] == 8000
    s = build(maps, costs=costs, jvms={"1": "/jdk", "2": "/unknown"})   # the other order
    assert s["by_pid"]["2"]["categories"]["nio_copy"]["time_ns"] is None
    assert s["categories"]["nio_copy"]["time_ns"] == pytest.approx(90.0)
    s = build(maps, costs=costs, jvms={"2": "/unknown"})
    assert s["categories"]["nio_copy"]["time_ns"] is None


def test_other_path_is_never_negative():
    # the read path is attributed by the Set<T>ArrayRegion after a read: it may exceed what the
    # syscall tracepoints saw (a read begun before tracing started)
    c, b, t = syscalls(4, {"read": (1, 100, 5)})
    s = build({"@calls": c, "@bytes": b, "@time": t, "@path_bytes": {"4,jni,in": 500},
               "@path_calls": {"4,jni,in": 1}})
    # 100 bytes read, 500 attributed to the JNI path: other is 0, flagged, the excess kept
    assert s["paths"]["other"] == {"bytes": 0, "floored": True,
                                   "paths_exceed_syscall_bytes": 400}
    assert s["paths"]["jni"] == {"calls": 1, "bytes": 500}


def test_status_exit_code_wall_and_lost_events_pass_through():
    s = build({"@exec": {"1": "/bin/false"}}, status="command_failed", exit_code=3, wall_ns=0,
              lost=(4, 5))
    assert s["status"] == "command_failed" and s["exit_code"] == 3
    assert s["totals"]["wall_ns"] == 0
    assert s["totals"]["guaranteed_overhead_pct"] is None
    assert s["totals"]["lost_events"] == 9


def test_empty_raw_gives_an_empty_summary():
    s = summ.build(Records(), wall_ns=5, status="failed", addresses={}, costs={}, jvms_by_pid={})
    assert s["schema"] == "jvmos.summary/1" and s["status"] == "failed"
    assert s["exit_code"] is None
    assert s["categories"] == {} and s["by_pid"] == {}
    assert s["totals"]["processes"] == 0
    assert s["totals"]["guaranteed_overhead_ns"] == 0     # nothing was measured: no term
    assert s["totals"]["guaranteed_overhead_categories"] == []
    assert s["totals"]["missed_events"] == {}
    assert s["paths"] == {"jni": {"calls": 0, "bytes": 0}, "nio": {"calls": 0, "bytes": 0},
                          "other": {"bytes": 0}}
