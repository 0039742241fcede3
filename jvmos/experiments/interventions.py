"""`jvmos run interventions`: each term of C_os removed by a real change, its saving predicted
from the probes' counts and measured without probes.

Each intervention is a pair of arms, two configurations of one request server
(workloads/java/io Intervene, loaded from a C client, workloads/c/reqload) that differ in the
use of one OS service only: a thread per connection or a pool (C_nt), a connection per request
or keep-alive (C_link), heap or direct buffers and 8 KiB or 64 KiB writes (C_I/Ochunk), a file
opened per request or kept open (C_file), the heap touched in the run or at start-up
(-XX:+AlwaysPreTouch; C_mem's page faults), a new zlib Inflater per request or a reused one
(C_mem's allocator). A last pair applies every change at once (the nearest thing to an OS-less
JVM that Linux allows).

For each intervention:
  1. counts: one recording per arm (jvmos attached to the server in --mode time with every
     layer, after the
     same warm-up, for exactly the requests that the trials time) gives the uses of the service
     that the change removed, arm A's count minus arm B's;
  2. prediction: removed x the calibrated constant of the term (heuristic/whatif.py), its
     interval the count times the ends of the constant's 95% interval;
  3. measurement: N trials of each arm without any probe, in pairs whose order is drawn at
     random, each a fresh server: warm-up, then the timed requests; the server's CPU time
     (its process CPU clock, every thread) and the client's wall time of the timed requests;
  4. the saving: mean(A) - mean(B) with Welch's 95% t interval (scipy), n = N per arm;
     "inside" when the measured CPU saving's mean lies in the predicted interval.
The client checksums every byte it reads: all trials of both arms must give the same answers.

What this leaves out, as the paper's hypervisor prediction would not: the scheduler, the
kernel's network stack and the client's side of every connection.
"""
import argparse
import json
import os
import random
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional

from jvmos import JvmosError
from jvmos import calibrate as cal
from jvmos import cputime
from jvmos import record as rec
from jvmos.analyzers.stats import welch_diff_ci
from jvmos.analyzers.tables import Table, fmt_count
from jvmos.experiments.common import (Progress, jdk_label, last_json, load_finished, log, out_dir,
                                      select_jdks, write_outputs)
from jvmos.heuristic import terms, whatif
from jvmos.tools import IO_JAR, c_program, jar

EXAMPLES = """\
examples:
  jvmos run interventions                      # every intervention, 20 trials per arm
  jvmos run interventions --quick              # 10 trials per arm, fewer requests
  jvmos run interventions --only keep-alive,thread-pool --trials 30
  jvmos run interventions --render results/interventions   # the table and figure again, nothing measured

cost: 2 x trials fresh JVMs per intervention, plus one recording per arm; the recordings are
attached after the warm-up, in --mode time, with every layer (io, threads, links, mem).
"""

HEAP = ["-Xms512m", "-Xmx512m"]
PAUSE_S = 0.5       # between the warm-up and the timed requests, in trials (recordings attach)
# every arm is recorded with every layer in --mode time: the counts of the term, and what the
# probes measured of each resource's OS time, which tells a miss's cause (the OS's part of a
# use priced wrongly, or work outside the OS removed with it)
LAYERS = ("io", "threads", "links", "mem")
FILE_BYTES = 4 << 20            # the file the file intervention reads 4 KiB blocks of

DEFAULT = {"threads": "pool", "pool": 2, "response": 1024, "chunk": 8192, "buffer": "heap",
           "file_mode": "none", "inflate": "none", "inflate_count": 1, "garbage_kb": 0,
           "client": "keep-alive",
           "pretouch": False}


@dataclass
class Spec:
    name: str                   # the what-if it tests (whatif.WHAT_IFS), or "combined"
    change: str                 # arm A -> arm B, in words
    base: Dict                  # what both arms share (over DEFAULT)
    a: Dict
    b: Dict
    resource: str               # the resource of the guaranteed overhead the term belongs to
    requests: int               # timed requests per trial (--quick: half)
    what_ifs: tuple = ()        # the what-ifs whose terms it sums (default: its own name)
    min_jdk: int = 0            # the JDK feature release it needs
    notes: List[str] = field(default_factory=list)


SPECS = [
    Spec("thread-pool", "a thread per connection -> a pool of 2 (a connection per request)",
         {"client": "per-request"}, {"threads": "per-connection"}, {"threads": "pool"},
         "threads", 3000),
    Spec("virtual-threads", "a platform thread per connection -> a virtual thread per "
         "connection (JDK 21+; a connection per request)", {"client": "per-request"},
         {"threads": "per-connection"}, {"threads": "virtual"}, "threads", 3000,
         what_ifs=("thread-pool",), min_jdk=21),
    Spec("keep-alive", "a connection per request -> one keep-alive connection (pool of 2)",
         {}, {"client": "per-request"}, {"client": "keep-alive"}, "links", 6000),
    Spec("direct-buffers", "1 MiB responses written from a heap array -> from a reused direct "
         "buffer (64 KiB writes)", {"response": 1 << 20, "chunk": 65536},
         {"buffer": "heap"}, {"buffer": "direct"}, "io", 1500),
    Spec("bigger-chunks", "256 KiB responses in 8 KiB writes -> in 64 KiB writes (heap)",
         {"response": 256 << 10}, {"chunk": 8192}, {"chunk": 65536}, "io", 3000),
    Spec("file-handles", "a 4 KiB file read per request: RandomAccessFile opened and closed -> "
         "one kept open", {}, {"file_mode": "per-request"}, {"file_mode": "kept"},
         "links", 6000),
    Spec("pretouch", "256 KiB of garbage per request, -Xms512m -Xmx512m -> the same with "
         "-XX:+AlwaysPreTouch", {"garbage_kb": 256}, {"pretouch": False}, {"pretouch": True},
         "mem", 2000),
    Spec("reuse-native-buffers", "64 inflations of a 1 KiB block per request, each by a new "
         "Inflater -> by one reused (reset)", {"inflate_count": 64}, {"inflate": "per-call"},
         {"inflate": "reused"}, "mem", 6000),
    Spec("combined", "every change at once: as little OS as Linux allows",
         {"response": 256 << 10, "garbage_kb": 256},
         {"threads": "per-connection", "client": "per-request", "buffer": "heap",
          "chunk": 8192, "file_mode": "per-request", "inflate": "per-call", "pretouch": False},
         {"threads": "pool", "client": "keep-alive", "buffer": "direct", "chunk": 65536,
          "file_mode": "kept", "inflate": "reused", "pretouch": True},
         "all", 2000,
         what_ifs=("thread-pool", "keep-alive", "direct-buffers", "bigger-chunks",
                   "file-handles", "pretouch", "reuse-native-buffers")),
]
NAMES = [s.name for s in SPECS]


def parse(argv):
    p = argparse.ArgumentParser(prog="jvmos run interventions", epilog=EXAMPLES,
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                description=__doc__.split("\n\n")[0])
    p.add_argument("--only", help=f"interventions to run, comma-separated (of {', '.join(NAMES)})")
    p.add_argument("--trials", type=int, help="trials per arm (default 20; --quick 10)")
    p.add_argument("--requests-scale", type=float, default=1.0,
                   help="multiply every intervention's timed requests (default 1)")
    p.add_argument("--seed", type=int, default=1, help="seed of the arms' order (default 1)")
    p.add_argument("--jdk", help="JDK home (default: the first found)")
    p.add_argument("--platform", help="platform file with the constants (jvmos calibrate)")
    p.add_argument("--out", help="output directory (default results/runs/<time>-interventions)")
    p.add_argument("--quick", action="store_true", help="10 trials per arm, half the requests")
    p.add_argument("--no-store", dest="store", action="store_false",
                   help="do not record the verdicts in the platform file (they are recorded "
                        "there only from full-size runs: at least 10 trials per arm, not "
                        "--quick, --requests-scale 1)")
    p.add_argument("--render", metavar="DIR",
                   help="write DIR's table, notes and figure again from DIR/interventions.json "
                        "(no measuring)")
    a = p.parse_args(argv)
    a.trials = a.trials if a.trials is not None else (10 if a.quick else 20)
    if a.trials < 2:
        p.error("--trials must be at least 2 (an interval needs two values per arm)")
    if a.requests_scale <= 0:
        p.error("--requests-scale must be positive")
    if a.only is not None and not [x for x in a.only.split(",") if x.strip()]:
        p.error("--only needs at least one intervention")
    a.only = NAMES if a.only is None else [x.strip() for x in a.only.split(",") if x.strip()]
    bad = [x for x in a.only if x not in NAMES]
    if bad:
        p.error(f"unknown intervention(s) {', '.join(bad)} (known: {', '.join(NAMES)})")
    return a


def arm_settings(spec: Spec, arm: str) -> dict:
    return {**DEFAULT, **spec.base, **(spec.a if arm == "A" else spec.b)}


def server_cmd(java: str, st: dict, port_file: Path, data_file: Path,
               flags: tuple = ()) -> List[str]:
    heap = [f"-Xms{st['heap_mb']}m", f"-Xmx{st['heap_mb']}m"] if st.get("heap_mb") else HEAP
    cmd = [java] + list(flags) + heap + (["-XX:+AlwaysPreTouch"] if st["pretouch"] else []) + [
        "-cp", str(jar(IO_JAR)), "org.jvmos.workloads.Intervene", "--port-file", str(port_file),
        "--threads", st["threads"], "--pool", str(st["pool"]), "--response", str(st["response"]),
        "--chunk", str(st["chunk"]), "--buffer", st["buffer"], "--file-mode", st["file_mode"],
        "--inflate", st["inflate"], "--inflate-count", str(st["inflate_count"]),
        "--garbage-kb", str(st["garbage_kb"]), "--max-seconds", "900"]
    if st.get("garbage_after"):
        cmd += ["--garbage-after", str(st["garbage_after"])]
    if st["file_mode"] != "none":
        cmd += ["--file", str(data_file)]
    return cmd


class Server:
    """One arm's server: started, loaded by reqload, stopped with a 'Q' request."""

    def __init__(self, java: str, st: dict, d: Path, data_file: Path, flags: tuple = ()):
        self.st, self.dir = st, d
        d.mkdir(parents=True, exist_ok=True)
        self.port_file = d / "server.port"
        self.port_file.unlink(missing_ok=True)
        self.cmd = server_cmd(java, st, self.port_file, data_file, flags)
        self.err = open(d / "server-stderr.txt", "ab")
        self.proc = subprocess.Popen(self.cmd, stdout=subprocess.DEVNULL, stderr=self.err)
        t0 = time.monotonic()
        while not self.port_file.exists() or not self.port_file.read_text().strip():
            if self.proc.poll() is not None:
                raise JvmosError(f"the intervention server exited ({self.proc.returncode}) "
                                 f"before listening; see {d}/server-stderr.txt")
            if time.monotonic() - t0 > 120:
                self.proc.kill()
                self.proc.wait()
                self.err.close()
                raise JvmosError("the intervention server did not listen within 120 s; see "
                                 f"{d}/server-stderr.txt")
            time.sleep(0.02)
        self.port = int(self.port_file.read_text().strip())

    def load(self, n: int, quit: bool = False) -> dict:
        cmd = [str(c_program("reqload")), str(self.port), str(n), str(self.st["response"]),
               self.st["client"], "quit" if quit else "stay", "600"]
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, timeout=660)
        except subprocess.TimeoutExpired:
            raise JvmosError("the intervention client did not finish within 660 s")
        res = last_json(r.stdout)
        if r.returncode != 0 or not res:
            tail = (r.stderr.strip().splitlines() or ["no output"])[-1]
            raise JvmosError(f"the intervention client failed (exit {r.returncode}): {tail}")
        return res

    def cpu_ns(self) -> int:
        try:
            return cputime.process_cpu_ns(self.proc.pid)
        except cputime.ProcessGone as e:
            raise JvmosError(f"the intervention server is gone: {e} (see "
                             f"{self.dir}/server-stderr.txt)")

    def stop(self, quiet: bool = False) -> None:
        """Stop the server with a 'Q' request (killed if that fails). An exit other than 0 is an
        error, unless this killed it or `quiet` (another error is already being reported)."""
        killed = False
        if self.proc.poll() is None:
            try:
                self.load(0, quit=True)
                self.proc.wait(timeout=30)
            except (JvmosError, subprocess.TimeoutExpired):
                self.proc.kill()
                self.proc.wait()
                killed = True
        self.err.close()
        if not (killed or quiet) and self.proc.returncode not in (0, None):
            raise JvmosError(f"the intervention server exited {self.proc.returncode}; see "
                             f"{self.dir}/server-stderr.txt")


def stop_servers(servers, quiet: bool) -> None:
    """Stop every server, even when stopping one fails; the first failure is raised after."""
    failure = None
    for x in list(servers):
        try:
            x.stop(quiet=quiet)
        except JvmosError as e:
            failure = failure or e
    if failure:
        raise failure


def warmup_of(n: int) -> int:
    return max(200, n // 4)


def trial(java: str, st: dict, d: Path, data_file: Path, n: int) -> dict:
    """One unprobed trial: a fresh server, the warm-up, then the timed requests."""
    srv = Server(java, st, d, data_file)
    ok = False
    try:
        srv.load(warmup_of(n))
        # the pause a recording's attach makes between warm-up and timed requests, so that
        # both windows start alike (the JIT's queue after the warm-up, say)
        time.sleep(PAUSE_S)
        c0 = srv.cpu_ns()
        res = srv.load(n)
        c1 = srv.cpu_ns()
        ok = True
    finally:
        srv.stop(quiet=not ok)
    return {"cpu_ns": c1 - c0, "wall_ns": res["seconds"] * 1e9, "fnv": res["fnv"],
            "bytes": res["bytes"]}


def recorded(java: str, st: dict, d: Path, data_file: Path, n: int, layers, platform) -> dict:
    """One recorded arm: jvmos attached after the warm-up, for the timed requests only."""
    srv = Server(java, st, d, data_file)
    box = {}
    ok = False
    try:
        srv.load(warmup_of(n))
        res = rec.record(rec.Options(pid=srv.proc.pid, layers=list(layers), mode="time",
                                     out=d / "rec", platform=platform,
                                     workload=lambda: box.setdefault("load", srv.load(n)),
                                     log=lambda m: log(f"  [{d.name}] {m}")))
        ok = True
    finally:
        srv.stop(quiet=not ok)
    if res.status != "complete":
        raise JvmosError(f"the recording of {d.name} ended {res.status}: {res.reason}")
    pid = str(srv.proc.pid)
    by = (res.summary.get("by_pid") or {}).get(pid)
    if not by:
        raise JvmosError(f"the recording of {d.name} holds nothing of the server (pid {pid})")
    s = {"categories": by["categories"], "totals": {}}
    return {"run_dir": str(res.run_dir), "counts": whatif.counts(s), "fnv": box["load"]["fnv"],
            # what the probes measured of the OS's cost, by term (corrected, time mode), and
            # what they only estimated (counts x calibrated costs), apart
            "os_parts_ns": terms.parts_of(s)}


def predicted(spec: Spec, ca: dict, cb: dict, platform: dict, jdk_home: str) -> dict:
    """The saving predicted from the two arms' counts, one term or (combined) their sum."""
    names = spec.what_ifs or (spec.name,)
    tm = {}
    for name in names:
        w = whatif.WHAT_IFS[name]
        if name == "direct-buffers":
            # the probes cannot tell a write from a direct buffer from one through a temporary
            # direct buffer (the copy is an intrinsic, not a call): their nio_copy estimate is
            # the same in both arms. Arm A copies every byte it writes from a heap array (the
            # server's design), so the count is arm A's written bytes, in its write calls.
            removed, calls = ca["io_write_bytes"], ca["io_writes"]
        else:
            removed, calls = ca[w.count_key] - cb[w.count_key], 0
        tm[name] = whatif.predict(name, removed, platform, jdk_home, calls)
        tm[name]["count_a"], tm[name]["count_b"] = ca[w.count_key], cb[w.count_key]
        if name == "direct-buffers":
            tm[name]["count_basis"] = ("arm A's bytes written (probes' count), each copied "
                                          "from a heap array by the JDK: the probes cannot see "
                                          "that copy (an intrinsic); their nio_copy estimate "
                                          f"was {ca['nio_copy_bytes']:,} bytes in arm A and "
                                          f"{cb['nio_copy_bytes']:,} in arm B")
    total = sum(t["predicted_us"] for t in tm.values())
    lo = sum(t["predicted_ci95_us"][0] for t in tm.values())
    hi = sum(t["predicted_ci95_us"][1] for t in tm.values())
    return {"terms": tm, "predicted_us": total, "predicted_ci95_us": [lo, hi],
            "interval_method": tm[names[0]]["interval_method"] + (
                "; summed over the terms, low ends and high ends (conservative: wider than a "
                "95% interval if the constants' errors are independent)"
                if len(names) > 1 else "")}


def verdict(pred: dict, cpu: dict) -> dict:
    """inside: the mean measured CPU saving lies in the predicted interval (issue 24's test);
    overlap: the measured 95% interval meets the predicted one; inconclusive: the measured
    interval holds 0 (no saving shown, whatever its mean)."""
    lo, hi = pred["predicted_ci95_us"]
    m, mlo, mhi = cpu["diff"] / 1e3, cpu["ci"][0] / 1e3, cpu["ci"][1] / 1e3
    significant = not (mlo <= 0 <= mhi)
    inside = lo <= m <= hi
    overlap = mlo <= hi and lo <= mhi
    ratio = m / pred["predicted_us"] if pred["predicted_us"] else None
    if not significant:
        kind, text = "inconclusive", ("inconclusive: the measured saving's interval holds 0"
                                      + (" (and overlaps the prediction)" if overlap else ""))
    elif inside:
        kind, text = "inside", "yes"
    elif overlap:
        kind, text = "overlap", (f"no, but the intervals overlap (measured mean "
                                 f"{ratio:.2f}x the prediction)" if ratio is not None
                                 else "no, but the intervals overlap")
    else:
        kind, text = "miss", (f"no: measured {ratio:.2f}x the prediction" if ratio is not None
                              else "no: nothing was predicted")
    return {"inside": inside and significant, "overlap": overlap, "significant": significant,
            "kind": kind, "ratio": ratio, "text": text,
            "rule": "inside when the measured CPU saving is significant (its Welch 95% interval "
                    "excludes 0) and its mean lies in the predicted interval"}


def run_one(spec: Spec, a, java: str, jdk_home: str, platform: dict, platform_file: Path,
            out: Path, data_file: Path, bar: Progress) -> dict:
    """One intervention. A failure part-way keeps what was finished (status "failed", its
    reason, the recordings and trials so far) and is re-raised by the caller at the end."""
    n = max(10, int(spec.requests * (0.5 if a.quick else 1.0) * a.requests_scale))
    d = out / spec.name
    st = {arm: arm_settings(spec, arm) for arm in "AB"}
    r = {"name": spec.name, "change": spec.change, "requests": n, "resource": spec.resource,
         "warmup_requests": warmup_of(n), "pause_before_timed_s": PAUSE_S, "status": "running",
         "arms": {x: {"settings": st[x],
                      "server": server_cmd(java, st[x], Path("PORT_FILE"), data_file),
                      "cpu_ns": [], "wall_ns": []} for x in "AB"}, "order": []}
    log(f"{spec.name}: {spec.change}; {n:,} timed requests, {a.trials} trials per arm")
    try:
        _run_one(spec, a, java, jdk_home, platform, platform_file, d, data_file, bar, n, st, r)
    except JvmosError as e:
        r["status"], r["reason"] = "failed", str(e)
        raise InterventionFailed(r) from e
    r["status"] = "complete"
    return r


class InterventionFailed(Exception):
    def __init__(self, record: dict):
        super().__init__(record.get("reason"))
        self.record = record


def _run_one(spec, a, java, jdk_home, platform, platform_file, d, data_file, bar, n, st, r):
    rec_ = {}
    for arm in "AB":
        rec_[arm] = recorded(java, st[arm], d / f"recorded-{arm}", data_file, n, LAYERS,
                             str(platform_file))
        r["arms"][arm].update(recording=rec_[arm]["run_dir"], counts=rec_[arm]["counts"],
                              os_parts_ns=rec_[arm]["os_parts_ns"])
    bar.step(2)
    ca, cb = rec_["A"]["counts"], rec_["B"]["counts"]
    pred = r["prediction"] = predicted(spec, ca, cb, platform, jdk_home)
    # every count that changed between the arms, not only the one the prediction prices
    r["count_changes"] = {k: ca[k] - cb[k] for k in sorted(ca)
                          if isinstance(ca.get(k), (int, float)) and
                          isinstance(cb.get(k), (int, float)) and ca[k] != cb[k]}
    rng = random.Random(a.seed * 1009 + NAMES.index(spec.name))
    answers = {rec_[x]["fnv"] for x in "AB"}
    for i in range(a.trials):
        pair = rng.sample(["A", "B"], 2)
        r["order"].append("".join(pair))
        for arm in pair:
            t = trial(java, st[arm], d / f"trial-{arm}", data_file, n)
            r["arms"][arm]["cpu_ns"].append(t["cpu_ns"])
            r["arms"][arm]["wall_ns"].append(t["wall_ns"])
            r["bytes_per_trial"] = t["bytes"]
            answers.add(t["fnv"])
            bar.step()
        if len(answers) != 1:
            raise JvmosError(f"{spec.name}: the arms did not give the same answers (client "
                             f"checksums {sorted(answers)}): the intervention changed the work")
    r["answers"] = next(iter(answers))
    A, B = r["arms"]["A"], r["arms"]["B"]
    cpu = r["measured_cpu"] = welch_diff_ci(A["cpu_ns"], B["cpu_ns"])
    r["measured_wall"] = welch_diff_ci(A["wall_ns"], B["wall_ns"])
    v = r["verdict"] = verdict(pred, cpu)
    log(f"  predicted {pred['predicted_us'] / 1e3:.2f} ms [{pred['predicted_ci95_us'][0] / 1e3:.2f}, "
        f"{pred['predicted_ci95_us'][1] / 1e3:.2f}]; measured CPU {cpu['diff'] / 1e6:.2f} ms "
        f"[{cpu['ci'][0] / 1e6:.2f}, {cpu['ci'][1] / 1e6:.2f}]: {v['text']}")
    # what the probes measured of the term's OS time in arm A minus arm B, and apart what they
    # only estimated (counts x calibrated costs: the same constants as the prediction)
    names = list(terms.TERMS) if spec.resource == "all" else [spec.resource]
    pa, pb = rec_["A"]["os_parts_ns"], rec_["B"]["os_parts_ns"]
    r["os_removed_terms"] = names
    r["os_removed_measured_ns"] = sum(pa[t]["measured_ns"] - pb[t]["measured_ns"] for t in names)
    r["os_removed_estimated_ns"] = sum(pa[t]["estimated_ns"] - pb[t]["estimated_ns"]
                                       for t in names)


def ms_ci(mean_ns: float, ci_ns) -> str:
    return f"{mean_ns / 1e6:,.2f} [{ci_ns[0] / 1e6:,.2f}, {ci_ns[1] / 1e6:,.2f}]"


def removed_text(r: dict) -> str:
    tm = r["prediction"]["terms"]
    if len(tm) > 1:
        return "; ".join(f"{k} {fmt_count(t['removed'])}" for k, t in tm.items())
    (k, t), = tm.items()
    if k == "direct-buffers":
        return (f"{fmt_count(t['removed'])} bytes written from heap arrays, in "
                f"{fmt_count(t['removed_calls'])} writes (each copied by the JDK; invisible "
                f"to the probes)")
    return (f"{fmt_count(t['removed'])} {t['count_what']} ({fmt_count(t['count_a'])} -> "
            f"{fmt_count(t['count_b'])})")


OTHER_COUNTS = ("threads_created", "accepts", "files_opened", "io_writes", "io_reads",
                "malloc_calls", "page_faults", "futex")


def other_changes(r: dict) -> str:
    """The counts that changed between the arms besides the priced one (A - B)."""
    priced = {whatif.WHAT_IFS[k].count_key for k in r["prediction"]["terms"]}
    ch = [(k, v) for k, v in (r.get("count_changes") or {}).items()
          if k in OTHER_COUNTS and k not in priced]
    return ", ".join(f"{k} {v:+,}" for k, v in ch) or "none"


def tables(results: dict) -> list:
    t = Table(f"Interventions: predicted and measured savings ({results['jdk_label']}, "
              f"{results['trials']} unprobed trials per arm; ms of server CPU / client wall time "
              f"over the timed requests)",
              ["intervention", "term", "count removed (probes, A -> B)",
               "predicted saving, ms [95%]",
               "OS time removed: measured by the probes, ms (+ estimated, ms)",
               "measured CPU saving, ms [95%]", "measured wall saving, ms [95%]",
               "measured CPU saving / count removed", "other counts changed (A - B)",
               "inside?"])
    for r in results["interventions"]:
        if r.get("status") != "complete":
            continue
        p, c, w = r["prediction"], r["measured_cpu"], r["measured_wall"]
        tm = p["terms"]
        per = per_use(r, c["diff"])
        per_txt = ("—" if per is None else
                   f"{per * 1e3:,.3g} ns/byte" if "direct-buffers" in tm else f"{per:,.3g} µs")
        pred_txt = (f"{p['predicted_us'] / 1e3:,.2f} [{p['predicted_ci95_us'][0] / 1e3:,.2f}, "
                    f"{p['predicted_ci95_us'][1] / 1e3:,.2f}]"
                    + (" (ends summed)" if len(tm) > 1 else ""))
        t.add([r["name"], ", ".join(x["term"] for x in tm.values()) if len(tm) == 1 else "all",
               removed_text(r), pred_txt,
               f"{r['os_removed_measured_ns'] / 1e6:,.2f} (+ {r['os_removed_estimated_ns'] / 1e6:,.2f}) "
               f"[{', '.join(r['os_removed_terms'])}]",
               ms_ci(c["diff"], c["ci"]), ms_ci(w["diff"], w["ci"]), per_txt,
               other_changes(r), r["verdict"]["text"]])
    return [t]


def summary_notes(results: dict) -> List[str]:
    done = [r for r in results["interventions"] if r.get("status") == "complete"]
    notes = [f"skipped: {x}" for x in results.get("skipped") or []]
    notes += [f"FAILED: {r['name']}: {r.get('reason')} (its finished recordings and trials are "
              f"in the JSON)" for r in results["interventions"] if r.get("status") != "complete"]
    rs = [r for r in done if r["name"] != "combined"]
    if rs:
        k = sum(r["verdict"]["inside"] for r in rs)
        ov = sum(r["verdict"]["overlap"] and r["verdict"]["significant"] for r in rs)
        inc = sum(r["verdict"]["kind"] == "inconclusive" for r in rs)
        tested = sorted({x["term"] for r in rs for x in r["prediction"]["terms"].values()})
        notes.append(f"{k} of {len(rs)} single interventions (testing {len(tested)} terms: "
                     f"{', '.join(tested)}) fell inside their predicted interval; {ov} had "
                     f"intervals that overlap it; {inc} were inconclusive (issue 24's goal: "
                     f"inside for at least 5 of 6 terms).")
    comb = next((r for r in done if r["name"] == "combined"), None)
    if comb:
        p, c = comb["prediction"]["predicted_us"] * 1e3, comb["measured_cpu"]
        if p:
            notes.append(
                f"combined: measured CPU saving {c['diff'] / 1e6:,.2f} ms [{c['ci'][0] / 1e6:,.2f}, "
                f"{c['ci'][1] / 1e6:,.2f}] against the summed prediction {p / 1e6:,.2f} ms: "
                f"{abs(100 * (c['diff'] - p) / p):.1f}% {'above' if c['diff'] > p else 'below'} "
                f"the prediction (goal: within 10%). Its terms are priced from the whole-arm "
                f"counts (every malloc or fault the changes removed, whichever change removed "
                f"it), and bigger-chunks' C_I/Ochunk holds NIO copy costs that direct-buffers "
                f"prices as well.")
    notes += [
        "count removed: what the probes counted in arm A minus arm B, each arm recorded once "
        "(--mode time, every layer, attached after the same warm-up, the timed requests only); "
        "direct-buffers: arm A's bytes written (the probes cannot see the JDK's heap -> "
        "temporary direct buffer copy, an intrinsic; their nio_copy estimate is the same in "
        "both arms).",
        "predicted: count removed x the calibrated constant (jvmos calibrate); its interval is "
        "the count times the ends of the constant's 95% interval (the count is exact, from one "
        "recording per arm).",
        "OS time removed: what the probes measured of the term's resource (the I/O term: its "
        "JNI copies; threads: thread creation; links: accept/connect/open/close; memory: "
        "allocator calls and memory syscalls) in arm A minus arm B, corrected for the probe "
        "effect; in parentheses, what they only estimated (NIO and kernel copies, page "
        "faults, frees: counts x calibrated costs, the prediction's own constants). Near the "
        "prediction but far from the measured saving: the change removed work outside the OS "
        "too; far from the prediction: the constant prices the OS's part of a use wrongly here.",
        "measured: mean(arm A) - mean(arm B) over unprobed trials, Welch's 95% t interval "
        "(scipy), n per arm as the title says; arms in pairs of random order, a fresh server "
        f"each, {PAUSE_S:g} s between warm-up and timed requests (as a recording's attach); CPU "
        "is the server's process CPU clock (every thread), wall the client's.",
        "measured CPU saving / count removed: the whole saving (every change in the other "
        "counts, and the JVM's own work, included) divided by the priced count: not the cost "
        "of one use.",
        "inside: the measured saving is significant (its interval excludes 0) and its mean lies "
        "in the predicted interval. A miss is kept: the constants price only the OS's part of "
        "a use, while a change also removes the JVM's and the library's work around it "
        "(see REPRODUCTION.md).",
        "in the measurement but in no prediction: the kernel's TCP/loopback work done in the "
        "server's context (handshakes, teardowns, per-packet work), the scheduler's and the "
        "futex hand-offs between threads. Not in either: the client's side of each connection "
        "(another process).",
    ]
    return notes


def figure(results: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    rs = [r for r in results["interventions"] if r.get("status") == "complete"]
    if not rs:
        return
    fig, ax = plt.subplots(figsize=(8.5, 0.6 * len(rs) + 2.0))
    for i, r in enumerate(rs):
        p, c = r["prediction"], r["measured_cpu"]
        lo, hi = (x / 1e3 for x in p["predicted_ci95_us"])
        ax.plot([lo, hi], [i + 0.12] * 2, color="tab:blue", lw=6, alpha=0.5,
                label="predicted (95%; combined: the terms' ends summed)" if i == 0 else None)
        ax.plot([p["predicted_us"] / 1e3], [i + 0.12], "o", color="tab:blue")
        ax.errorbar([c["diff"] / 1e6], [i - 0.12], xerr=[[c["diff"] / 1e6 - c["ci"][0] / 1e6],
                                                        [c["ci"][1] / 1e6 - c["diff"] / 1e6]],
                    fmt="s", color="tab:red", capsize=3,
                    label="measured CPU saving (Welch 95%)" if i == 0 else None)
    ax.set_yticks(range(len(rs)), [r["name"] for r in rs])
    ends = [x / 1e3 for r in rs for x in r["prediction"]["predicted_ci95_us"]] + \
           [x / 1e6 for r in rs for x in r["measured_cpu"]["ci"]]
    lo, hi = min(ends), max(ends)
    if lo > 0:
        ax.set_xscale("log")
        ax.set_xlim(lo / 1.5, hi * 1.5)
        scale = "log scale"
    else:
        ax.set_xscale("symlog", linthresh=1.0)
        ax.set_xlim(lo * 1.5, hi * 1.5)
        ax.axvline(0, color="grey", lw=0.8)
        scale = "symmetric log scale"
    ax.set_xlabel(f"saving over the timed requests, ms of server CPU ({scale})")
    ax.set_title(f"Interventions: predicted vs measured ({results['jdk_label']}, "
                 f"n={results['trials']} per arm)")
    ax.invert_yaxis()
    height = fig.get_figheight()
    fig.legend(loc="lower center", ncol=2, fontsize=8)
    fig.tight_layout(rect=(0, 0.45 / height, 1, 1))
    for ext in ("png", "svg"):
        fig.savefig(out / f"interventions.{ext}", dpi=110)
    plt.close(fig)


def per_use(r: dict, ns: float) -> Optional[float]:
    """A saving (ns) per use removed (per byte for direct-buffers), µs."""
    terms = r["prediction"]["terms"]
    if len(terms) != 1:
        return None
    removed = next(iter(terms.values()))["removed"]
    return ns / removed / 1e3 if removed else None


def store_verdicts(results: dict, platform_file: Path) -> Optional[str]:
    """The verdicts, per what-if, into the platform file (jvmos predict --what-if reads them)."""
    platform = cal.load(platform_file) or {}
    v = platform.setdefault("interventions", {})
    for r in results["interventions"]:
        if r["name"] not in whatif.WHAT_IFS or r.get("status") != "complete":
            continue            # combined, virtual-threads: no what-if of their own
        p, c = r["prediction"], r["measured_cpu"]
        v[r["name"]] = {
            "status": ("validated: the measured saving fell inside the prediction"
                       if r["verdict"]["inside"] else "not validated: " + r["verdict"]["text"]),
            "kind": r["verdict"]["kind"],
            "inside": r["verdict"]["inside"], "ratio_measured_to_predicted": r["verdict"]["ratio"],
            "predicted_ms": p["predicted_us"] / 1e3, "measured_cpu_ms": c["diff"] / 1e6,
            "measured_cpu_ci95_ms": [x / 1e6 for x in c["ci"]], "trials": results["trials"],
            "measured_cpu_per_use_us": per_use(r, c["diff"]),
            "measured_cpu_per_use_ci95_us": (None if per_use(r, c["diff"]) is None
                                             else sorted(per_use(r, x) for x in c["ci"])),
            "per_use_unit": "byte" if r["name"] == "direct-buffers" else "use",
            "jdk": results["jdk"], "jdk_label": results["jdk_label"],
            "date": results["date"], "source": results["out"], "commit": results.get("commit")}
    cal.save(platform_file, platform)
    return str(platform_file)


def save(out: Path, results: dict) -> None:
    """The results, first as they are (JSON), then as tables: a table that cannot be drawn
    never loses what was measured."""
    tmp = out / ".interventions.raw.json.tmp"
    tmp.write_text(json.dumps(results, indent=2, default=str) + "\n")
    os.replace(tmp, out / "interventions.json")
    write_outputs(out, "interventions", tables(results), results, summary_notes(results))


def main(argv) -> int:
    a = parse(argv)
    if a.render:
        out = Path(a.render)
        return report(out, load_finished(out / "interventions.json", "interventions",
                                          "interventions"))
    jvm = select_jdks([a.jdk] if a.jdk else None)[0]
    java = str(jvm.home / "bin" / "java")
    platform_file = cal.platform_path(a.platform)
    platform = cal.load(platform_file)
    if not platform or not platform.get("constants"):
        raise JvmosError(f"no platform constants in {platform_file}: run 'jvmos calibrate' first")
    c_program("reqload")
    jar(IO_JAR)
    out = out_dir(a.out, "interventions")
    data_file = out / ".data.bin"
    data_file.write_bytes(random.Random(3).randbytes(FILE_BYTES))
    feature = int(jvm.version.split(".")[0]) if jvm.version.split(".")[0].isdigit() else 0
    specs = [s for s in SPECS if s.name in a.only and feature >= s.min_jdk]
    skipped = [f"{s.name}: needs JDK {s.min_jdk}+ (this is {jvm.version}; give --jdk)"
               for s in SPECS if s.name in a.only and feature < s.min_jdk]
    if not specs:
        raise JvmosError("nothing to run: " + "; ".join(skipped))
    for x in skipped:
        log(f"skipped {x}")
    results = {"experiment": "interventions", "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
               "trials": a.trials, "seed": a.seed, "quick": a.quick,
               "date": time.strftime("%Y-%m-%d"), "out": str(out),
               "platform": str(platform_file), "commit": git_commit(),
               "requests_scale": a.requests_scale, "skipped": skipped, "interventions": []}
    failed = []
    try:
        with Progress(len(specs) * (2 * a.trials + 2), "interventions", unit="run") as bar:
            for spec in specs:
                try:
                    results["interventions"].append(
                        run_one(spec, a, java, str(jvm.home), platform, platform_file, out,
                                data_file, bar))
                except InterventionFailed as e:
                    # kept with what it finished; the others still run
                    results["interventions"].append(e.record)
                    failed.append(f"{spec.name}: {e.record.get('reason')}")
                    log(f"  FAILED: {e.record.get('reason')}")
    finally:
        data_file.unlink(missing_ok=True)
        if results["interventions"]:
            save(out, results)
    # verdicts into the platform file: only from a full-size run of 10 trials or more
    if a.store and a.trials >= 10 and not a.quick and a.requests_scale == 1.0:
        results["stored_in"] = store_verdicts(results, platform_file)
    report(out, results)
    if failed:
        raise JvmosError(f"{len(failed)} intervention(s) failed ({'; '.join(failed)}); the "
                         f"others' results are in {out}")
    return 0


def report(out: Path, results: dict) -> int:
    """interventions.md/.csv/.json, the notes and the figure, from the measured runs (also
    --render's)."""
    save(out, results)
    figure(results, out)
    print((out / "interventions.md").read_text())
    log(f"results: {out}")
    return 0


def git_commit() -> Optional[str]:
    """The commit of the code that made the results (None outside a git checkout)."""
    from jvmos import ROOT
    try:
        r = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                           text=True, timeout=10)
        d = subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if r.returncode != 0:
        return None
    return r.stdout.strip() + ("+uncommitted changes" if d.stdout.strip() else "")
