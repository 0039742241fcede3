"""The engine session of a recording (--mode time and count): the command launched at the
gate or the pid attached, the engine started on the plan, counting started and stopped, its
final maps taken, children held at their exec let go, and the calls in progress at the start
counted. What it leaves in the Run is concluded by jvmos.conclusion."""
import json
import os
import signal
import time
from pathlib import Path
from typing import Dict, List, Optional

from jvmos import JvmosError
from jvmos.catalogue import LINK_SYSCALLS
from jvmos.jdk import Jvm
from jvmos import sampling
from jvmos import cputime
from jvmos import javaheap
from jvmos.session import ATTACH_TIMEOUT_S, Session, alive
from jvmos.analyzers import summary as summ
from jvmos.recording import Options, Run, now_iso, save
from jvmos.proctree import ProcessTree
from jvmos.conclusion import summary_inputs, write_metrics_file


def _task_state(pid: int, tid) -> Optional[tuple]:
    """(the thread's /proc/TID/syscall line, its voluntary context switches), or None."""
    try:
        with open(f"/proc/{pid}/task/{tid}/syscall") as f:
            line = f.read().strip()
        with open(f"/proc/{pid}/task/{tid}/status") as f:
            vcsw = next(int(x.split()[1]) for x in f if x.startswith("voluntary_ctxt_switches"))
    except (OSError, StopIteration, ValueError, IndexError):
        return None
    return line, vcsw


def links_in_progress(pid: int) -> Dict[int, tuple]:
    """{tid: (its /proc/TID/syscall line, its voluntary switches)} of the process's threads
    blocked in a links syscall now (accept, accept4, connect, open, openat, close): calls
    whose return no probe will see at --scope process (a uretprobe is armed at the entry)."""
    from jvmos.analyzers.threads import syscall_name
    out = {}
    try:
        tids = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tids:
        st = _task_state(pid, tid)
        head = st[0].split()[0] if st and st[0] else ""
        if head.lstrip("-").isdigit() and int(head) >= 0 and \
                syscall_name(int(head) + 1) in LINK_SYSCALLS:
            out[int(tid)] = st
    return out


def ended_in_progress(pid: int, start: Dict[int, tuple]) -> Dict[int, str]:
    """Of the calls in progress at the start, those that ended before the stop: the thread is
    gone, is no longer in that call (its syscall line changed), or was switched in and out
    again since (its voluntary switches grew: a blocked call returns only once woken, and the
    same loop's next call would show the same line). {tid: the syscall's name}."""
    from jvmos.analyzers.threads import syscall_name
    out = {}
    for tid, (line, vcsw) in start.items():
        now = _task_state(pid, tid)
        if now is None or now[0] != line or now[1] > vcsw:
            out[tid] = syscall_name(int(line.split()[0]) + 1)
    return out


def count_in_progress(run, root: int, start: Dict[int, tuple], ended: Dict[int, str]) -> None:
    """The ended calls counted in the links layer's figures as untimed calls (@in_progress),
    under libc's function of the same name, and said in the manifest."""
    by = {}
    for name in ended.values():
        by[name] = by.get(name, 0) + 1
    run.manifest["links_in_progress_at_start"] = {
        "threads": len(start), "ended_during_recording": by,
        "how": "threads blocked in a links syscall when counting began (/proc/TID/syscall), "
               "and whether they left it before the stop; counted as untimed calls, their "
               "time and outcome not seen"}
    raw = run.engine_raw
    libc = (run.manifest.get("probes") or {}).get("libc") or "libc"
    if raw is None or not by:
        return
    for name, n in by.items():
        cat = "link" if name in ("accept", "accept4", "connect") else "file"
        raw.put("in_progress", (str(root), cat, f"uprobe:{libc}:{name}"), n)


def kernel_io(pid: int) -> Optional[dict]:
    """The kernel's counts of a process's read and write syscalls (/proc/PID/io syscr,
    syscw), or None when it is gone."""
    from jvmos import proctimes
    try:
        kv = proctimes.io_counters(pid)
        return {"syscr": int(kv["syscr"]), "syscw": int(kv["syscw"])}
    except (OSError, KeyError, ValueError):
        return None


def _launch_or_attach(session: Session, opts: Options, out: Path) -> int:
    """The root of the traced tree: the command launched and held at the gate (with the
    sampling agent in its environment when asked), or the pid attached to."""
    if opts.cmd:
        env = sampling.launch_env(out, opts.env, wall=opts.wall) if opts.sample else opts.env
        return session.launch(opts.cmd, opts.stdout, opts.stderr, env)
    return opts.pid


def _run_live(run: "Run", live, session: Session, root: int, load) -> bool:
    """The live view's intervals, then what they were in the manifest and timeline.json
    (written whatever ended them). True when the target exited."""
    opts, manifest = run.opts, run.manifest
    try:
        return live.run(session, root, opts.duration, load)
    finally:
        manifest["live"] = {"interval_s": opts.interval, "count": opts.count,
                            "intervals": len(live.intervals), "ended": live.ended,
                            "skipped": live.skipped, "lost_events": live.lost_events}
        try:
            live.write()
            manifest["live"]["timeline"] = "timeline.json"
        except OSError as e:
            manifest["live"]["timeline"] = None
            run.warnings.append(f"timeline.json could not be written: {e}")


def _stop_sampler(opts: Options, jvms: List[Jvm], out: Path, log) -> Optional[str]:
    """Attach mode with --sample: the agent stopped and its profile written; why not, if it
    could not be."""
    if opts.sample and opts.pid is not None and alive(opts.pid):
        try:
            sampling.attach_stop(jvms[0], opts.pid, out, wall=opts.wall)
        except JvmosError as e:
            log(f"warning: {e}")
            return str(e)
    return None


def trace(run: Run) -> None:
    """The tracing session: the command launched at the gate (or the pid
    attached), the engine started on the plan and ready (every probe open), counting started
    (attach mode), the recording waited for, then the engine stopped: counting ends, its final
    maps are read, every link is closed (a fraction of a second: one uprobe_multi link per
    library and program)."""
    from jvmos import engine as engine_mod
    opts, log, out, jvms, manifest, plan = (run.opts, run.log, run.out, run.jvms, run.manifest,
                                            run.plan)
    session = Session(log)
    tree = None
    eng = None
    err_path = out / "raw" / "engine.stderr"
    wall_ns, target_cpu, exit_code, target_gone = 0, None, None, False
    load_error: List[Exception] = []
    sample_error = None
    stopped_early = False
    with session:
        try:
            save(out / "manifest.json", manifest, out)
            root = _launch_or_attach(session, opts, out)
            child = session.child
            never_ran = "; the command never ran" if opts.cmd else ""
            plan.doc["root_pid"] = root
            plan.doc["constants"]["common"]["root_tgid"] = root
            plan.doc["counting"] = opts.pid is None     # attach mode: from the start signal
            t_attach = time.time()
            eng = engine_mod.Engine(plan, out / "probes.plan.json", err_path, log)
            session.bt = eng.proc       # the session watches it and kills it on every path

            def abort(msg, status="failed", code=1):
                session.close_gate()       # the command never starts
                eng.kill()
                manifest.update({"status": status, "error": msg, "end_time": now_iso()})
                save(out / "manifest.json", manifest, out)
                raise JvmosError(msg, code)

            ev = eng.wait_ready(ATTACH_TIMEOUT_S, lambda: session.interrupted is not None)
            if session.interrupted is not None:
                abort("interrupted before tracing started" + never_ran, "interrupted", 130)
            if ev is None:
                abort(f"the engine did not attach within {ATTACH_TIMEOUT_S:.0f}s" + never_ran)
            if ev.get("event") != "ready":
                abort(f"the engine failed before tracing started: {eng.first_error()}"
                      + never_ran)
            _note_ready(run, ev, root, time.time() - t_attach)
            if opts.sample and opts.pid is not None:
                if not jvms:
                    abort(f"--sample needs a JVM: pid {opts.pid} is not one")
                try:
                    sampling.attach_start(jvms[0], opts.pid, out, wall=opts.wall)
                except JvmosError as e:
                    abort(str(e))
            tree = ProcessTree(root)      # which processes ran, and their JVMs (the engine follows them)
            cpu_watch = cputime.TreeCpu(root, tree=True, interval=0.2) if child is None else None
            cpu_at_t0 = None if child is None else cputime.cpu_or_none(child.pid)
            t0 = time.monotonic_ns()
            if cpu_watch is not None:
                cpu_watch.start()
            # the kernel's own count of the target's read and write syscalls, read on both
            # sides of the start of counting (and of its stop), to bound what libc's wrappers
            # miss (attach mode: the process counts from the engine's start)
            io_before = kernel_io(root) if opts.pid is not None else None
            if opts.pid is not None and not eng.start():
                abort(f"the engine did not start counting: {eng.first_error()}")
            io_at_start = ((io_before, kernel_io(root))
                           if io_before is not None else None)
            # the links calls already in progress (no return probe on them: libc's route)
            links_at_start = (links_in_progress(root) if opts.pid is not None
                              and opts.scope == "process" and "links" in opts.layers else None)
            # a reader can see tracing has begun: the probes count from here (attach mode
            # counts from the engine's start, a launched command from its first instruction)
            manifest["start_time"] = now_iso()
            save(out / "manifest.json", manifest, out)
            live = None
            if opts.interval is not None:
                live = _live_view(run, tree, cpu_watch, eng)
                live.start(eng.alive)
            session.release()
            tree.start()
            load = session.run_load(opts.workload, load_error)
            cpu_at_end = cpu_rusage = None
            if live is not None:
                target_gone = _run_live(run, live, session, root, load)
            if child is not None:
                # a launched command ends the recording when it exits (after the live view,
                # which may end first on --count)
                exit_code, cpu_at_end, cpu_rusage = session.wait_command()
                target_gone = False
            elif live is None:
                target_gone = session.wait_attached(root, opts.duration, load)
            wall_ns = time.monotonic_ns() - t0
            target_cpu = (cpu_watch.stop() if cpu_watch is not None
                          else cputime.launched_cpu(cpu_at_t0, cpu_at_end, cpu_rusage))
            if cpu_watch is None and child is not None and target_cpu.get("complete"):
                # the rusage's kernel-mode part: the whole command's, the gate's start-up
                # (milliseconds before the exec) included, unlike cpu_ns
                target_cpu["sys_ns"] = cputime.rusage_sys_ns(child)
            sample_error = _stop_sampler(opts, jvms, out, log)
            tree.stop.set()
            tree.join()
            manifest["end_time"] = now_iso()
            ended = ended_in_progress(root, links_at_start) if links_at_start else None
            stopped_early = _stop_engine(run, eng, ev, root, io_at_start)
            if ended is not None:
                count_in_progress(run, root, links_at_start, ended)
        finally:
            if tree is not None and tree.is_alive():
                tree.stop.set()
                tree.join()
            if eng is not None and eng.alive():
                eng.kill()
            _release_held(run, tree)
    run.__dict__.update(root=root, child=child, tree=tree, wall_ns=wall_ns,
                        target_cpu=target_cpu, exit_code=exit_code, target_gone=target_gone,
                        load_error=load_error, sample_error=sample_error,
                        stopped_early=stopped_early,
                        engine_rc=eng.proc.returncode if eng is not None else None,
                        sig=session.interrupted)


def _note_ready(run: Run, ev: dict, root: int, attach_s: float) -> None:
    """The engine is ready: what it attached goes into the manifest, and one line to the user."""
    opts, manifest, log = run.opts, run.manifest, run.log
    sites = ev.get("sites") or []
    manifest["attach_seconds"] = round(attach_s, 3)
    manifest["probes"]["sites"] = sites
    # the raw tracepoint programs every layer's object attached (common's and each
    # layer's own), as the engine says
    manifest["probes"]["tp_btf"] = ev.get("tp_btf_programs") or []
    # the layers whose scheduler handlers run from common's one sched_switch program, in order
    manifest["probes"]["switch_chain"] = ev.get("switch_chain") or []
    manifest["engine"].update({"uprobe_multi": ev.get("uprobe_multi"), "pid": ev.get("pid"),
                               "load_s": round(ev.get("load_s", 0), 4),
                               "attach_s": round(ev.get("attach_s", 0), 4)})
    if ev.get("fallback"):
        manifest["engine"]["fallback"] = ev["fallback"]
        run.warnings.append(ev["fallback"])
        log(f"warning: {ev['fallback']}")
    moved = sum(1 for x in sites if x.get("shift"))
    stepped = sorted({x["symbol"] for x in sites if x.get("class") == "single-stepped"})
    log(f"tracing pid {root} with the compiled engine ({ev.get('uprobes', 0)} uprobes, "
        f"{ev.get('tracepoints', 0)} tracepoints, attached in {attach_s:.2f}s; "
        f"{moved} probe(s) moved onto an emulated instruction"
        + (f", {len(stepped)} single-stepped: {', '.join(stepped[:4])}" if stepped else "")
        + ")" + (f" for {opts.duration}s" if opts.duration else "")
        + ("; Ctrl-C to stop" if opts.pid else ""))


def _stop_engine(run: Run, eng, ev: dict, root: int, io_at_start) -> bool:
    """Counting ends: the kernel's io counters read again (attach mode), the engine stopped, its
    final maps kept and read, how it ended in the manifest. True when the engine had
    already exited (no final maps)."""
    from jvmos import engine as engine_mod
    manifest, plan = run.manifest, run.plan
    end_before = kernel_io(root) if io_at_start is not None else None
    stopped_early = not eng.alive()
    maps = None if stopped_early else eng.stop()
    end_after = kernel_io(root) if end_before is not None else None
    if "mem" in run.opts.layers:
        manifest["java_heap"] = java_heap_at_stop(root, maps is not None or not eng.alive())
        heap = manifest["java_heap"]
        run.log(f"java heap of pid {root}: " + (
            f"[{heap['start']:#x}, {heap['end']:#x}) ({heap.get('collector')})"
            if "start" in heap else f"unknown: {heap['unknown']}"))
    if end_after is not None and None not in io_at_start:
        # counting began between the first two reads and ended between the last two: the
        # kernel's count over it lies between these ends
        s0, s1 = io_at_start
        manifest["kernel_io"] = {
            "pid": root, **{k: [end_before[k] - s1[k], end_after[k] - s0[k]]
                            for k in ("syscr", "syscw")},
            "window": "the kernel's count of the process's read and write syscalls while "
                      "counting ran, between the counters read just inside and just outside "
                      "its start and stop (/proc/PID/io, every thread, exited ones included)"}
    if maps is not None:
        try:
            run.raw_path.write_text(json.dumps(maps) + "\n")   # as the engine handed it
        except OSError as e:
            run.warnings.append(f"the engine's maps could not be kept in "
                                f"{run.raw_path}: {e}")
        run.engine_raw = engine_mod.decode(maps, plan)
        # what the engine attached (bpftrace's attached_probes): uprobe attach points
        # of the root, tracepoints, and common.bpf.c's raw tracepoints
        run.engine_raw.attached_probes = sum(
            int(ev.get(k) or 0) for k in ("uprobes", "tracepoints", "tp_btf"))
        late = maps.get("released_at_stop") or []
        if late:
            manifest["engine"]["released_at_stop"] = late
            run.warnings.append(
                f"{len(late)} child process(es) started a program just before the stop "
                f"and were held at their exec until it (pids {', '.join(map(str, late[:5]))}"
                "): they ran nothing while traced, and ran on once let go")
    if eng.closed is not None:
        manifest["teardown_seconds"] = round(eng.closed.get("detach_s", 0), 4)
    run.engine_end = ("stopped by jvmos: final maps read, every link closed"
                      if maps is not None and eng.closed is not None else
                      "stopped by jvmos: final maps read; the engine did not confirm "
                      "that it closed its links (its exit closes them)"
                      if maps is not None else
                      f"exited before the stop: {eng.first_error()}" if stopped_early
                      else f"no final maps after the stop: {eng.first_error()}")
    if maps is not None and eng.closed is None:
        run.warnings.append(f"the engine {run.engine_end.split('; ', 1)[1]}")
    manifest["engine"]["end"] = run.engine_end
    manifest["engine"]["procs"] = eng.procs
    if eng.warnings:
        manifest["engine"]["warnings"] = eng.warnings
    return stopped_early


def java_heap_at_stop(pid: int, counting_over: bool) -> dict:
    """The manifest's java_heap: the address range of the recorded JVM's Java heap (the mem
    layer's page faults in it are page_faults_heap), read with its JDK's jcmd once counting
    is over: jcmd starts a thread in the JVM (its attach listener), whose work must not be
    counted. Unknown, with the reason, when the process is gone or counting did not stop."""
    if not counting_over:
        return {"pid": pid, "unknown": "the engine did not confirm that counting stopped: "
                                       "jcmd was not run in the traced process"}
    if not alive(pid):
        return {"pid": pid, "unknown": f"pid {pid} had exited when counting stopped"}
    return javaheap.read_java_heap(pid)


def _release_held(run: Run, tree) -> None:
    """No child of the traced tree stays stopped at its exec, whatever ended the recording:
    the engine lets them go at its stop (and at EOF); this covers an engine that was killed
    or died. Only pids the probes marked held (@held), and only those of the traced tree."""
    held = set()
    if run.engine_raw is not None:
        held = {int(p) for (p,) in run.engine_raw.keyed("held") if str(p).isdigit()}
    for ev in (run.manifest.get("engine") or {}).get("procs") or []:
        if ev.get("held"):
            held.add(int(ev["pid"]))
    tree_pids = set(tree.pids) if tree is not None else set()
    for p in held & tree_pids:
        try:
            os.kill(p, signal.SIGCONT)
        except OSError:
            pass


def _live_view(run: Run, tree, cpu_watch, eng):
    """The live view of an attach-mode recording (jvmos.live): snapshots summarized by the
    same analyzers as the end of the recording; OpenMetrics text each interval if asked."""
    from jvmos import live as live_mod

    def summarize(raw, wall_ns):
        kw, _, _ = summary_inputs(run.platform, run.manifest,
                                  {str(p): i for p, i in tree.pids.items()}, run.engine_raw)
        s = summ.build(raw, wall_ns=wall_ns, status="running", exit_code=None, **kw)
        return s

    def cpu_now():
        if cpu_watch is None:
            return None
        cpu_watch.poll()
        return cpu_watch.result().get("cpu_ns")

    metrics = ((lambda summary: write_metrics_file(run, summary))
               if run.opts.metrics_file is not None else None)
    return live_mod.LiveView(eng, run.plan, run.out, run.raw_path, run.opts.interval,
                             run.opts.count, summarize, cpu_now, metrics=metrics)
