"""jvmos agent's parts on canned data: its options and config file, the java command lines
it reads, discovery's bookkeeping (on a fake /proc), an interval's figures and counters, the
cost limit's choices and back-off, and the metrics it serves."""
import json
import os
import types
import zipfile
from pathlib import Path

import pytest
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.exposition import generate_latest

from jvmos import JvmosError, agent, agentconfig, discovery
from jvmos import agentmetrics


def proc(pid=4242, user="app", uid=1000, main="com.example.Main", jar="", jar_path="",
         version="17.0.9", home="/usr/lib/jvm/java-17"):
    jvm = types.SimpleNamespace(version=version, home=Path(home),
                                as_dict=lambda: {"home": home, "version": version})
    return discovery.JvmProc(pid=pid, start_ticks=100, start_time=1.7e9, uid=uid, user=user,
                         cmdline=["java", main], main_class=main, jar=jar, jar_path=jar_path,
                         jvm=jvm)


# ---------------------------------------------------------------------------- options

def test_match_conditions_all_hold_and_several_are_alternatives():
    m = agentconfig.parse_match("user=app,main=com.example.*")
    assert m.matches(proc()) and not m.matches(proc(user="root", uid=0))
    assert not m.matches(proc(main="org.other.Main"))
    assert agentconfig.parse_match("user=1000").matches(proc())          # the uid as a number
    j = proc(main="Shop", jar="lib/shop.jar", jar_path="/proc/4242/cwd/lib/shop.jar")
    assert agentconfig.parse_match("jar=shop.jar").matches(j)            # its name
    assert agentconfig.parse_match("jar=lib/*.jar").matches(j)           # as given
    assert not agentconfig.parse_match("jar=shop.jar").matches(proc())   # no jar at all
    cfg = agentconfig.Config(match=(agentconfig.parse_match("user=root"), agentconfig.parse_match("main=Shop")))
    assert cfg.selects(j) and not cfg.selects(proc())
    assert agentconfig.Config().selects(proc())                          # no --match: every JVM


@pytest.mark.parametrize("text, needle", [
    ("class=Foo", "KEY=PATTERN"), ("user", "KEY=PATTERN"), ("main=", "needs a pattern"),
    ("user=app,,main=X", "KEY=PATTERN")])
def test_bad_match(text, needle):
    with pytest.raises(JvmosError, match=needle):
        agentconfig.parse_match(text)


@pytest.mark.parametrize("text, pct", [("2%", 2.0), ("2", 2.0), (2.5, 2.5), (" 0.5% ", 0.5),
                                       ("none", None), ("OFF", None)])
def test_max_overhead(text, pct):
    assert agentconfig.parse_max_overhead(text) == pct


@pytest.mark.parametrize("text", ["0", "0%", "100", "150%", "-1", "x", "2x", True, "nan"])
def test_bad_max_overhead(text):
    with pytest.raises(JvmosError, match="--max-overhead"):
        agentconfig.parse_max_overhead(text)


def test_listen_and_layers():
    assert agentconfig.parse_listen("127.0.0.1:9377") == ("127.0.0.1", 9377)
    assert agentconfig.parse_listen("[::1]:9100") == ("::1", 9100)
    for bad in ("9377", ":9377", "host:0", "host:70000", "host:port"):
        with pytest.raises(JvmosError, match="--listen"):
            agentconfig.parse_listen(bad)
    assert agentconfig.parse_layers("io, mem,io") == ("io", "mem")
    assert agentconfig.parse_layers(["threads"]) == ("threads",)
    with pytest.raises(JvmosError, match="unknown layer 'disk'"):
        agentconfig.parse_layers("io,disk")
    with pytest.raises(JvmosError, match="at least one layer"):
        agentconfig.parse_layers(" , ")


def args(**kw):
    base = {k: None for k in agentconfig.CONFIG_KEYS}
    base["config"] = None
    base.update(kw)
    return types.SimpleNamespace(**base)


def test_the_command_line_overrides_the_file(tmp_path):
    f = tmp_path / "agent.toml"
    f.write_text('layers = ["io", "mem"]\nmatch = "user=app"\nmax_overhead = "5%"\n'
                 'interval = 2\nlisten = "127.0.0.1:9100"\n')
    cfg = agentconfig.load_config(args(config=str(f), max_overhead="1%", match=["main=X"]))
    assert cfg.layers == ("io", "mem") and cfg.interval_s == 2.0
    assert cfg.max_overhead_pct == 1.0                      # the option, not the file
    assert [m.text for m in cfg.match] == ["main=X"]
    assert cfg.listen == ("127.0.0.1", 9100) and cfg.config_file == f
    d = agentconfig.load_config(args())                           # the defaults
    assert (d.layers, d.max_overhead_pct, d.interval_s, d.scan_s, d.listen) == (
        ("io",), 2.0, 5.0, 1.0, ("127.0.0.1", 9377))
    assert "every JVM" in d.describe() and "2% of each JVM's CPU" in d.describe()


def test_bad_config_files(tmp_path):
    f = tmp_path / "agent.toml"
    f.write_text("layers = [io\n")
    with pytest.raises(JvmosError, match="not valid TOML"):
        agentconfig.load_config(args(config=str(f)))
    f.write_text("interval = 1\nfrobnicate = 2\n")
    with pytest.raises(JvmosError, match=r"unknown key\(s\) frobnicate"):
        agentconfig.load_config(args(config=str(f)))
    f.write_text("interval = -3\n")
    with pytest.raises(JvmosError, match="--interval -3"):
        agentconfig.load_config(args(config=str(f)))
    f.write_text("match = 3\n")
    with pytest.raises(JvmosError, match="match: give a list"):
        agentconfig.load_config(args(config=str(f)))
    with pytest.raises(JvmosError, match="--config"):
        agentconfig.load_config(args(config=str(tmp_path / "missing.toml")))


# ---------------------------------------------------------------------------- command lines

@pytest.mark.parametrize("argv, want", [
    (["-Xmx1g", "-cp", "a.jar:b", "com.x.Main", "arg"], ("com.x.Main", "")),
    (["-jar", "app.jar", "-cp", "x"], ("", "app.jar")),
    (["--class-path", "lib/*", "-Dk=v", "-XX:+UseG1GC", "Main"], ("Main", "")),
    (["-m", "mod/com.x.Main"], ("mod/com.x.Main", "")),
    (["--module=mod/com.x.Main"], ("mod/com.x.Main", "")),
    (["--add-opens", "java.base/java.lang=ALL-UNNAMED", "@opts", "-ea", "Main"], ("Main", "")),
    (["-version"], ("", "")),
    ([], ("", "")),
])
def test_java_main(argv, want):
    assert discovery.java_main(argv) == want


def test_jar_main_class_reads_the_manifest(tmp_path):
    jar = tmp_path / "app.jar"
    with zipfile.ZipFile(jar, "w") as z:
        # a manifest line wraps at 72 bytes: the continuation starts with a space
        z.writestr("META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nMain-Class: com.exampl\r\n"
                                           " e.shop.ServerMain\r\n\r\n")
    main, path = discovery.jar_main_class(os.getpid(), str(jar))
    assert main == "com.example.shop.ServerMain" and path.endswith("app.jar")
    assert discovery.jar_main_class(os.getpid(), str(tmp_path / "none.jar"))[0] == ""


def test_home_seen_without_proc_root():
    p = proc(pid=77, home="/proc/77/root/usr/lib/jvm/java-21")
    assert p.home_seen == "/usr/lib/jvm/java-21"
    assert proc(home="/opt/jdk").home_seen == "/opt/jdk"
    assert p.labels() == {"pid": "77", "main_class": "com.example.Main",
                          "jdk_version": "17.0.9"}
    assert proc(main="").labels()["main_class"] == "unknown"


# ---------------------------------------------------------------------------- discovery

class FakeProc:
    """A /proc for Discovery: pid -> (state, start ticks, exe, cmdline, is a JVM)."""

    def __init__(self, monkeypatch):
        self.procs = {}
        self.identified = []
        monkeypatch.setattr(discovery.os, "listdir", lambda d: [str(p) for p in self.procs]
                            if d == "/proc" else os.listdir(d))
        self.stats = []

        def stat(pid):
            self.stats.append(pid)
            return ((self.procs[pid][0], 2 if self.procs[pid][2] is None else 1,
                     self.procs[pid][1]) if pid in self.procs else None)
        monkeypatch.setattr(discovery, "proc_stat", stat)

        def readlink(path):
            pid = int(path.split("/")[2])
            if pid not in self.procs or self.procs[pid][2] is None:
                raise FileNotFoundError(path)
            return self.procs[pid][2]
        monkeypatch.setattr(discovery.os, "readlink", readlink)
        monkeypatch.setattr(discovery, "cmdline_of", lambda pid: list(self.procs[pid][3]))
        monkeypatch.setattr(discovery, "uptime_s", lambda: 10_000.0)

        def identify(pid, start, boot):
            self.identified.append(pid)
            st, start, exe, argv, jvm = self.procs[pid]
            if not jvm:
                return None
            p = proc(pid=pid, main=argv[-1])
            p.start_ticks, p.cmdline = start, list(argv)
            return p
        monkeypatch.setattr(discovery, "identify", identify)


def test_discovery_keeps_state_for_live_processes_only(monkeypatch):
    fake = FakeProc(monkeypatch)
    hz = os.sysconf("SC_CLK_TCK")
    old = 100 * hz                              # started 9,900 s before "now": not young
    fake.procs = {1: ("S", old, "/sbin/init", ["init"], False),
                  2: ("S", old, None, [], False),                        # a kernel thread
                  10: ("S", old, "/usr/bin/java", ["java", "A"], True)}
    d = discovery.Discovery()
    found = d.scan()
    assert [p.pid for p in found.values()] == [10]
    assert sorted(fake.identified) == [1, 10]
    fake.identified.clear()
    again = d.scan()
    # an old process that is not a JVM is not looked at every scan, a JVM keeps its object
    assert fake.identified == [] and again[(10, old)] is found[(10, old)]
    # nor is its stat read again: only a new pid or a new executable costs one
    assert sorted(fake.stats) == [1, 2, 10]
    # the JVM exec's another JVM (same pid and start, new command line): a new JvmProc
    fake.procs[10] = ("S", old, "/usr/bin/java", ["java", "B"], True)
    third = d.scan()
    assert third[(10, old)] is not found[(10, old)] and third[(10, old)].main_class == "B"
    # a new executable makes an old non-JVM worth a look at once
    fake.procs[1] = ("S", old, "/usr/bin/other", ["other"], False)
    fake.identified.clear()
    d.scan()
    assert fake.identified == [1]
    # a zombie (its executable link is gone) is no JVM any more; an exited pid leaves the state
    fake.procs[10] = ("Z", old, None, ["java", "B"], True)
    del fake.procs[1]
    assert d.scan() == {} and set(d.seen) == {2, 10}
    del fake.procs[10]
    assert d.scan() == {} and set(d.seen) == {2}
    # a kernel thread (no executable, child of kthreadd) is not looked at again
    assert d.seen[2].kernel
    # a young process is looked at every scan until it maps libjvm.so
    young = int(9_995 * hz)
    fake.procs[20] = ("S", young, "/usr/bin/java", ["java", "C"], False)
    fake.identified.clear()
    d.scan()
    d.scan()
    assert fake.identified == [20, 20]
    fake.procs[20] = ("S", young, "/usr/bin/java", ["java", "C"], True)
    assert [p.pid for p in d.scan().values()] == [20]


def test_discovery_survives_an_unreadable_jvm(monkeypatch):
    fake = FakeProc(monkeypatch)
    fake.procs = {30: ("S", 1, "/opt/jdk/bin/java", ["java", "X"], True)}

    def denied(pid, start, boot):
        raise PermissionError(13, "Permission denied", "/proc/30/root/opt/jdk/release")
    monkeypatch.setattr(discovery, "identify", denied)
    said = []
    d = discovery.Discovery(log=said.append)
    assert d.scan() == {} and d.scan() == {}
    assert len(said) == 1 and "cannot be read" in said[0] and "Permission denied" in said[0]


# ---------------------------------------------------------------------------- intervals

PROBES = {"jni_copy_count_hit": {"mean_ns": 800.0, "ci95_ns": [780.0, 820.0]},
          "symbol_pair_time_hit": {"mean_ns": 1500.0, "ci95_ns": [1400.0, 1600.0]},
          "malloc_mem_count_hit": {"mean_ns": 700.0, "ci95_ns": [650.0, 750.0]}}


def view(t, cpu, jni_calls, jni_bytes, jni_ns, kc_ns, hits, malloc_ns=0.0, lost=0):
    cats = {"jni_copy": {"calls": jni_calls, "bytes": jni_bytes, "time_ns": jni_ns,
                         "method": "estimated"},
            "kernel_copy": {"calls": jni_calls, "bytes": jni_bytes, "time_ns": kc_ns,
                            "method": "estimated"},
            "io_syscall": {"calls": jni_calls, "bytes": jni_bytes, "time_raw_ns": 3 * jni_ns,
                           "correction_ns": jni_ns, "time_ns": 2 * jni_ns,
                           "corrected": True, "method": "measured"}}
    if malloc_ns is not None:
        cats["malloc"] = {"calls": 5, "bytes": 500, "time_ns": malloc_ns, "method": "measured"}
    return {"categories": cats, "hits": hits, "cpu_ns": cpu, "t": t, "lost": lost}


def test_an_interval_adds_differences_to_the_counters():
    a = view(1.0, 1_000_000_000, 100, 1000, 5_000.0, 2_000.0,
             {"io:jni_copy": 100, "io:syscall_upair": 100})
    b = view(2.0, 1_500_000_000, 300, 3000, 15_000.0, 6_000.0,
             {"io:jni_copy": 300, "io:syscall_upair": 300, "mem:malloc_pair": 10},
             malloc_ns=700.0, lost=2)
    f = agent.interval_figures(a, b, PROBES)
    assert f["cpu_ns"] == 500_000_000 and f["interval_s"] == 1.0 and f["lost"] == 2
    assert f["probe_by_layer_ns"] == {"io": 200 * 800.0 + 200 * 1500.0, "mem": 10 * 700.0}
    assert f["probe_complete"] and f["probe_ns"] == 200 * 2300.0 + 7000.0
    # io's guaranteed overhead: jni_copy + kernel_copy (not io_syscall)
    assert f["guaranteed_by_resource"]["io"] == 10_000.0 + 4_000.0
    T = agent.Totals()
    last = agent.add_interval(T, f)
    assert T.calls["jni_copy"] == 200 and T.bytes["jni_copy"] == 2000
    assert T.time_ns[("jni_copy", "estimated")] == 10_000.0
    assert T.time_ns[("io_syscall", "measured")] == 20_000.0
    assert T.guaranteed_ns["io"] == 14_000.0 and T.guaranteed_ns["mem"] == 700.0
    assert T.cpu_ns == 500_000_000 and T.intervals == 1 and T.lost_events == 2
    assert T.counted_ns == pytest.approx(1e9)        # the interval's length, 1.0 to 2.0 s
    assert last["guaranteed_ratio"] == pytest.approx(14_700.0 / 500_000_000)
    assert last["probe_ratio"] == pytest.approx(f["probe_ns"] / 500_000_000)
    agent.add_interval(T, agent.interval_figures(b, b, PROBES))   # nothing happened
    assert T.calls["jni_copy"] == 200 and T.intervals == 2


def test_an_unknown_time_or_probe_cost_is_kept_apart():
    a = view(1.0, 10, 0, 0, 0.0, 0.0, {})
    b = view(2.0, 20, 10, 100, 50.0, 20.0, {"io:jni_copy": 10, "threads:futex_pair": 4},
             malloc_ns=None)
    b["categories"]["malloc"] = {"calls": 5, "bytes": 500, "time_ns": None,
                                 "method": "measured"}
    f = agent.interval_figures(a, b, PROBES)
    assert f["guaranteed_unknown_resources"] == ["mem"] and f["guaranteed_ns"] is None
    assert not f["probe_complete"] and f["probe_ns"] == 8000.0   # the known part only
    T = agent.Totals()
    last = agent.add_interval(T, f)
    assert "mem" not in T.guaranteed_ns and T.guaranteed_unknown["mem"] == 1
    assert T.guaranteed_ns["io"] == 70.0 and T.probe_unknown_intervals == 1
    assert last["guaranteed_ratio"] is None


# ---------------------------------------------------------------------------- the limit

def test_sheds_follow_the_order_skip_free_layers_and_stop_under_the_limit():
    cpu = 1_000_000_000.0                      # 1 s of CPU: 2% is 20 ms
    by = {"io": 30e6, "mem": 5e6, "threads": 1e6, "common": 0.1e6}
    # mem first (though io costs more), then io; with io gone mem's 5 ms fits again (6.1 +
    # 5 ms is under 20 ms), so only io is shed; threads stays
    assert agent.choose_sheds(by, cpu, ("io", "mem", "threads"), 2.0) == (["io"],
                                                                          pytest.approx(6.1e6))
    # both are shed when the earlier one does not fit back
    big = {"io": 30e6, "mem": 25e6, "common": 0.1e6}
    assert agent.choose_sheds(big, cpu, ("io", "mem"), 2.0)[0] == ["mem", "io"]
    drop, left = agent.choose_sheds(by, cpu, ("io", "threads"), 2.0)
    assert drop == ["io"] and left == pytest.approx(6.1e6)
    assert agent.choose_sheds({"io": 10e6}, cpu, ("io",), 2.0) == ([], 10e6)
    # a layer whose probes cost nothing is not shed; the common probes never are
    assert agent.choose_sheds({"jni": 0.0, "io": 25e6}, cpu, ("jni", "io"), 2.0)[0] == ["io"]
    assert agent.choose_sheds({"common": 50e6}, cpu, ("io",), 2.0)[0] == []


def test_back_off_doubles_only_when_shed_right_after_its_return():
    assert agent.next_backoff(None, False, 60.0) == 60.0
    assert agent.next_backoff(60.0, True, 60.0) == 120.0
    assert agent.next_backoff(600.0, True, 60.0) == agent.BACKOFF_MAX_S
    assert agent.next_backoff(120.0, False, 60.0) == 60.0
    assert agent.next_backoff(2000.0, True, 2000.0) == 2000.0     # a base above the cap


def make_agent(tmp_path, **cfg):
    said = []
    a = agent.Agent(agentconfig.Config(**cfg), {"engine_probes": PROBES}, tmp_path / "p.json",
                    tmp_path, log=said.append)
    return a, said


def test_judge_sheds_logs_and_puts_back(tmp_path, monkeypatch):
    a, said = make_agent(tmp_path, max_overhead_pct=2.0, shed_backoff_s=10.0,
                         interval_s=1.0, layers=("threads", "mem"))
    reconfigured = []
    monkeypatch.setattr(a, "reconfigure", lambda w: reconfigured.append(w.attached_layers()))
    now = [1000.0]
    monkeypatch.setattr(agent.time, "monotonic", lambda: now[0])
    w = agent.Watch(proc(), ("threads", "mem"))
    w.layers = ("threads", "mem")
    w.last_cpu, w.last_by_layer = 1e9, {"threads": 50e6, "mem": 25e6, "io": 900e6}
    w.last["interval_s"] = 1.0
    a.judge(w)     # a windowed layer (io, here 90%) is left to the windows, not shed here
    assert set(w.shed) == {"mem", "threads"} and reconfigured == [()]
    assert w.totals.sheds == {"mem": 1, "threads": 1}
    assert "7.50% of its CPU" in said[-1] and "over --max-overhead 2%: shed mem" in said[-1]
    assert "threads (5.00%, back in 10 s)" in said[-1]
    now[0] += 10.0
    a.restore_due(w)
    assert w.shed == {} and reconfigured[-1] == ("threads", "mem")
    assert w.totals.returns == {"threads": 1, "mem": 1} and "putting back" in said[-1]
    # shed again in its first interval back: twice the back-off
    now[0] += 1.0
    w.layers = ("threads", "mem")
    w.last_by_layer = {"threads": 50e6}
    a.judge(w)
    assert w.shed["threads"].backoff_s == 20.0 and "mem" not in w.shed
    # an interval with too little CPU is not judged; no limit: nothing shed
    w2 = agent.Watch(proc(pid=5), ("io",))
    w2.layers, w2.last_cpu, w2.last_by_layer = ("io",), 1e6, {"io": 9e5}
    a.judge(w2)
    assert w2.shed == {}
    a.cfg.max_overhead_pct = None
    w2.last_cpu = 1e9
    w2.last_by_layer = {"io": 9e8}
    a.judge(w2)
    assert w2.shed == {}


# ---------------------------------------------------------------------------- metrics

def exposed_agent(tmp_path):
    a, _ = make_agent(tmp_path, layers=("io", "mem"), match=(agentconfig.parse_match("user=app"),))
    w = agent.Watch(proc(), ("io", "mem"))
    w.started_wall = 1_800_000_000.0
    a.watches[w.proc.key] = w
    f = agent.interval_figures(
        view(0.0, 0, 0, 0, 0.0, 0.0, {}),
        view(5.0, 2_000_000_000, 1000, 8_192_000, 400_000.0, 100_000.0,
             {"io:jni_copy": 1000, "io:syscall_upair": 1000, "common:task_newtask": 3}),
        dict(PROBES, thread_common_hit={"mean_ns": 500.0, "ci95_ns": [400.0, 600.0]}))
    w.last = agent.add_interval(w.totals, f)
    w.shed["mem"] = agent.Shed(since=0.0, until=60.0, backoff_s=60.0, reason="test")
    w.totals.sheds["mem"] = 1
    monkey_cpu = 1.25
    a.cpu_seconds = lambda: monkey_cpu
    return a


def test_metrics_name_what_they_are(tmp_path):
    a = exposed_agent(tmp_path)
    text = generate_latest(agentmetrics.registry_for(a)).decode()
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    lab = {"pid": "4242", "main_class": "com.example.Main", "jdk_version": "17.0.9"}

    def one(name, **extra):
        got = [s for f in fams.values() for s in f.samples if s.name == name
               and all(s.labels.get(k) == v for k, v in dict(lab, **extra).items())]
        assert len(got) == 1, (name, extra, got)
        return got[0]
    assert one("jvmos_category_calls_total", category="jni_copy").value == 1000
    # the counters cover the one interval, 0 to 5 s
    assert one("jvmos_jvm_counted_seconds_total").value == pytest.approx(5.0)
    assert one("jvmos_category_bytes_total", category="jni_copy").value == 8_192_000
    assert one("jvmos_category_estimated_time_seconds_total", category="jni_copy",
               method="estimated").value == pytest.approx(400e-6)
    assert one("jvmos_category_estimated_time_seconds_total", category="io_syscall",
               method="measured").value == pytest.approx(800e-6)
    assert one("jvmos_guaranteed_overhead_estimated_seconds_total",
               resource="io").value == pytest.approx(500e-6)
    assert one("jvmos_jvm_cpu_seconds_total").value == 2.0
    assert one("jvmos_jvm_cpu_seconds_created").value == 1_800_000_000.0
    assert one("jvmos_guaranteed_overhead_of_cpu_ratio").value == pytest.approx(500e3 / 2e9)
    assert one("jvmos_probe_effect_estimated_seconds_total", layer="io").value == \
        pytest.approx(1000 * 2300e-9)
    assert one("jvmos_probe_effect_estimated_seconds_total", layer="common").value == \
        pytest.approx(3 * 500e-9)
    assert one("jvmos_probes_shed", layer="mem").value == 1
    assert one("jvmos_probes_shed", layer="io").value == 0
    assert one("jvmos_probe_sheds_total", layer="mem").value == 1
    info = one("jvmos_jvm_info")
    assert info.labels["user"] == "app" and info.labels["layers"] == "io,mem"
    assert [s.value for s in fams["jvmos_agent_cpu_seconds"].samples
            if s.name.endswith("_total")] == [1.25]
    ag = [s for f in fams.values() for s in f.samples if s.name == "jvmos_agent_info"][0].labels
    assert ag["match"] == "user=app" and ag["max_overhead"] == "2%" and ag["mode"] == "count"
    # every per-JVM family carries the three labels the issue names
    for f in fams.values():
        for s in f.samples:
            if s.name.startswith(("jvmos_category", "jvmos_guaranteed", "jvmos_probe",
                                  "jvmos_jvm")):
                assert {"pid", "main_class", "jdk_version"} <= set(s.labels), s
    assert "estimated" in fams["jvmos_category_estimated_time_seconds"].documentation
    # a JVM that is gone is gone from the metrics
    a.watches.clear()
    text = generate_latest(agentmetrics.registry_for(a)).decode()
    assert 'pid="4242"' not in text and "jvmos_agent_watched_jvms 0.0" in text


def test_the_endpoint_serves_metrics_at_one_path(tmp_path):
    app = agentmetrics.app_for(agentmetrics.registry_for(exposed_agent(tmp_path)))
    got = {}

    def call(path):
        def start(status, headers):
            got[path] = (status, dict(headers))
        body = b"".join(app({"PATH_INFO": path, "REQUEST_METHOD": "GET", "QUERY_STRING": ""},
                            start))
        return body.decode()
    assert "jvmos_category_calls_total" in call("/metrics")
    assert got["/metrics"][0].startswith("200")
    assert "/metrics" in call("/") and got["/"][0].startswith("200")
    call("/other")
    assert got["/other"][0].startswith("404")


def test_state_dirs_a_killed_agent_left_are_removed(tmp_path, monkeypatch):
    monkeypatch.setattr(agent.tempfile, "gettempdir", lambda: str(tmp_path))
    dead = tmp_path / "jvmos-agent-999999999-abc"          # no such pid
    dead.mkdir()
    (dead / "4242-1.plan.json").write_text("{}")
    (dead / "4242-1.stderr").write_text("")
    alive = tmp_path / f"jvmos-agent-{os.getpid()}-def"     # a live agent's
    alive.mkdir()
    (alive / "77-1.plan.json").write_text("{}")
    other = tmp_path / "jvmos-agent-999999999-xyz"         # holds a file not the agent's
    other.mkdir()
    (other / "notes.txt").write_text("keep")
    d, own = agent.prepare_state_dir(None)
    assert own and d.name.startswith(f"jvmos-agent-{os.getpid()}-") and d.is_dir()
    assert not dead.exists() and (alive / "77-1.plan.json").exists()
    assert (other / "notes.txt").exists()
    given = tmp_path / "state"
    given.mkdir()
    (given / "12-3.stderr").write_text("old")
    (given / "keep.txt").write_text("x")
    assert agent.prepare_state_dir(str(given)) == (given, False)
    assert sorted(p.name for p in given.iterdir()) == ["keep.txt"]


def test_discovery_reads_never_block_and_survive_a_corrupt_jar(tmp_path):
    """A user controls the files the agent reads of their process: a FIFO in a jar's or a
    passwd's place is refused, not opened for ever; a corrupt jar leaves the main class
    unknown instead of raising (zlib.error is neither OSError nor ValueError)."""
    import os
    fifo = tmp_path / "trap"
    os.mkfifo(fifo)
    with pytest.raises(OSError):
        discovery._read(str(fifo))
    jar = tmp_path / "bad.jar"
    import zipfile
    with zipfile.ZipFile(jar, "w", compression=zipfile.ZIP_DEFLATED) as z:
        z.writestr("META-INF/MANIFEST.MF", "Main-Class: a.B\n" * 50)
    raw = bytearray(jar.read_bytes())
    i = raw.index(b"PK\x03\x04") + 30 + len("META-INF/MANIFEST.MF")
    raw[i:i + 8] = b"\xff" * 8                      # the deflated data corrupted
    jar.write_bytes(bytes(raw))
    assert discovery.jar_main_class(os.getpid(), str(jar))[0] == ""
    assert discovery.jar_main_class(os.getpid(), str(fifo))[0] == ""
    # a long /proc read is whole (a command line over several pages)
    assert discovery._read(f"/proc/{os.getpid()}/status").startswith("Name:")


def test_agent_overhead_render_writes_the_notes_again_and_refuses_other_files(tmp_path):
    import shutil
    from pathlib import Path
    from jvmos import JvmosError
    from jvmos.experiments import agent_overhead
    ref = Path(__file__).resolve().parents[2] / "results" / "agent-overhead"
    shutil.copy(ref / "agent-overhead.json", tmp_path)
    assert agent_overhead.render(tmp_path) == 0
    md = (tmp_path / "agent-overhead.md").read_text()
    res = json.loads((tmp_path / "agent-overhead.json").read_text())
    # the table names its n from the pairs kept, the notes how N was chosen; every pair is a
    # row of its own
    n = len(res["pairs"])
    assert f"| {n} |" in md and "a pilot of 4 pairs" in md
    assert md.count("first |") == n
    assert res["headline"]["figure"].startswith("server CPU per message")
    (tmp_path / "agent-overhead.json").write_text('{"experiment": "chat"}')
    with pytest.raises(JvmosError, match="not the result"):
        agent_overhead.render(tmp_path)
    with pytest.raises(JvmosError, match="does not exist"):
        agent_overhead.render(tmp_path / "none")


def test_an_agent_measures_the_probe_costs_it_lacks_before_it_starts(tmp_path, monkeypatch):
    """Issue 32: a platform file without the engine's probe costs of the agent's layers is
    calibrated at the agent's start, as jvmos record does (the layers in count mode, said in
    the log), unless --no-calibrate, which refuses in one line; with --max-overhead none the
    costs are not needed. The measuring itself is jvmos.calibrate.ensure_calibrated's, stood
    in for here (tests/integration runs the real one)."""
    from jvmos import calibrate as cal, enginecost
    path = tmp_path / "platform.json"
    cfg = agentconfig.Config(layers=["io", "threads"])
    asked = []

    def measured(platform, platform_file, jvms, layers, mode, log):
        asked.append((platform_file, list(jvms), layers, mode))
        log("measuring it once")
        return {"engine_probes": {"measured": True}}
    monkeypatch.setattr(cal, "ensure_calibrated", measured)
    monkeypatch.setattr(cal, "validate_platform", lambda p: None)
    monkeypatch.setattr(enginecost, "incomplete", lambda probes, layers: "measured" not in
                        (probes or {}))
    with pytest.raises(JvmosError, match="--no-calibrate"):
        agent.load_platform(path, cfg, calibrate=False)
    assert not asked
    lines = []
    got = agent.load_platform(path, cfg, calibrate=True, log=lines.append)
    assert got == {"engine_probes": {"measured": True}}
    assert asked == [(path, [], ["io", "threads"], "count")] and lines == ["measuring it once"]
    none = agentconfig.Config(layers=["io"], max_overhead_pct=None)
    assert agent.load_platform(path, none, calibrate=False) is None and len(asked) == 1


def test_max_jvms_caps_the_watches_and_every_unwatched_jvm_says_why(tmp_path, monkeypatch):
    """Issue 33 (fleet limits): --max-jvms caps the JVMs watched; a selected JVM left out, or
    one whose engine could not attach, is listed with its reason in jvmos_jvm_unwatched and
    in /status, and leaves the list when it is watched or gone."""
    import json as _json
    a, said = make_agent(tmp_path, max_jvms=2)
    jvms = {p.key: p for p in (proc(pid=1), proc(pid=2), proc(pid=3, main="com.example.Bad"),
                               proc(pid=4))}
    a.discovery = types.SimpleNamespace(scan=lambda: dict(jvms), forget=lambda pid: None)
    monkeypatch.setattr(agent, "_alive", lambda pid: pid in {p.pid for p in jvms.values()})

    def start(w, layers):
        if w.proc.pid == 3:
            raise JvmosError("libjvm.so of pid 3 has no symbol jni_GetByteArrayRegion")
        w.eng, w.layers = types.SimpleNamespace(kill=lambda: None), layers
    monkeypatch.setattr(a, "start_engine", start)
    monkeypatch.setattr(a, "stop_engine", lambda w, account=True: None)
    a.scan()
    x = a.exposed()
    assert sorted(j["proc"].pid for j in x["jvms"]) == [1, 2]
    assert sorted((u["proc"].pid, u["reason"]) for u in x["unwatched"]) == \
        [(3, "max_jvms"), (4, "max_jvms")]
    assert any("--max-jvms 2 reached" in s for s in said)
    # room again once pid 1 is gone: pid 3 is tried and fails (listed as failed, once), and
    # pid 4 takes the place; a watched JVM leaves the list
    del jvms[next(k for k, p in jvms.items() if p.pid == 1)]
    a.scan()
    x = a.exposed()
    why = {u["proc"].pid: (u["reason"], u["detail"]) for u in x["unwatched"]}
    assert sorted(j["proc"].pid for j in x["jvms"]) == [2, 4]
    assert list(why) == [3] and why[3][0] == "attach_failed" \
        and "jni_GetByteArrayRegion" in why[3][1]
    fams = {f.name: f for f in agentmetrics.agent_families(x, a.cfg, 0.0)}
    samples = {(s.labels["pid"], s.labels["reason"]) for s in fams["jvmos_jvm_unwatched"].samples}
    assert ("3", "attach_failed") in samples
    app = agentmetrics.app_for(agentmetrics.registry_for(a), a)
    got = []
    body = b"".join(app({"PATH_INFO": "/status", "REQUEST_METHOD": "GET"},
                        lambda status, headers: got.append(status)))
    st = _json.loads(body)
    assert got == ["200 OK"] and "at most 2" in st["config"]
    assert {u["pid"]: u["reason"] for u in st["unwatched"]}[3] == "attach_failed"
    assert sorted(w["pid"] for w in st["watched"]) == sorted(j["proc"].pid for j in x["jvms"])
    # a SIGHUP lowers the cap: the JVM watched last goes; a failed JVM --match no longer
    # selects leaves the list
    a.watches[next(k for k, p in jvms.items() if p.pid == 4)].started_wall += 10
    a.cfg = agentconfig.Config(max_jvms=1, match=(agentconfig.parse_match("main=com.example.Main"),))
    a.scan()
    x = a.exposed()
    assert [j["proc"].pid for j in x["jvms"]] == [2]
    assert {u["proc"].pid: u["reason"] for u in x["unwatched"]} == {4: "max_jvms"}
    # the cap's value is checked
    with pytest.raises(JvmosError, match="--max-jvms"):
        agentconfig.parse_max_jvms("0")


def test_the_systemd_unit_verifies():
    """deploy/jvmos-agent.service passes systemd-analyze verify, with its ExecStart's program
    stood in by a file at its path's place (the unit names the installed /opt/jvmos path).
    A systemd inside a container needs --privileged, which the reference machine refuses:
    the unit is verified, not run, here."""
    import shutil
    import subprocess
    import tempfile
    tool = shutil.which("systemd-analyze")
    if tool is None:
        pytest.skip("no systemd-analyze on this machine")
    root = Path(__file__).resolve().parents[2]
    unit = (root / "deploy" / "jvmos-agent.service").read_text()
    with tempfile.TemporaryDirectory() as d:
        exe = Path(d) / "jvmos"
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
        (Path(d) / "jvmos-agent.service").write_text(
            unit.replace("/opt/jvmos/.venv/bin/jvmos", str(exe)))
        r = subprocess.run([tool, "verify", str(Path(d) / "jvmos-agent.service")],
                           capture_output=True, text=True)
    # systemd-analyze exits 0 on a line it ignores ("Failed to parse ..., ignoring"): any
    # word from it is a defect of the unit
    assert r.returncode == 0 and not (r.stdout + r.stderr).strip(), r.stdout + r.stderr


def test_counts_in_windows_stay_exact_and_the_extrapolation_is_kept_apart():
    """io on for 0.25 s of a 1 s interval (the engine's on-time), mem on throughout: io's
    categories are counted as seen (exact) and extrapolated / 0.25 into *_est; mem's
    (not windowed) only as seen; the guaranteed-overhead ratio is of the extrapolated io."""
    a = view(1.0, 1_000_000_000, 100, 1000, 5_000.0, 2_000.0, {})
    a["on_ns"] = {"io": 1_000_000_000, "mem": 1_000_000_000}
    b = view(2.0, 1_500_000_000, 300, 3000, 15_000.0, 6_000.0, {}, malloc_ns=700.0)
    b["on_ns"] = {"io": 1_250_000_000, "mem": 2_000_000_000}
    f = agent.interval_figures(a, b, PROBES)
    assert f["on_s"] == {"io": 0.25, "mem": 1.0}
    T = agent.Totals()
    last = agent.add_interval(T, f)
    assert T.calls["jni_copy"] == 200 and T.calls_est["jni_copy"] == 800.0
    assert T.bytes_est["kernel_copy"] == 8000.0
    assert "malloc" not in T.calls_est or T.calls_est["malloc"] == T.calls["malloc"]
    assert T.on_ns["io"] == 0.25e9 and T.period_ns["io"] == 1e9
    assert last["guaranteed_ratio"] == pytest.approx((14_000.0 / 0.25 + 700.0) / 500_000_000)
    # io off for the whole interval: nothing extrapolated, the ratio unknown
    c = dict(b, t=3.0, on_ns={"io": 1_250_000_000, "mem": 3_000_000_000})
    f = agent.interval_figures(b, c, PROBES)
    last = agent.add_interval(T, f)
    assert T.calls_est["jni_copy"] == 800.0 and last["guaranteed_ratio"] is None


def test_window_metrics_say_coverage_and_keep_estimates_apart(tmp_path):
    """A JVM whose io was on for 1.25 s of a 5 s interval: the exact count, its coverage, the
    extrapolated count and rate (with its interval and n) are separate series."""
    from jvmos import dutycycle as dc
    a, _ = make_agent(tmp_path, layers=("io",), max_overhead_pct=2.0)
    w = agent.Watch(proc(), ("io",))
    w.layers = ("io",)
    w.eng = types.SimpleNamespace(proc=types.SimpleNamespace(pid=1))
    a.watches[w.proc.key] = w
    v0 = view(0.0, 0, 0, 0, 0.0, 0.0, {}, malloc_ns=None)
    v0["on_ns"] = {"io": 0}
    v1 = view(5.0, 2_000_000_000, 1000, 8_192_000, 400_000.0, 100_000.0, {"io:jni_copy": 1000},
              malloc_ns=None)
    v1["on_ns"] = {"io": 1_250_000_000}
    f = agent.interval_figures(v0, v1, PROBES)
    w.last = agent.add_interval(w.totals, f)
    w.coverage, w.window = {"io": 0.25}, {"io": 1.25}
    w.totals.windows["io"] = 1
    w.rates = {"jni_copy": dc.rate_interval([(1000.0, 1.25), (800.0, 1.0), (1300.0, 1.5)])}
    text = generate_latest(agentmetrics.registry_for(a)).decode()
    got = {(s.name, tuple(sorted((k, v) for k, v in s.labels.items()
                                 if k in ("layer", "category", "bound")))): s.value
           for f in text_string_to_metric_families(text) for s in f.samples}
    assert got[("jvmos_category_calls_total", (("category", "jni_copy"),))] == 1000
    assert got[("jvmos_category_calls_estimated_total", (("category", "jni_copy"),))] == 4000
    assert got[("jvmos_coverage_ratio", (("layer", "io"),))] == 0.25
    assert got[("jvmos_window_seconds", (("layer", "io"),))] == 1.25
    assert got[("jvmos_layer_on_seconds_total", (("layer", "io"),))] == 1.25
    assert got[("jvmos_layer_windows_total", (("layer", "io"),))] == 1
    assert got[("jvmos_category_call_rate_estimated",
                (("bound", "estimate"), ("category", "jni_copy")))] == pytest.approx(
        3100.0 / 3.75)
    lo = got[("jvmos_category_call_rate_estimated",
              (("bound", "lower95"), ("category", "jni_copy")))]
    hi = got[("jvmos_category_call_rate_estimated",
              (("bound", "upper95"), ("category", "jni_copy")))]
    assert lo < 3100.0 / 3.75 < hi
    assert got[("jvmos_category_rate_windows", (("category", "jni_copy"),))] == 3
    assert agentmetrics.status(a)["watched"][0]["coverage"] == {"io": 0.25}


def test_agent_overhead_pairs_are_analysed_on_logs_and_sized_from_a_pilot():
    import math
    from scipy import stats
    from jvmos.experiments import agent_overhead as ao
    r = [1.01, 0.99, 1.03, 1.00, 1.02, 0.98]
    got = ao.paired(r)
    logs = [math.log(x) for x in r]
    lo, hi = stats.t.interval(0.95, len(r) - 1, loc=sum(logs) / len(r), scale=stats.sem(logs))
    assert got["n"] == 6 and got["ci95"] == pytest.approx([math.exp(lo), math.exp(hi)])
    assert got["geomean"] == pytest.approx(math.exp(sum(logs) / len(r)))
    assert got["equivalent"] is True and got["goal_met"] is True
    far = ao.paired([1.10, 1.08, 1.12])
    assert far["equivalent"] is False and far["goal_met"] is False
    assert ao.paired([1.05])["ci95"] is None
    # the pilot's spread sets N: a small one needs the minimum, a wide one is capped
    assert ao.pairs_needed([1.0, 1.01, 0.99, 1.005], 16)["pairs"] == ao.MIN_PAIRS
    wide = ao.pairs_needed([1.0, 1.08, 0.93, 1.05], 16)
    assert wide["capped"] and wide["pairs"] == 16 and wide["wanted"] > 16


def test_sample_windows_are_filed_and_served_as_pprof(tmp_path, monkeypatch):
    """--sample: a window is started when due (async-profiler stands in: a file written in the
    JVM's /tmp, here a folder standing for /proc/PID/root), moved into the state directory once
    it has ended, the oldest beyond KEEP deleted; the endpoint serves the last one as pprof
    (its conversion stood in for), says why not otherwise, and the metrics count it."""
    import time as _time
    from wsgiref.util import setup_testing_defaults
    from jvmos import profiles
    started = []
    root = tmp_path / "jvm-root"
    (root / "tmp").mkdir(parents=True)
    state = tmp_path / "state"
    state.mkdir()

    def fake_start(pid, jfr, seconds, interval_ns):
        started.append((pid, jfr, seconds))
        (root / jfr.lstrip("/")).write_bytes(b"JFR")
    monkeypatch.setattr(profiles, "start_window", fake_start)
    monkeypatch.setattr(profiles, "to_pprof", lambda jfr: b"\x1f\x8bpprof of " + jfr.name.encode())
    p = profiles.Profiles(state, window_s=2.0, every_s=10.0, log=lambda m: None)
    clock = [1000.0]
    p.clock, p.root_of = (lambda: clock[0]), (lambda pid: root)

    def step(t):
        clock[0] = t
        due = p.step(7, t)
        for _ in range(200):                 # jattach's thread
            if not p.jvms[7].starting:
                break
            _time.sleep(0.01)
        return due
    assert step(1000.0) == 1005.0 and not started          # the first window 5 s in
    step(1005.0)
    assert started == [(7, "/tmp/jvmos-profile-7-1005.jfr", 2)]
    step(1006.0)                                           # still running
    with pytest.raises(LookupError, match="no finished profile window"):
        p.pprof(7)
    assert step(1008.0) == 1015.0                          # filed; the next in 10 s
    assert p.exposed()[7]["windows"] == 1 and not list((root / "tmp").iterdir())
    for k in (15, 25, 35):
        step(1000.0 + k)
        step(1000.0 + k + 3)
    assert p.exposed()[7]["windows"] == 4
    assert sorted(x.name for x in state.glob("*.jfr")) == ["profile-7-1025.jfr",
                                                           "profile-7-1035.jfr"]
    a, _ = make_agent(state)
    a.profiles = p
    app = agentmetrics.app_for(agentmetrics.registry_for(a), a)

    def get(query):
        env = {"PATH_INFO": "/debug/pprof/profile", "QUERY_STRING": query}
        setup_testing_defaults(env)
        got = {}
        body = b"".join(app(env, lambda status, headers: got.update(status=status,
                                                                      headers=dict(headers))))
        return got["status"], got["headers"], body
    status, headers, body = get("pid=7")
    assert status == "200 OK" and body == b"\x1f\x8bpprof of profile-7-1035.jfr"
    assert headers["X-Jvmos-Window-End"] == "1037.000"
    assert get("pid=8")[0].startswith("404") and get("pid=x")[0].startswith("400")
    a.profiles = None
    assert b"--sample" in get("pid=7")[2]
    p.forget(7)
    assert not list(state.glob("*.jfr"))


def test_sample_options_are_checked():
    with pytest.raises(JvmosError, match="must be shorter than --sample-every"):
        agentconfig.build_config(types.SimpleNamespace(sample=True, sample_window=60.0,
                                                       sample_every=30.0))
    with pytest.raises(JvmosError, match="sample: give true or false"):
        agentconfig.build_config(None, {"sample": "yes"})
    cfg = agentconfig.build_config(types.SimpleNamespace(sample=True))
    assert cfg.sample and cfg.sample_every_s == 60.0 and "CPU profiles of 5 s every 60 s" in \
        cfg.describe()
