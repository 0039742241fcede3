"""`jvmos calibrate --in-situ`: θ, the whole CPU per use, fitted in place (heuristic/theta.py
holds the arithmetic; this module measures and stores).

Connections (the keep-alive what-if): jvmos's request server (workloads/java/io Intervene, a
pool of 2 threads, 1 KiB answers) is loaded by the C client (workloads/c/reqload) in windows of
n requests whose dose is the share of requests that open a new connection: every request,
every 2nd, every 4th, or one connection for the window (keep-alive, the baseline). No probe is
attached. Per window: the server's CPU clock (ns, every thread, exited ones included) less its
JIT compiler threads' CPU, the connections the client opened (its own count), and the kernel's
counters (proctimes) for what moved with the dose. Several fresh servers (the unit of θ's
interval), each with a settling round of every dose, then rounds in reversed orders.

θ goes into the platform file under "theta", with where it came from: the server's
configuration, the JDK, the commit, the date, what counted the uses, and the sha256 of every
server's windows (the runs it was fitted on), and its own sha256, so that a held-out test can
name the θ it tested and show that its runs were not among θ's.
"""
import json
import shutil
import time
from pathlib import Path
from typing import Callable, List

from jvmos import JvmosError
from jvmos import calibrate as cal
from jvmos import cputime, proctimes
import jvmos.experiments.interventions as iv
from jvmos.experiments.common import jdk_label
from jvmos.heuristic import theta as th
from jvmos.tools import IO_JAR, c_program, jar, program_id

JVM_FLAGS = ("-XX:-UseDynamicNumberOfCompilerThreads",)
DOSES = {"every:1": "a new connection per request", "every:2": "every 2nd request",
         "every:4": "every 4th request", "keep-alive": "one connection per window"}
BASELINE = "keep-alive"
# the write sizes of θ for writes (--in-situ-chunks): the regime of the change it prices, from
# an unbuffered stream's small writes to a buffer's; a first fit on 8-64 KiB writes found no
# per-write line there (results/predictions/theta-writes)
CHUNKS = (1024, 2048, 4096, 8192)


def chunk_response(chunks) -> int:
    """The answer's size for write doses `chunks`: at least 64 KiB and 4 writes of the
    largest, so that every dose writes the same bytes in whole chunks."""
    return max(64 << 10, 4 * max(chunks))


def chunk_design(chunks) -> dict:
    """θ for writes' design at these write sizes."""
    resp = chunk_response(chunks)
    return {**DESIGNS["bigger-chunks"],
            "doses": {str(c): f"{c / 1024:g} KiB writes" for c in sorted(chunks)},
            "baseline": str(max(chunks)),
            "use": f"a blocking write of the server, the same bytes in fewer writes "
                   f"({resp >> 10} KiB answers from a heap array, in writes of "
                   f"{', '.join(f'{c / 1024:g}' for c in sorted(chunks))} KiB)"}

# what each θ prices, and how its uses were counted
DESIGNS = {
    "keep-alive": {
        "term": "C_link", "unit": "connection", "doses": DOSES, "baseline": BASELINE,
        "use": "a connection opened by the client and accepted by the server",
        "counted_by": "the client's count of the connections it opened (no probe)",
        "applies_to": "a recording's accepts (links layer: accept and accept4)"},
    "bigger-chunks": {           # doses, baseline and use: chunk_design
        "term": "C_I/Ochunk", "unit": "write",
        "counted_by": "the kernel's count of the server's write syscalls (/proc/PID/io "
                      "syscw; no probe)",
        "applies_to": "a recording's blocking writes (io layer: write, writev, sendto, "
                      "sendmsg, pwrite64)"},
    "thread-pool": {
        "term": "C_nt", "unit": "thread", "doses": DOSES, "baseline": BASELINE,
        "use": "a thread started for a connection and ended with it, less a pool's hand-off "
               "of the same connection (two live servers, a thread per connection and a pool "
               "of 2, the same doses of connections; θ is the slope of their CPU difference)",
        "counted_by": "the client's count of the connections it opened: the thread-per-"
                      "connection server starts one thread for each (no probe)",
        "applies_to": "a recording's native threads started (the threads layer's "
                      "thread_create count), each priced as one connection's thread less a "
                      "pool's hand-off",
        "clock": "the thread-per-connection server's CPU clock less the pool server's, each "
                 "less its JIT compiler threads' CPU (ticks): a difference of two processes",
        "servers_per_run": 2},
}
THREAD_MODES = ("per-connection", "pool")

# θ for first touches (the pretouch what-if): the dose is the heap's size, -Xms = -Xmx, and
# each dose is a pair of fresh servers, without and with -XX:+AlwaysPreTouch; every request
# makes GARBAGE_KB of short-lived arrays, so the young generation's pages are touched for the
# first time in the windows by the one and at start-up by the other
HEAPS_MB = (128, 256, 512, 1024)
GARBAGE_KB = 256
PRETOUCH_MODES = ("touch-in-run", "pretouched")
DESIGNS["pretouch"] = {
    "term": "C_mem (page faults)", "unit": "page fault",
    "doses": {str(h): f"a {h} MiB heap (-Xms = -Xmx)" for h in HEAPS_MB},
    "baseline": str(HEAPS_MB[0]),
    "use": "a first touch of a Java heap page in the run, less the same page touched at "
           "start-up (pairs of fresh servers of the same heap, without and with "
           f"-XX:+AlwaysPreTouch, {GARBAGE_KB} KiB of garbage per request; θ is the slope of "
           "their CPU difference against their difference in minor page faults)",
    "counted_by": "the kernel's count of the servers' minor page faults (/proc/PID/stat "
                  "minflt, the pair's difference: every fault of every thread, of which "
                  "pretouch changes only the heap's first touches; no probe)",
    "applies_to": "a recording's user page faults in the Java heap (mem layer: page_fault_user "
                  "inside the heap's range, jcmd GC.heap_info)",
    "clock": "the server's CPU clock less the pretouched server's, each less its JIT compiler "
             "threads' CPU (ticks): a difference of two processes",
    "servers_per_run": 2 * len(HEAPS_MB)}


def measured(srv, n: int):
    """One load of n requests between two snapshots of its server's counters: the window
    (proctimes.window) and the client's record."""
    s0 = proctimes.snapshot(srv.proc.pid)
    res = srv.load(n)
    s1 = proctimes.snapshot(srv.proc.pid)
    return proctimes.window(s0, s1), res


def one_server(java: str, d: Path, n: int, rounds: int, seed: int, log: Callable) -> dict:
    st = dict(iv.DEFAULT)
    srv = iv.Server(java, st, d, Path("/dev/null"), JVM_FLAGS)
    ok = False
    windows = []
    try:
        for dose in DOSES:                 # the settling round: the JIT, kept apart
            srv.st["client"] = dose
            srv.load(n)
        order = th.dose_order(list(DOSES), rounds, seed)
        for dose in order:
            srv.st["client"] = dose
            w, res = measured(srv, n)
            windows.append(window_record(dose, res["connections"], len(windows), w, res))
        ok = True
    except cputime.ProcessGone as e:
        raise JvmosError(f"the in-situ server is gone: {e} (see {d}/server-stderr.txt)")
    finally:
        srv.stop(quiet=not ok)
    err = d / "server-stderr.txt"
    if err.exists() and not err.stat().st_size:
        shutil.rmtree(d)            # nothing to read: a finished server leaves no folder
    return {"order": order, "windows": windows, "server": srv.cmd,
            "sha256": th.sha256_of(windows)}


def chunk_group(java: str, d: Path, n: int, rounds: int, seed: int,
                chunks=CHUNKS) -> dict:
    """One group of live servers, one per write size (the dose is a server's start-up
    option), the same answers from a heap array over one keep-alive connection:
    windows of n requests to one and the other in rounds of reversed orders; the uses of a
    window are the kernel's count of its server's write syscalls."""
    srv, ok, windows = {}, False, []
    doses = [str(c) for c in sorted(chunks)]
    count = {dose: 0 for dose in doses}
    try:
        for dose in doses:
            st = {**iv.DEFAULT, "response": chunk_response(chunks), "chunk": int(dose),
                  "client": "keep-alive"}
            srv[dose] = iv.Server(java, st, d / dose, Path("/dev/null"), JVM_FLAGS)
        for dose in doses:                  # the settling round: the JIT, kept apart
            srv[dose].load(n)
        order = th.dose_order(doses, rounds, seed)
        for dose in order:
            w, res = measured(srv[dose], n)
            windows.append(window_record(dose, w["syscw"], count[dose], w, res))
            count[dose] += 1
        ok = True
    except cputime.ProcessGone as e:
        raise JvmosError(f"an in-situ server is gone: {e} (see {d}/*/server-stderr.txt)")
    finally:
        iv.stop_servers(srv.values(), quiet=not ok)
    drop_quiet_logs(d, srv)
    return {"order": order, "windows": windows, "server": srv[doses[0]].cmd,
            "sha256": th.sha256_of(windows)}


def drop_quiet_logs(d: Path, names) -> None:
    """A group's servers that wrote nothing to stderr leave no folder (nor the group one)."""
    for name in names:
        err = d / name / "server-stderr.txt"
        if err.exists() and not err.stat().st_size:
            shutil.rmtree(d / name)
    if d.is_dir() and not any(d.iterdir()):
        d.rmdir()


def thread_group(java: str, d: Path, n: int, rounds: int, seed: int) -> dict:
    """Two live servers, a thread per connection (P) and a pool of 2 (Q), given the same doses
    of connections in the same order, P and Q alternating which goes first (over two rounds
    each dose has P first once and Q first once). A window of θ is the pair's difference: P's
    CPU less Q's, its uses P's connections (one thread each). What the pool's hand-off costs
    is in Q and so taken out; what a connection costs is in both and cancels."""
    srv, ok = {}, False
    arms = {m: [] for m in THREAD_MODES}
    windows = []
    try:
        for m in THREAD_MODES:
            srv[m] = iv.Server(java, {**iv.DEFAULT, "threads": m}, d / m, Path("/dev/null"),
                               JVM_FLAGS)
        for dose in DOSES:                  # the settling round: the JIT, kept apart
            for m in THREAD_MODES:
                srv[m].st["client"] = dose
                srv[m].load(n)
        order = th.dose_order(list(DOSES), rounds, seed)
        for i, dose in enumerate(order):
            got = {}
            for m in (THREAD_MODES if i % 2 == 0 else THREAD_MODES[::-1]):
                srv[m].st["client"] = dose
                w, res = measured(srv[m], n)
                got[m] = window_record(dose, res["connections"], i, w, res)
                got[m]["first"] = (m == THREAD_MODES[i % 2])    # which server went first
                arms[m].append(got[m])
            windows.append(difference_window(got["per-connection"], got["pool"]))
        ok = True
    except cputime.ProcessGone as e:
        raise JvmosError(f"an in-situ server is gone: {e} (see {d}/*/server-stderr.txt)")
    finally:
        iv.stop_servers(srv.values(), quiet=not ok)
    drop_quiet_logs(d, srv)
    return {"order": order, "windows": windows, "arms": arms,
            "server": srv["per-connection"].cmd, "sha256": th.sha256_of(windows),
            "arms_sha256": th.sha256_of(arms)}


def pretouch_pair(java: str, d: Path, heap_mb: int, n: int, rounds: int, first: int,
                  start_index: int) -> List[dict]:
    """One dose of θ for first touches: two fresh servers of one heap size, P touching its
    heap in the run and Q pretouched, given the same `rounds` windows of n requests, P and Q
    alternating which goes first. A first touch happens once in a server's life, so the
    settling round (the JIT's first waves) is of requests that make no garbage (the server's
    --garbage-after): it touches little of the heap, and the windows' requests all do."""
    srv, ok, windows = {}, False, []
    try:
        for m in PRETOUCH_MODES:
            srv[m] = iv.Server(java, pretouch_settings(heap_mb, m == "pretouched"),
                               d / f"{heap_mb}-{m}", Path("/dev/null"), JVM_FLAGS)
        for m in PRETOUCH_MODES:
            srv[m].load(SETTLE_REQUESTS)
        for r in range(rounds):
            got = {}
            for m in (PRETOUCH_MODES if (first + r) % 2 == 0 else PRETOUCH_MODES[::-1]):
                w, res = measured(srv[m], n)
                got[m] = window_record(str(heap_mb), w["minflt"], start_index + r, w, res)
            p, q = got["touch-in-run"], got["pretouched"]
            windows.append(difference_window(p, q, uses=p["uses"] - q["uses"]))
            windows[-1]["round"] = r
            windows[-1]["first"] = PRETOUCH_MODES[(first + r) % 2]
        ok = True
    except cputime.ProcessGone as e:
        raise JvmosError(f"an in-situ server is gone: {e} (see {d}/*/server-stderr.txt)")
    finally:
        iv.stop_servers(srv.values(), quiet=not ok)
    drop_quiet_logs(d, [f"{heap_mb}-{m}" for m in PRETOUCH_MODES])
    return windows


# θ for native buffers reused (the reuse-native-buffers what-if): the dose is the number of
# inflations per request, each by a new Inflater (P) or by one kept and reset (Q); a first fit
# at 2-16 per request found the difference within the windows' noise (an Inflater made and
# ended costs a fraction of a µs here: glibc's caches serve its blocks again)
INFLATE_COUNTS = (16, 32, 64, 128)
INFLATE_MODES = ("per-call", "reused")
DESIGNS["reuse-native-buffers"] = {
    "term": "C_mem (allocator)", "unit": "Inflater",
    "doses": {str(c): f"{c} inflations of a 1 KiB block per request" for c in INFLATE_COUNTS},
    "baseline": str(INFLATE_COUNTS[0]),
    "use": "a java.util.zip.Inflater made, used once and ended (its zlib stream's native "
           "state and window malloc'ed and freed), less one kept and reset (pairs of live "
           "servers, one per mode, at each dose; θ is the slope of their CPU difference against "
           "the Inflaters made)",
    "counted_by": "the design: every request of the per-call server makes its dose's number "
                  "of Inflaters (no probe)",
    "applies_to": "a recording's zlib inflate streams created (mem layer: libz's inflateInit "
                  "calls)",
    "clock": "the per-call server's CPU clock less the reused server's, each less its JIT "
             "compiler threads' CPU (ticks): a difference of two processes",
    "servers_per_run": 2 * len(INFLATE_COUNTS)}


def inflater_group(java: str, d: Path, n: int, rounds: int, seed: int,
                   counts=INFLATE_COUNTS) -> dict:
    """One group of θ for reused Inflaters: a pair of live servers per dose (a new Inflater per
    inflation, P, and one kept per thread and reset, Q), each settled by a load; then rounds of
    every dose in reversed orders, P and Q alternating which goes first. A window is the
    pair's difference; its uses P's Inflaters, n x the dose."""
    srv, ok, windows = {}, False, []
    doses = [str(c) for c in counts]
    seen = {dose: 0 for dose in doses}
    try:
        for dose in doses:
            for m in INFLATE_MODES:
                st = {**iv.DEFAULT, "inflate": m, "inflate_count": int(dose)}
                srv[dose, m] = iv.Server(java, st, d / f"{dose}-{m}", Path("/dev/null"),
                                         JVM_FLAGS)
        for key in srv:                     # the settling round: the JIT, kept apart
            srv[key].load(n)
        order = th.dose_order(doses, rounds, seed)
        for i, dose in enumerate(order):
            got = {}
            for m in (INFLATE_MODES if i % 2 == 0 else INFLATE_MODES[::-1]):
                w, res = measured(srv[dose, m], n)
                got[m] = window_record(dose, n * int(dose), seen[dose], w, res)
            windows.append(difference_window(got["per-call"], got["reused"]))
            windows[-1]["first"] = INFLATE_MODES[i % 2]
            seen[dose] += 1
        ok = True
    except cputime.ProcessGone as e:
        raise JvmosError(f"an in-situ server is gone: {e} (see {d}/*/server-stderr.txt)")
    finally:
        iv.stop_servers(srv.values(), quiet=not ok)
    drop_quiet_logs(d, [f"{dose}-{m}" for dose in doses for m in INFLATE_MODES])
    server = iv.server_cmd(java, {**iv.DEFAULT, "inflate": "per-call",
                                  "inflate_count": counts[0]}, Path("server.port"),
                           Path("/dev/null"), JVM_FLAGS)
    return {"order": order, "windows": windows, "server": server,
            "sha256": th.sha256_of(windows)}


SETTLE_REQUESTS = 2000      # the requests without garbage before a pair's windows


def pretouch_settings(heap_mb: int, pretouched: bool) -> dict:
    return {**iv.DEFAULT, "garbage_kb": GARBAGE_KB, "garbage_after": SETTLE_REQUESTS,
            "heap_mb": heap_mb, "pretouch": pretouched}


def pretouch_group(java: str, d: Path, n: int, rounds: int, seed: int,
                   heaps=HEAPS_MB) -> dict:
    """One group of θ for first touches: a pair of fresh servers per heap size, the heaps in
    an order drawn from the seed; a window is the pair's difference, its uses the difference
    of their minor page faults."""
    order = th.dose_order([str(h) for h in heaps], 1, seed)
    windows = []
    for i, dose in enumerate(order):
        windows += pretouch_pair(java, d, int(dose), n, rounds, seed + i, len(windows))
    if d.is_dir() and not any(d.iterdir()):
        d.rmdir()
    server = iv.server_cmd(java, pretouch_settings(heaps[0], False), Path("server.port"),
                           Path("/dev/null"), JVM_FLAGS)
    return {"order": order, "windows": windows, "server": server,
            "sha256": th.sha256_of(windows)}


DIFFERENCED = ("cpu_ns", "cpu_with_jit_ns", "stime_ns", "utime_ns", "minflt", "syscr", "syscw",
               "jit_threads_exited")


def difference_window(p: dict, q: dict, uses: int = None) -> dict:
    """One window of a two-server θ: P's window less Q's (the same dose, the same requests);
    its uses P's (threads: the threads it started, one per connection), or `uses` (first
    touches: the difference of their page faults)."""
    if p["answer"] != q["answer"] or p["bytes"] != q["bytes"] or \
            (uses is None and p["uses"] != q["uses"]):
        raise JvmosError("the two servers of a pair did different work for the same requests "
                         f"(answers {p['answer']} and {q['answer']}, uses {p['uses']} and "
                         f"{q['uses']})")
    return {**{k: p[k] for k in ("dose", "uses", "index", "answer", "bytes")},
            **({"uses": uses} if uses is not None else {}),
            **{k: p[k] - q[k] for k in DIFFERENCED}}


def run_groups(jvm, runs_n: int, n: int, rounds: int, out: Path, log: Callable, what_if: str,
               describe: str, one, design: dict = None) -> dict:
    """θ's runs (servers or groups, the unit of its interval), each kept on disk as it ends,
    then θ's record: one(java, k) measures the k-th; describe names it in the log."""
    java = str(jvm.home / "bin" / "java")
    c_program("reqload")
    jar(IO_JAR)
    t0 = time.time()
    runs = []
    for k in range(runs_n):
        log(f"in-situ θ for {describe.format(k=k + 1, of=runs_n)}")
        runs.append(one(java, k))
        keep_partial(out, runs)
    return finish(runs, jvm, n, rounds, t0, what_if, out, design)


def calibrate_threads(jvm, groups: int = 12, rounds: int = 4, n: int = 1000, out: Path = None,
                      log: Callable = print) -> dict:
    return run_groups(jvm, groups, n, rounds, out, log, "thread-pool",
                      f"threads: group {{k}}/{{of}} (a thread per connection and a pool, "
                      f"{rounds} rounds of {len(DOSES)} doses, {n:,} requests a window)",
                      lambda java, k: thread_group(java, out / f"group{k}", n, rounds, 53 + k))


def calibrate_chunks(jvm, groups: int = 12, rounds: int = 4, n: int = 200, out: Path = None,
                     log: Callable = print, chunks=CHUNKS) -> dict:
    return run_groups(jvm, groups, n, rounds, out, log, "bigger-chunks",
                      f"writes: group {{k}}/{{of}} ({len(chunks)} servers, {rounds} rounds, "
                      f"{n:,} requests of {chunk_response(chunks) >> 10} KiB a window)",
                      lambda java, k: chunk_group(java, out / f"group{k}", n, rounds, 31 + k,
                                                  chunks), chunk_design(chunks))


def calibrate_inflaters(jvm, groups: int = 12, rounds: int = 2, n: int = 1000,
                        out: Path = None, log: Callable = print) -> dict:
    return run_groups(jvm, groups, n, rounds, out, log, "reuse-native-buffers",
                      f"reused Inflaters: group {{k}}/{{of}} ({len(INFLATE_COUNTS)} pairs of "
                      f"live servers, {rounds} rounds, {n:,} requests a window)",
                      lambda java, k: inflater_group(java, out / f"group{k}", n, rounds,
                                                     91 + k))


def calibrate_faults(jvm, groups: int = 12, rounds: int = 1, n: int = 4000, out: Path = None,
                     log: Callable = print) -> dict:
    return run_groups(jvm, groups, n, rounds, out, log, "pretouch",
                      f"first touches: group {{k}}/{{of}} ({len(HEAPS_MB)} heap sizes, a pair "
                      f"of fresh servers each, {rounds} windows of {n:,} requests with "
                      f"{GARBAGE_KB} KiB of garbage each)",
                      lambda java, k: pretouch_group(java, out / f"group{k}", n, rounds,
                                                     71 + 10 * k))


def moved_with_dose(servers: List[dict]) -> dict:
    """Per use, the slope of every other counter: what the dose changed besides the uses (not
    separable from them here: it is part of θ)."""
    out = {}
    for key in ("stime_ns", "utime_ns", "minflt", "syscr", "syscw"):
        b = [th.slope([w["uses"] for w in s["windows"]], [w[key] for w in s["windows"]])["slope"]
             for s in servers]
        out[key] = sum(b) / len(b)
    return out


def calibrate_links(jvm, servers: int = 12, rounds: int = 4, n: int = 1000, out: Path = None,
                    log: Callable = print) -> dict:
    return run_groups(jvm, servers, n, rounds, out, log, "keep-alive",
                      f"connections: server {{k}}/{{of}} ({rounds} rounds of {len(DOSES)} "
                      f"doses, {n:,} requests a window)",
                      lambda java, k: one_server(java, out / f"server{k}", n, rounds, 17 + k,
                                                 log))


PARTIAL = "insitu.partial.json"


def keep_partial(out: Path, runs: List[dict]) -> None:
    """The runs finished so far, kept on disk at once: a server that dies later loses nothing
    measured before it (the file goes when θ is written)."""
    out.mkdir(parents=True, exist_ok=True)
    tmp = out / (PARTIAL + ".tmp")
    tmp.write_text(json.dumps({"runs": runs}) + "\n")
    tmp.replace(out / PARTIAL)


def finish(runs: List[dict], jvm, n: int, rounds: int, t0: float, what_if: str,
           out: Path, design: dict = None) -> dict:
    """θ's record from the runs, written beside them (insitu.json, insitu.md)."""
    rec = theta_record(runs, jvm, n, rounds, time.time() - t0, what_if, design)
    write(out, rec, runs)
    (out / PARTIAL).unlink(missing_ok=True)
    return rec


def write(out: Path, rec: dict, runs: List[dict], **extra) -> None:
    out.mkdir(parents=True, exist_ok=True)
    (out / "insitu.json").write_text(json.dumps({"theta": rec, "runs": runs, **extra},
                                                indent=2) + "\n")
    (out / "insitu.md").write_text("\n".join(summary_lines(rec)) + "\n")


def window_record(dose: str, uses: int, index: int, w: dict, res: dict) -> dict:
    """One window of a dose: its uses, the CPU less the JIT's, and the kernel's counters."""
    return {"dose": dose, "uses": uses, "index": index, "cpu_ns": w["cpu_nojit_ns"],
            "cpu_with_jit_ns": w["cpu_ns"], "stime_ns": w["stime_ns"],
            "utime_ns": w["utime_ns"], "minflt": w["minflt"], "syscr": w["syscr"],
            "syscw": w["syscw"], "answer": res["fnv"], "bytes": res["bytes"],
            "jit_threads_exited": len(w["service_exited"])}


def theta_record(runs: List[dict], jvm, n: int, rounds: int, seconds: float,
                 what_if: str = "keep-alive", design: dict = None) -> dict:
    """θ's record from the servers' windows: the fit and everything it came from."""
    design = design or DESIGNS[what_if]
    # the same requests gave the same answers whatever the dose: the i-th window of each
    # server (keep-alive: of each run) got the same checksum
    # (reused Inflaters: the dose changes the answer, so the i-th window of each dose)
    key = {"bigger-chunks": "index", "reuse-native-buffers": "dose-index"}.get(what_if,
                                                                                "position")
    answers = {}
    for r in runs:
        for i, w in enumerate(r["windows"]):
            k = {"position": i, "index": w["index"]}.get(key, (w["dose"], w["index"]))
            answers.setdefault(k, set()).add(w["answer"])
    if any(len(v) != 1 for v in answers.values()):
        raise JvmosError("the in-situ servers gave different answers for the same requests: "
                         "the dose changed the work")
    fit = th.fit([r["windows"] for r in runs], design["baseline"])
    rec = {"what_if": what_if, "use": design["use"], "unit": design["unit"],
           "term": design["term"], "ns_per_use": fit["ns_per_use"],
           "fit": fit, "moved_with_dose_per_use": moved_with_dose(runs),
           "doses": design["doses"], "baseline": design["baseline"], "requests_per_window": n,
           "servers": len(runs), "rounds": rounds, "server_cmd": runs[0]["server"],
           # a run (the unit of θ's interval) is one server, or a group of live servers
           "servers_per_run": design.get("servers_per_run", 1 if what_if == "keep-alive" else
                                         len(design["doses"])),
           "jvm_flags": list(JVM_FLAGS), "jdk": str(jvm.home), "jdk_label": jdk_label(jvm),
           "commit": iv.git_commit(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "clock": design.get("clock", "the server's CPU clock (ns) less its JIT compiler "
                                        "threads' CPU (ticks)"),
           "counted_by": design["counted_by"], "applies_to": design["applies_to"],
           "runs_sha256": [r["sha256"] for r in runs],
           # the programs θ was fitted on: a held-out test must use none of them
           "programs": [program_id(jar(IO_JAR), "org.jvmos.workloads.Intervene")],
           "seconds": round(seconds, 1)}
    rec["theta_sha256"] = th.sha256_of({k: v for k, v in rec.items() if k != "theta_sha256"})
    return rec


def refit(src: Path, jvm) -> dict:
    """θ fitted again from a finished in-situ run's windows (nothing measured): the same runs,
    this code's arithmetic; a new record with its own sha256 and the date it was refitted."""
    try:
        data = json.loads((src / "insitu.json").read_text())
        runs, old = data["runs"], data["theta"]
    except (OSError, ValueError, KeyError) as e:
        raise JvmosError(f"{src}/insitu.json is not a finished in-situ run: {e}")
    for r in runs:
        if "arms" in r and th.sha256_of(r["arms"]) != r.get("arms_sha256"):
            raise JvmosError(f"{src}/insitu.json: a group's server windows no longer match "
                             f"their sha256 (edited?)")
        if th.sha256_of(r["windows"]) != r["sha256"]:
            raise JvmosError(f"{src}/insitu.json: a server's windows no longer match their "
                             f"sha256 (edited?)")
    what_if = old.get("what_if", "keep-alive")
    design = None
    if what_if == "bigger-chunks":
        # the write sizes the windows were measured at, not today's default
        design = {**DESIGNS[what_if], "doses": old["doses"], "baseline": old["baseline"],
                  "use": old["use"]}
    rec = theta_record(runs, jvm, old["requests_per_window"], old["rounds"], old["seconds"],
                       what_if, design)
    rec["refitted_from"] = {"theta_sha256": old["theta_sha256"], "date": old["date"],
                            "commit": old["commit"]}
    # the programs the windows were measured on, not the jars built now
    rec["programs"] = old.get("programs") or rec["programs"]
    rec["theta_sha256"] = th.sha256_of({k: v for k, v in rec.items() if k != "theta_sha256"})
    write(src, rec, runs, previous_theta=old)
    return rec


def store(platform_file: Path, rec: dict) -> None:
    platform = cal.load(platform_file) or {}
    th.keep(platform, rec)       # the what-if's latest, and this JDK's
    cal.save(platform_file, platform)


def summary_lines(rec: dict) -> List[str]:
    f = rec["fit"]
    lo, hi = f["ci_with_model_error_ns"]
    unit = rec.get("unit", "connection")
    return [f"θ {rec['what_if']} (CPU per {unit}, less the JIT threads', {rec['jdk_label']}): "
            f"{f['ns_per_use'] / 1e3:,.1f} µs [{lo / 1e3:,.1f}, {hi / 1e3:,.1f}] "
            f"({f['level']:.0%}, model error beyond noise {f['model_error_relative']:.1%} "
            f"included; without it "
            f"[{f['ci_ns'][0] / 1e3:,.1f}, {f['ci_ns'][1] / 1e3:,.1f}])",
            "  servers' (groups') slopes (µs): "
            + ", ".join(f"{b / 1e3:,.1f}" for b in f["server_slopes_ns"]),
            "  leave one dose out, relative error of the predicted effect: "
            + ", ".join(f"{e['dose']} {e['relative_error']:+.1%}"
                        for e in f["leave_one_dose_out"] if e["relative_error"] is not None),
            "  θ's clock: the server's CPU less its JIT threads'; what moved with the dose, per "
            f"{unit} ({'the pair difference' if rec['what_if'] in ('thread-pool', 'pretouch', 'reuse-native-buffers') else 'the whole process'}, JIT included): kernel CPU "
            f"{rec['moved_with_dose_per_use']['stime_ns'] / 1e3:,.1f} µs, user CPU "
            f"{rec['moved_with_dose_per_use']['utime_ns'] / 1e3:,.1f} µs (tick-sampled), "
            f"read syscalls {rec['moved_with_dose_per_use']['syscr']:+.2f}, write syscalls "
            f"{rec['moved_with_dose_per_use']['syscw']:+.2f}, minor faults "
            + ("(the use itself)" if rec["what_if"] == "pretouch" else
               f"{rec['moved_with_dose_per_use']['minflt']:+.2f}"),
            f"  design condition number (max over servers): {f['condition_number_max']:.1f}; "
            f"θ sha256 {rec['theta_sha256'][:16]}"]
