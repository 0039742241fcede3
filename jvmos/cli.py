"""The jvmos command line: jvmos VERB [options]."""
import argparse
import json
import sys
from pathlib import Path

from jvmos import JvmosError, __version__
from jvmos.catalogue import DEFAULT_LAYERS, Mode, layers_help

RECORD_EXAMPLES = """\
examples:
  jvmos record -- java -cp app.jar Main          # launch a command and trace it (and its children)
  jvmos record --pid 4242 --duration 30          # attach to a running JVM for 30 s (Ctrl-C ends early)
  jvmos record --pid 4242 --interval 2 --count 5  # live: a block of lines every 2 s, five times
  jvmos record --layers io,jni --out /tmp/r1 -- java -jar server.jar
                                                 # add the JNI census (~240 uprobes, attached in a fraction
                                                 # of a second; a hit per JNI call: slows JNI-heavy code)
  jvmos record --mode count -- java -jar app.jar # entry probes only: counts, the cheapest probes
  jvmos report /tmp/r1                           # read the run again later

cost: the compiled engine (probes/*.bpf.c) opens its uprobes in the traced processes only
(uprobe_multi links with their pid; attach and detach take a fraction of a second). A uprobe
hit costs ~0.6-0.8 us where the engine could place it on an instruction the kernel emulates,
~9 us where it is single-stepped (this 2-core VM, 24 Nov); every probed JNI copy and I/O call
pays one (--mode count) or an entry+return pair (--mode time). The threads layer, and every
layer at --scope host, use syscall tracepoints, which cost every process on the host something
(the report prints the figure 'jvmos calibrate --probes' measured).
'jvmos calibrate --probes' measures this machine's costs; every recording is corrected with them.
"""
RUN_EXAMPLES = """\
experiments:
  blocking-io    paper Table 3: 10-byte writes to /dev/null, C vs Java on every JDK found
  jni-census     paper Table 2: JNI calls, % copying and bytes by path for four tasks
  accuracy       jvmos's times against probe-free ground truth, and each mode's slowdown
  threads        paper Tables 4 and 5: NoOp threads, per-layer cost, virtual threads
  memory         paper Table 6: allocator and kernel memory cost under a DaCapo-style suite
  tomcat         paper Figure 2: a JPetStore-style shop on Tomcat under growing load
  chat           paper Figure 1: a VolanoMark-style chat server, platform and virtual threads
  server         Figures 1-2 on your own server: --server-cmd, --load-cmd "... {level} ...", --levels
  ipc            seed 000: sockets vs XML-RPC between two JVMs, timers, t-tests, packets, GC, boundary
  serialization  seed 002: Serializable, Externalizable, XStream and Kryo, time and bytes per graph
  heuristic      paper Table 7: the cost heuristic against measured cost, and a fitted model
  interventions  each term of C_os removed by a real change: saving predicted vs measured
  predictions    each term of C_os tested against the clock it prices (kernel or user CPU), ABBA
  held-out       θ (calibrate --in-situ) tested on programs it never saw (the shop's keep-alive)
  overhead       what each layer and mode costs the target and the host, against the floor
  agent-overhead the agent's cost on a loaded chat server, watched vs bare
  agent-windows  whether the agent's windows bias its extrapolated rates (windowed vs full, ABBA)
  probe-effect   jvmos's estimate of its probe effect against the effect observed, ABBA pairs
  sampler-cost   the sampler's calibrated cost by stack depth, and against a chat server, ABBA

examples:
  jvmos run blocking-io                          # 1,000,000 iterations, results under results/runs/
  jvmos run blocking-io --iterations 200000 --out /tmp/bio
  jvmos run jni-census --quick                   # smaller tasks
"""


def _layers(s: str):
    return [x.strip() for x in s.split(",") if x.strip()]


def cmd_doctor(args) -> int:
    from jvmos import doctor
    return doctor.run()


def cmd_record(args) -> int:
    from jvmos import record as rec, report
    cmd = args.command
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if not cmd and args.pid is None:
        raise JvmosError("nothing to trace: give a command after -- or --pid PID")
    if cmd and args.pid is not None:
        raise JvmosError("give either a command or --pid, not both")
    if args.wall and not (args.sample or args.mode == "sample"):
        raise JvmosError("--wall samples with async-profiler: give --sample (or --mode sample)")
    opts = rec.Options(cmd=cmd or None, pid=args.pid, duration=args.duration,
                       layers=_layers(args.layers), out=Path(args.out) if args.out else None,
                       mode=args.mode, sample=args.sample, wall=args.wall, scope=args.scope,
                       jdks=args.jdk or (), platform=args.platform,
                       interval=args.interval, count=args.count,
                       metrics_file=Path(args.metrics_file) if args.metrics_file else None)
    res = rec.record(opts)
    print(report.render(res.run_dir))
    print(f"\nrun directory: {res.run_dir}")
    if res.status == "command_failed":
        raise JvmosError(f"traced command exited with status {res.exit_code}; its recording is "
                         f"kept in {res.run_dir} (status command_failed)", 1)
    if res.status != "complete":
        raise JvmosError(f"recording {res.status}" + (f": {res.reason}" if res.reason else "")
                         + f"; what was measured is in {res.run_dir}", 1)
    return 0


def cmd_report(args) -> int:
    from jvmos import report
    if args.html:
        from jvmos.writable import check_writable
        report.load_run(args.run_dir)       # not a run directory: said first
        check_writable(Path(args.run_dir) / "report.html", "report page")
    if args.json:
        _, s = report.load_run(args.run_dir)
        print(json.dumps(s, indent=2))
    else:
        print(report.render(args.run_dir))
    tl = Path(args.run_dir) / "timeline.json"
    if tl.is_file():
        from jvmos import htmlreport
        try:
            timeline = json.loads(tl.read_text())
        except (json.JSONDecodeError, UnicodeDecodeError) as e:
            raise JvmosError(f"{tl} is damaged: {e}")
        paths = htmlreport.timeline_figure(timeline, Path(args.run_dir) / "timeline")
        print(f"\ntimeline: {len(timeline.get('intervals') or [])} interval(s) of "
              f"{timeline.get('interval_s')} s drawn in {', '.join(str(p) for p in paths)}",
              file=sys.stderr if args.json else sys.stdout)
    if args.html:
        from jvmos import htmlreport
        page = htmlreport.write_run_html(Path(args.run_dir))
        print(f"report page: {page}", file=sys.stderr if args.json else sys.stdout)
    return 0


def cmd_index(args) -> int:
    """An experiment's directory (it has tables: *.md) gets its page, with a report.html per
    recording; a directory of experiments gets a page linking theirs."""
    from jvmos import htmlreport
    from jvmos.writable import check_writable
    d = Path(args.dir)
    if d.is_dir():                  # (not a directory: said by htmlreport)
        check_writable(d / "index.html", "index page")
    if d.is_dir() and any(d.glob("*.md")):
        page = htmlreport.write_index_html(d, args.title or f"jvmos: {d.name}")
    else:
        page = htmlreport.write_suite_index(d, args.title or "jvmos results")
    print(f"index: {page}")
    return 0


def cmd_export(args) -> int:
    from jvmos import export
    path = export.export(Path(args.run_dir), args.format,
                         Path(args.out) if args.out else None)
    print(f"{args.format}: {path}")
    return 0


def calibrate_in_situ(args, jvm, path: Path, log) -> int:
    from jvmos import insitu, record as rec
    if args.refit:
        r = insitu.refit(Path(args.refit), jvm)
        insitu.store(path, r)
        print("\n".join(insitu.summary_lines(r)))
        print(f"wrote θ (refitted from {args.refit}/insitu.json) into {path}")
        return 0
    if args.in_situ_requests < 8:
        raise JvmosError("--in-situ-requests must be at least 8 (the doses open a connection "
                         "every 1, 2 and 4 requests)")
    terms = [x.strip() for x in args.in_situ_terms.split(",") if x.strip()]
    bad = [x for x in terms if x not in insitu.DESIGNS]
    if bad or not terms:
        raise JvmosError(f"--in-situ-terms: unknown {', '.join(bad) or 'none'} (known: "
                         f"{', '.join(insitu.DESIGNS)})")
    try:
        chunks = sorted({int(x) for x in args.in_situ_chunks.split(",") if x.strip()})
    except ValueError:
        chunks = []
    if len(chunks) < 3 or chunks[0] < 1 or chunks[-1] > 16 << 20:
        raise JvmosError(f"--in-situ-chunks: three or more write sizes in bytes, 1 to "
                         f"16,777,216 (got '{args.in_situ_chunks}')")
    out = rec.prepare_out(Path(args.out) if args.out else rec.default_out("insitu"))
    req, trials = args.in_situ_requests, args.trials
    # per term, in this order: where its windows go and how it is measured
    fits = {
        "keep-alive": (out, lambda d: insitu.calibrate_links(
            jvm, servers=trials, n=req, out=d, log=log)),
        # the write's dose is a server option: groups of four live servers
        "bigger-chunks": (out / "bigger-chunks", lambda d: insitu.calibrate_chunks(
            jvm, groups=trials, n=max(8, req // 5), out=d, log=log, chunks=chunks)),
        # two live servers per group, a thread per connection and a pool, the same doses
        "thread-pool": (out / "thread-pool", lambda d: insitu.calibrate_threads(
            jvm, groups=trials, n=req, out=d, log=log)),
        # a pair of live servers per dose: a new Inflater per inflation, one reused
        "reuse-native-buffers": (out / "reuse-native-buffers", lambda d:
                                 insitu.calibrate_inflaters(jvm, groups=trials, n=req, out=d,
                                                            log=log)),
        # a pair of fresh servers per heap size, without and with -XX:+AlwaysPreTouch
        "pretouch": (out / "pretouch", lambda d: insitu.calibrate_faults(
            jvm, groups=trials, n=max(2000, 4 * req), out=d, log=log)),
    }
    written = []
    for term, (d, fit) in fits.items():
        if term in terms:
            r = fit(d)
            insitu.store(path, r)
            print("\n".join(insitu.summary_lines(r)))
            written.append(f"{d}/insitu.json")
    print(f"wrote θ ({', '.join(terms)}) into {path}; the windows: {', '.join(written)}")
    return 0


def cmd_calibrate(args) -> int:
    from jvmos import calibrate as cal
    from jvmos.calibrate_constants import calibrate_all, calibrate_constants
    from jvmos.jdk import discover_jdks
    path = cal.platform_path(args.platform)
    existing = cal.load(path)
    log = lambda m: print(m, file=sys.stderr, flush=True)
    if args.trials is None:
        args.trials = 12 if args.in_situ else 5
    if args.trials < 2:
        raise JvmosError("--trials must be at least 2 (for an interval)")
    if args.chunk is not None and args.chunk <= 0:
        raise JvmosError("--chunk must be a positive number of bytes")
    # the platform file is checked before anything is measured (a read-only one that lacks
    # nothing is still shown)
    from jvmos.writable import check_writable
    writable = lambda: check_writable(path, "platform file")
    if (not existing or args.force or args.probes or args.sampler or args.constants
            or args.every_jdk or args.in_situ):
        writable()
    jvms = discover_jdks()
    if args.jdk:
        from jvmos.experiments.common import select_jdks
        jvms = select_jdks([args.jdk])
    if not jvms:
        raise JvmosError("no JDK found: the platform constants are measured on a JVM "
                         "(install one, or give --jdk HOME)")
    if args.in_situ:
        return calibrate_in_situ(args, jvms[0], path, log)
    from jvmos import engine as engine_mod, enginecost
    if not existing or args.force:
        # the probe costs and the JNI copy cost models are measured with the compiled engine
        engine_mod.check_built(engine_mod.LAYERS)
        existing = calibrate_all(jvms, path, trials=args.trials, chunk=args.chunk, log=log)
        cal.save(path, existing)
        print(f"wrote {path}")
    elif args.probes:
        engine_mod.check_built(engine_mod.LAYERS)
        existing["engine_probes"] = enginecost.calibrate(trials=args.trials, log=log)
        cal.save(path, existing)        # at once: kept if a JNI copy model fails
        # each JNI copy model subtracts the engine's window: measured again with the new one
        existing["copy"]["jni_region"] = cal.calibrate_jni_models(
            jvms, existing["engine_probes"], trials=args.trials, log=log)
        cal.save(path, existing)
        print(f"updated the compiled engine's probe costs and the JNI copy cost models in "
              f"{path}")
    else:
        # fill in what an older platform file lacks; re-measure the constants on request
        changed = []
        if any(k not in existing["copy"] for k in ("malloc_call", "free_call", "page_fault")):
            writable()
            existing["copy"].update(cal.calibrate_memory(args.trials))
            changed.append("memory costs")
        nio = existing["copy"].setdefault("nio_heap_to_direct", {})
        if str(jvms[0].home) not in nio:
            writable()
            nio[str(jvms[0].home)] = cal.calibrate_nio(jvms[0], args.trials)
            changed.append("NIO copy")
        if enginecost.incomplete(existing.get("engine_probes")):
            # a file made before a compiled layer's probe costs were measured
            writable()
            engine_mod.check_built(engine_mod.LAYERS)
            existing["engine_probes"] = enginecost.merge(
                existing.get("engine_probes"), enginecost.calibrate(args.trials, log=log))
            # a JNI copy model made with the window just replaced no longer fits it: dropped,
            # measured again by the next --mode count recording (or --every-jdk, --probes)
            jr = existing["copy"].get("jni_region") or {}
            for home in [h for h, m in jr.items()
                         if cal.jni_model_stale(m, existing["engine_probes"])]:
                del jr[home]
                changed.append(f"JNI copy model of {home} dropped (its probe window changed)")
            cal.save(path, existing)    # at once: kept if the constants fail
            changed.append("the compiled engine's probe costs")
        chunk_changed = (args.chunk is not None and existing.get("constants")
                         and existing["constants"].get("chunk_bytes") != args.chunk)
        if args.constants or not existing.get("constants") or chunk_changed:
            writable()
            existing["constants"] = calibrate_constants(existing, jvms[0], path, args.trials,
                                                        args.chunk, log=log)
            changed.append("platform constants")
        if changed:
            cal.save(path, existing)
            print(f"updated {', '.join(changed)} in {path}")
        else:
            print(f"platform file {path} (created {existing['created']}); --force recalibrates")
    if args.sampler:
        from jvmos import samplercost
        jvm = jvms[0]
        log(f"measuring what a CPU profile window costs JDK {jvm.version} (jvmos agent "
            f"--sample; {args.trials} blocks, about {42 * args.trials + 20} s)")
        existing["sampler"] = samplercost.calibrate(jvm, blocks=args.trials, log=log)
        cal.save(path, existing)
        print(f"updated the sampler's cost in {path}")
    if args.every_jdk:
        # what recordings would otherwise measure lazily, the first time they meet a JDK
        engine_mod.check_built(engine_mod.LAYERS)
        existing = cal.ensure_calibrated(existing, path, discover_jdks(),
                                         list(engine_mod.LAYERS), "count", log)
        print(f"every JDK found has its NIO copy and JNI copy calibrations in {path}")
    print_platform(existing)
    return 0


def _floored(m: dict) -> str:
    """What print_platform adds after a model with a fitted cost floored at 0."""
    from jvmos.analyzers.stats import floored_notes
    fl = floored_notes(m)
    return f"  ({'; '.join(fl)})" if fl else ""


def print_platform(existing: dict) -> None:
    c = existing["copy"]
    for key in ("kernel_copyin", "kernel_copyout", "memcpy"):
        m = c[key]
        lo, hi = m["ns_per_byte_ci95"]
        print(f"{key:<16} {m['ns_per_byte']:.4f} ns/byte (95% CI {lo:.4f}..{hi:.4f}), "
              f"{m['ns_per_call']:.0f} ns per call  [{m['what']}]{_floored(m)}")
    for home, m in c.get("nio_heap_to_direct", {}).items():
        lo, hi = m["ns_per_byte_ci95"]
        print(f"nio copy, JDK {m.get('jdk_version')}: {m['ns_per_byte']:.4f} ns/byte "
              f"(95% CI {lo:.4f}..{hi:.4f}), {m['ns_per_call']:.1f} ns per copy  [{home}]{_floored(m)}")
    print("paper (Solaris, 2008): 10 µs per 100 bytes copied = 100 ns/byte")
    for home, m in c.get("jni_region", {}).items():
        if m.get("unresolved"):
            print(f"JNI Region copy, JDK {m.get('jdk_version')}: unresolved ({m['unresolved']})  "
                  f"[{home}]")
            continue
        print(f"JNI Region copy, JDK {m.get('jdk_version')}: {m['ns_per_call']:.1f} ns per call "
              f"+ {m['ns_per_byte']:.4f} ns/byte  [{home}]{_floored(m)}")
    for key in ("malloc_call", "free_call", "page_fault"):
        m = c.get(key)
        if m:
            lo, hi = m["ns_per_call_ci95"]
            print(f"{key:<16} {m['ns_per_call']:.1f} ns (95% CI {lo:.1f}..{hi:.1f})  [{m['what']}]")
    k = existing.get("constants")
    if k:
        from jvmos.heuristic.model import PAPER_CONSTANTS_US
        print(f"platform constants (JDK {k['jdk_version']}, {k['trials']} trials, "
              f"chunk {k['chunk_bytes']} bytes; paper: Solaris 10, dual SPARC):")
        for name in [x for x in ("C_nt", "C_nt_kernel", "C_link", "C_file", "C_io_chunk")
                     if x in k]:
            v = k[name]
            lo, hi = v["ci95_us"]
            paper = PAPER_CONSTANTS_US.get(name)
            print(f"  {name:<11} {v['mean_us']:9.2f} µs  (95% CI {lo:.2f}..{hi:.2f})   paper: "
                  + (f"{paper:g} µs" if paper else "—") + f"   [{v['what']}]")
    ep = existing.get("engine_probes")
    if ep:
        from jvmos import enginecost
        print(enginecost.print_summary(ep))
    if existing.get("sampler"):
        from jvmos import samplercost
        print(samplercost.summary(existing["sampler"]))


PREDICT_EXAMPLES = """\
examples:
  jvmos predict --connections 100 --chunks 133 --exec-time-ms 1000
                                     # constants from the platform file (jvmos calibrate)
  jvmos predict --c-nt 173 --c-link 140 --c-io-chunk 3.3 --connections 100 --chunks 133
                                     # the paper's constants: equation 6 gives 75.2 ms
  jvmos predict --connections 1000 --chunks 8 --files 50 --mem-ms 40 --exec-time-ms 9000 --json
  jvmos predict --from-run results/tomcat/runs/40x40
                                     # the workload a recording counted, predicted and compared
                                     # (its measured memory cost is not an input: give --mem-ms)
  jvmos predict --from-run RUN --what-if thread-pool,keep-alive --keep 8
                                     # what a pool of 8 and keep-alive would save this run
"""


def cmd_what_if(args) -> int:
    """jvmos predict --from-run RUN --what-if NAME[,NAME]: the saving of each change."""
    from jvmos import calibrate as cal
    from jvmos.heuristic import whatif
    from jvmos.report import load_run
    names = [x.strip() for x in args.what_if.split(",") if x.strip()]
    bad = [x for x in names if x not in whatif.WHAT_IFS]
    if bad or not names:
        raise JvmosError(f"unknown --what-if {', '.join(bad) or '(empty)'} (known: "
                         f"{', '.join(whatif.WHAT_IFS)})")
    if not args.from_run:
        raise JvmosError("--what-if needs --from-run RUN_DIR (the recording whose counts it "
                         "removes)")
    if args.keep < 0:
        raise JvmosError("--keep must not be negative")
    path = cal.platform_path(args.platform)
    platform = cal.load(path)
    if not platform:
        raise JvmosError(f"no platform file at {path}: run 'jvmos calibrate'")
    manifest, summary = load_run(args.from_run)
    layers = set(manifest.get("layers") or [])
    missing = sorted({f"{n} needs the {whatif.WHAT_IFS[n].layer} layer" for n in names
                      if whatif.WHAT_IFS[n].layer not in layers})
    if missing:
        raise JvmosError(f"{args.from_run} was recorded with layers "
                         f"{', '.join(sorted(layers)) or 'none'}: {'; '.join(missing)}")
    part, jdk, who = whatif.jvm_of_run(summary, args.pid)
    res = [whatif.from_run(n, part, platform, jdk, args.keep,
                           hooks=whatif.count_hooks(manifest, n)) for n in names]
    if args.json:
        print(json.dumps({"run": str(args.from_run), "pid": who, "platform": str(path),
                          "status": summary.get("status"), "what_if": res}, indent=2))
        return 0
    ms = lambda us: f"{us / 1e3:,.3f} ms"
    print(f"what-if for {args.from_run}, pid {who} (constants: {path})")
    if summary.get("status") != "complete":
        print(f"  note: the recording ended {summary.get('status')}: its counts may be short")
    for r in res:
        w = whatif.WHAT_IFS[r["what_if"]]
        lo, hi = r["predicted_ci95_us"]
        print(f"{r['what_if']}: {w.change} [{r['term']}]")
        print(f"  removes {r['removed']:,} of {r['counted']:,} {r['count_what']}"
              + (f" (keeping {r['keep']:,})" if r["keep"] else ""))
        if r.get("count_caveat"):
            print(f"  note: {r['count_caveat']}: the count is an upper bound")
        print(f"  predicted saving {ms(r['predicted_us'])} (95% interval {ms(lo)} .. {ms(hi)}; "
              f"{r['interval_method']}); {r['bound']}")
        if "scaled_from_intervention_us" in r:
            slo, shi = r["scaled_from_intervention_ci95_us"]
            v = r["validation"]
            print(f"  scaled from the intervention (its measured CPU saving per use, x this "
                  f"run's count; an estimate from jvmos's request server, not a measurement of "
                  f"this application): {ms(r['scaled_from_intervention_us'])} (95% interval "
                  f"{ms(slo)} .. {ms(shi)}); made by {v.get('source')} on "
                  f"{v.get('jdk_label') or v.get('jdk')}, commit {v.get('commit') or 'unknown'}")
        if "theta" in r:
            t = r["theta"]
            held = ", ".join(f"{k}: {v['verdict']}" for k, v in t["held_out"].items()) or \
                "no held-out test yet (jvmos run held-out)"
            if t["refused"]:
                print(f"  the whole change (θ): not priced: {t['refused']}")
            else:
                print(f"  the whole change (θ, the JVM's CPU per use less the JIT's, "
                      f"{t['removed']:,} {t.get('unit') or 'use'}(s) removed, fitted "
                      f"in place on {t['source']['jdk_label']}, {t['source']['date']}, commit "
                      f"{(t['source']['commit'] or '?')[:12]}): {ms(t['whole_change_us'])} "
                      f"({t['interval']}: {ms(t['whole_change_ci_us'][0])} .. "
                      f"{ms(t['whole_change_ci_us'][1])}); held-out: {held}")
        print(f"  on this machine: {r['validation']['status']}"
              + (f" (jvmos run interventions, {r['validation']['date']}: measured "
                 f"{r['validation']['measured_cpu_ms']:,.2f} ms of CPU where "
                 f"{r['validation']['predicted_ms']:,.2f} ms were predicted, n="
                 f"{r['validation']['trials']} per arm)" if "date" in r["validation"] else ""))
    return 0


DIFF_EXAMPLES = """\
examples:
  jvmos diff results/runs/before results/runs/after
  jvmos diff b1,b2,b3 a1,a2,a3 --what-if keep-alive --units 2000,2000 --unit page --out /tmp/d

BEFORE and AFTER must be recorded in the same mode; a category either side lacks counts 0.
"""


def _dirs(text: str) -> list:
    dirs = [x.strip() for x in text.split(",") if x.strip()]
    if not dirs:
        raise JvmosError(f"no run directory in '{text}'")
    return dirs


def cmd_diff(args) -> int:
    from jvmos import calibrate as cal, diff
    from jvmos.heuristic import whatif
    names = []
    if args.what_if:
        names = [x.strip() for x in args.what_if.split(",") if x.strip()]
        bad = [x for x in names if x not in whatif.WHAT_IFS]
        if bad or not names:
            raise JvmosError(f"unknown what-if {', '.join(bad) or args.what_if!r} (known: "
                             f"{', '.join(whatif.WHAT_IFS)})")
    units = (None, None)
    if args.units:
        try:
            units = tuple(float(x) for x in args.units.split(","))
        except ValueError:
            units = ()
        if len(units) != 2 or min(units) <= 0:
            raise JvmosError(f"--units wants two positive numbers, BEFORE,AFTER (got "
                             f"'{args.units}')")
    platform = None
    if names:
        path = cal.platform_path(args.platform)
        platform = cal.load(path)
        if not platform:
            raise JvmosError(f"no platform file at {path}: run 'jvmos calibrate' (--what-if "
                             f"prices the removed uses with its constants)")
    if args.out:
        from jvmos.writable import check_writable
        check_writable(args.out, "--out directory", "dir")
    res = diff.run(_dirs(args.before), _dirs(args.after), args.pid, units, args.unit, names,
                   platform)
    if args.out:
        res["written"] = [str(p) for p in diff.write(Path(args.out), res)]
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    for t in diff.tables(res):
        print(t.markdown())
    for n in diff.NOTES:
        print(f"- {n}")
    if args.out:
        print(f"\nwritten: {', '.join(res['written'])}")
    return 0


def cmd_predict(args) -> int:
    from jvmos.heuristic import model
    from jvmos import calibrate as cal
    if args.what_if:
        return cmd_what_if(args)
    inline = {"C_nt": args.c_nt, "C_link": args.c_link, "C_io_chunk": args.c_io_chunk,
              "C_file": args.c_file}
    flag = lambda name: "--" + name.lower().replace("_", "-")
    for name, v in inline.items():
        if v is not None and (v < 0 or v != v):
            raise JvmosError(f"{flag(name)} must be a non-negative number of microseconds")
    for name in ("connections", "chunks", "threads", "files", "file_chunks", "mem_ms",
                 "exec_time_ms"):
        v = getattr(args, name)
        if v is not None and v < 0:
            raise JvmosError(f"--{name.replace('_', '-')} must not be negative")
    k = None
    if any(inline[c] is None for c in ("C_nt", "C_link", "C_io_chunk")):
        path = cal.platform_path(args.platform)
        k = model.from_platform(cal.load(path))
        if k is None:
            missing = [flag(c) for c in ("C_nt", "C_link", "C_io_chunk") if inline[c] is None]
            raise JvmosError(f"no platform constants in {path}: run 'jvmos calibrate', or give "
                             f"{', '.join(missing)} (µs)")
    if k is None:
        k = model.Constants(C_nt=inline["C_nt"], C_link=inline["C_link"],
                            C_io_chunk=inline["C_io_chunk"])
    for name, v in inline.items():
        if v is not None:
            setattr(k, name, v)
            k.ci95.pop(name, None)        # a value given inline has no interval
    measured = None
    mem_us = None if args.mem_ms is None else args.mem_ms * 1e3
    if args.from_run:
        from jvmos.report import load_run
        _, summary = load_run(args.from_run)
        # the counts of the run are the workload; its measured memory cost is not an input
        # (it is part of the cost the prediction is compared with): C_mem is --mem-ms or 0
        w = model.workload_from_summary(summary, mem_us, "given: --mem-ms")
        measured = model.measured_from_summary(summary)
    else:
        if args.connections is None or args.chunks is None:
            raise JvmosError("give --connections and --chunks (or --from-run RUN_DIR)")
        w = model.Workload(connections=args.connections, chunks=args.chunks, threads=args.threads,
                           files=args.files, file_chunks=args.file_chunks,
                           exec_time_us=args.exec_time_ms * 1e3 if args.exec_time_ms else None)
        if mem_us is not None:
            w.mem_us, w.mem_source = mem_us, "given: --mem-ms"
    res = model.predict(k, w)
    if measured is not None:
        pct = lambda real, est: 100.0 * (real - est) / real if real else None
        no_mem = res["C_os_us"] - w.mem_us
        res["measured"] = {
            "source": str(args.from_run),
            "C_os_us": measured["C_os_us"], "mem_us": measured["mem_us"],
            "without_mem_us": measured["without_mem_us"],
            "by_resource_us": measured["by_resource_us"],
            # (real - predicted) / real on everything the probes measured
            "diff_pct": pct(measured["C_os_us"], res["C_os_us"]),
            # the memory-free part of both: predicted without C_mem against measured without
            # the run's memory cost (neither side uses the run's memory)
            "predicted_without_mem_us": no_mem,
            "without_mem_diff_pct": pct(measured["without_mem_us"], no_mem)}
    if args.json:
        print(json.dumps(res, indent=2))
        return 0
    print(render_prediction(res))
    m = res.get("measured")
    if m:
        ms = lambda us: f"{us / 1e3:,.3f} ms"
        d, dn = m["diff_pct"], m["without_mem_diff_pct"]
        print(f"measured by the probes in {m['source']} (guaranteed overhead, no synchronization "
              f"time): {ms(m['C_os_us'])}"
              + ("" if d is None else f"; (real - predicted) / real = {d:+.1f}%"))
        print(f"  of which memory {ms(m['mem_us'])} (this run's own measurement: not an input of "
              f"the prediction, whose C_mem is {ms(w.mem_us)}, {w.mem_source})")
        print(f"  without memory: measured {ms(m['without_mem_us'])}, predicted "
              f"{ms(m['predicted_without_mem_us'])}"
              + ("" if dn is None else f"; (real - predicted) / real = {dn:+.1f}%"))
    return 0


def render_prediction(res: dict) -> str:
    k, w, t = res["constants_us"], res["workload"], res["terms"]
    ci = res.get("constants_ci95_us", {})
    ms = lambda us: f"{us / 1e3:,.3f} ms"
    lines = ["constants (µs): " + ", ".join(
        f"{n} {v:g}" + (f" ({ci[n][0]:.3g}..{ci[n][1]:.3g})" if n in ci else "")
        for n, v in k.items() if v or n in ("C_nt", "C_link", "C_io_chunk"))]
    n_thr = w["threads"] if w["threads"] is not None else w["connections"]
    fc = w["file_chunks"] if w["file_chunks"] is not None else w["chunks"]
    lines.append(f"workload: {w['connections']:,} connections x {w['chunks']:g} chunks, "
                 f"{n_thr:,} threads, {w['files']:,} files x {fc:g} chunks, "
                 f"C_mem {w['mem_us'] / 1e3:g} ms ({w['mem_source']})")
    lines += [
        f"(2) C_thr  = n_thr x C_nt = {n_thr:,} x {k['C_nt']:g} = {ms(t['eq2_C_thr_us'])}",
        f"(4) C_net  = n_links x (n_chunks x C_IOchunk + C_link) = {w['connections']:,} x "
        f"({w['chunks']:g} x {k['C_io_chunk']:g} + {k['C_link']:g}) = {ms(t['eq4_C_net_us'])}",
        f"(5) C_file = n_files x (n_chunks x C_IOchunk + C_file) = {w['files']:,} x "
        f"({fc:g} x {k['C_io_chunk']:g} + {k['C_file']:g}) = {ms(t['eq5_C_file_us'])}",
        f"(3) C_IO   = C_net + C_file = {ms(t['eq3_C_IO_us'])}",
    ]
    lines.append(f"(1) C_os   = C_thr + C_IO + C_mem = {ms(t['eq1_C_os_us'])}"
                 + (f"  (95% interval {ms(res['C_os_ci95_us'][0])} .. {ms(res['C_os_ci95_us'][1])})"
                    if "C_os_ci95_us" in res else ""))
    lines.append(f"(6) C_os   = n_thr x (C_nt + C_link + n_chunks x C_IOchunk) + C_mem = "
                 f"{ms(t['eq6_C_os_us'])}  (server in steady state)")
    if w["exec_time_us"]:
        sp = res.get("speedup")
        lines.append(f"execution time T = {ms(w['exec_time_us'])}: the OS costs "
                     f"{res['overhead_pct']:.1f}% of it")
        if sp is None:
            lines.append("predicted speedup: undefined (C_os >= T: the constants or the "
                         "workload description do not fit this run)")
        else:
            iv = res.get("speedup_ci95")
            lines.append(f"predicted speedup of an OS-less, hypervisor-hosted JVM: T / (T - C_os) "
                         f"= {sp:.3f}x" + (f" (95% interval {iv[0]:.3f}x .. {iv[1]:.3f}x)"
                                           if iv and None not in iv else ""))
    return "\n".join(lines)


def cmd_agent(args) -> int:
    from jvmos import agent
    return agent.main(args)


def agent_examples() -> str:
    from jvmos.agent import EXAMPLES
    return EXAMPLES


def cmd_run(args, extra) -> int:
    from jvmos.experiments import EXPERIMENTS
    exp = EXPERIMENTS.get(args.experiment)
    if exp is None:
        raise JvmosError(f"unknown experiment '{args.experiment}' (known: {', '.join(EXPERIMENTS)})")
    from jvmos.experiments import common
    first = len(common.OUT_DIRS)
    rc = exp(extra)
    if rc == 0:
        from jvmos import htmlreport
        for out in common.OUT_DIRS[first:]:
            if out.is_dir():
                page = htmlreport.write_index_html(out, f"jvmos run {args.experiment}")
                print(f"index: {page}")
    return rc


class Parser(argparse.ArgumentParser):
    """Argument errors in jvmos's one-line form (argparse prints usage and exits otherwise)."""

    def error(self, message):
        raise JvmosError(f"{message} (see '{self.prog} -h')", 2)


def _verb_doctor(sub) -> None:
    d = sub.add_parser("doctor", help="check what jvmos needs on this machine",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="example:\n  jvmos doctor      # exit 0 when every required part works\n")
    d.set_defaults(func=cmd_doctor)


def _verb_record(sub) -> None:
    r = sub.add_parser("record", help="trace a command or a running JVM",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       usage="jvmos record [options] [--interval S [--count N]] -- CMD ARGS...  |  "
                             "jvmos record --pid PID [--duration S] [--interval S [--count N]]",
                       epilog=RECORD_EXAMPLES)
    r.add_argument("--layers", default=",".join(DEFAULT_LAYERS), help=layers_help())
    r.add_argument("--out", help="run directory (default: results/runs/<time>-record)")
    r.add_argument("--mode", default=Mode.TIME.value, metavar="|".join(Mode),
                   help="time: entry+return probes, measured times corrected for the probe "
                        "window (default; the costliest); count: entry probes only, exact "
                        "calls and bytes, JNI copy times from a calibrated cost model; sample: "
                        "async-profiler only (CPU samples with Java and kernel frames, lowest "
                        "overhead, no counts)")
    r.add_argument("--sample", action="store_true",
                   help="with --mode count or time: also sample with async-profiler; in count "
                        "mode the times then come from the samples")
    r.add_argument("--wall", action="store_true",
                   help="with --sample or --mode sample: also sample the threads by the wall "
                        "clock (async-profiler's wall mode, every 10 ms) and show the Java call "
                        "sites where they waited off the CPU, by boundary")
    r.add_argument("--pid", type=int, help="attach to this running process")
    r.add_argument("--duration", type=float, help="with --pid: detach after S seconds")
    r.add_argument("--interval", type=float, metavar="S",
                   help="the live view (a launched command or --pid): every S seconds, print "
                        "the interval's "
                        "calls, bytes and time per category and its guaranteed overhead as a "
                        "share of the target's CPU in the interval; kept in timeline.json")
    r.add_argument("--count", type=int, metavar="N",
                   help="with --interval: stop after N intervals (default: until --duration "
                        "or Ctrl-C)")
    r.add_argument("--metrics-file", metavar="FILE",
                   help="with --interval: rewrite FILE each interval with the recording so "
                        "far as OpenMetrics text (for node-exporter's textfile collector)")
    r.add_argument("--jdk", action="append",
                   help="JDK home whose libjvm.so to probe when the command is not a JDK "
                        "launcher (repeatable; default: every JDK found)")
    r.add_argument("--platform", help="platform file with calibrated costs "
                                      "(default ~/.local/share/jvmos/platform.json)")
    r.add_argument("--scope", choices=["process", "host"], default="process",
                   help="process (default): uprobes trap only in the traced processes (other "
                        "processes mapping libc or libjvm.so are not slowed), and libc's "
                        "wrappers stand for the I/O and memory syscalls; host: those layers "
                        "use the syscall tracepoints instead, which see calls made without "
                        "libc (raw syscalls, io_uring aside) and cost every process a little")
    r.add_argument("command", nargs=argparse.REMAINDER, help="command to launch, after --")
    r.set_defaults(func=cmd_record)


def _verb_report(sub) -> None:
    rp = sub.add_parser("report", help="print a finished run directory",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="examples:\n  jvmos report results/runs/20261122-101500-record\n"
                               "  jvmos report --json RUN_DIR | jq .categories\n")
    rp.add_argument("run_dir")
    rp.add_argument("--json", action="store_true", help="print summary.json")
    rp.add_argument("--html", action="store_true",
                    help="also write RUN_DIR/report.html: one self-contained page (tables, "
                         "figures as inline SVG, provenance, warnings, flame graph links)")
    rp.set_defaults(func=cmd_report)


def _verb_index(sub) -> None:
    ix = sub.add_parser("index", help="write DIR/index.html: an experiment's page (its tables, "
                                      "figures and recordings), or a page linking the "
                                      "experiment pages under DIR",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="examples:\n  jvmos index results/matmul\n"
                               "  jvmos index results/runs/demo-20261124-101500\n")
    ix.add_argument("dir")
    ix.add_argument("--title")
    ix.set_defaults(func=cmd_index)


def _verb_export(sub) -> None:
    ex = sub.add_parser("export", help="write a finished run for other tools (OpenMetrics, pprof)",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog="examples:\n"
                               "  jvmos export RUN_DIR --format openmetrics   # RUN_DIR/metrics.prom\n"
                               "  jvmos export RUN_DIR --format pprof --out /tmp/p.pb.gz\n"
                               "  go tool pprof -top -tagfocus jvmos_category=io_syscall /tmp/p.pb.gz\n")
    ex.add_argument("run_dir")
    ex.add_argument("--format", required=True, metavar="|".join(("openmetrics", "pprof")),
                    help="openmetrics: the summary as OpenMetrics text (node-exporter's textfile "
                         "collector, a push gateway); pprof: the sampled stacks (record with "
                         "--sample) as a gzipped profile.proto, labelled with the jvmos category")
    ex.add_argument("--out", help="output file (default RUN_DIR/metrics.prom or "
                                  "RUN_DIR/profile.pb.gz)")
    ex.set_defaults(func=cmd_export)


def _verb_calibrate(sub) -> None:
    c = sub.add_parser("calibrate", help="measure this machine's copy and probe costs (platform file)",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog="examples:\n  jvmos calibrate            # show, or measure what is missing\n"
                              "  jvmos calibrate --force    # measure everything again (a few minutes)\n"
                              "  jvmos calibrate --probes   # the compiled engine's probe costs and the JNI copy models again\n"
                              "  jvmos calibrate --constants --chunk 4096   # C_nt, C_link, C_file, C_io_chunk again\n"
                              "  jvmos calibrate --sampler  # what agent --sample's windows cost a JVM\n")
    c.add_argument("--platform", help="platform file (default ~/.local/share/jvmos/platform.json)")
    c.add_argument("--force", action="store_true", help="recalibrate even if the file exists")
    c.add_argument("--trials", type=int,
                   help="trials per measurement (default 5; with --in-situ, servers: 12)")
    c.add_argument("--every-jdk", action="store_true",
                   help="also measure, for every JDK found, the per-JDK figures that recordings "
                        "otherwise measure the first time they meet that JDK (NIO copy, JNI "
                        "copy cost model)")
    c.add_argument("--probes", action="store_true",
                   help="(re)measure only the compiled engine's probe costs and, with its "
                        "new window, the JNI copy cost model of each JDK (--jdk: that one)")
    c.add_argument("--sampler", action="store_true",
                   help="(re)measure what a CPU profile window (async-profiler, jvmos agent "
                        "--sample) costs the JVM: CPU per window started and stopped, and per "
                        "sample, on a fixed loop (--trials blocks; --jdk: on that JDK)")
    c.add_argument("--constants", action="store_true",
                   help="(re)measure the heuristic's platform constants C_nt, C_link, C_file, "
                        "C_io_chunk (about a minute: each is a traced microbenchmark)")
    c.add_argument("--chunk", type=int,
                   help="I/O chunk size in bytes for C_io_chunk (default 8192)")
    c.add_argument("--jdk", help="JDK home to measure the platform constants on "
                                 "(default: the first found)")
    c.add_argument("--in-situ", action="store_true",
                   help="fit θ, the CPU per use less the JIT's, in place on jvmos's request "
                        "server (dose-response of connections, writes and threads, no probe; "
                        "--trials servers or groups, default 12 with it) and store it with "
                        "its sources in the platform file")
    c.add_argument("--out", help="with --in-situ: where its windows go (default "
                                 "results/runs/<time>-insitu)")
    c.add_argument("--in-situ-requests", type=int, default=1000,
                   help="with --in-situ: requests per window (default 1000; writes: a "
                        "fifth; first touches: 4 x, at least 2,000, so that the young "
                        "generation grows into the heap)")
    c.add_argument("--in-situ-terms",
                   default="keep-alive,bigger-chunks,thread-pool,pretouch,reuse-native-buffers",
                   help="with --in-situ: the what-ifs to fit θ for (default "
                        "keep-alive,bigger-chunks,thread-pool,pretouch,reuse-native-buffers)")
    c.add_argument("--in-situ-chunks", default="1024,2048,4096,8192", metavar="BYTES,...",
                   help="with --in-situ: the write sizes of θ for writes (bigger-chunks), one "
                        "live server each (default 1024,2048,4096,8192: an unbuffered "
                        "stream's writes up to a buffer's)")
    c.add_argument("--refit", metavar="DIR",
                   help="with --in-situ: fit θ again from a finished in-situ run's windows "
                        "(DIR/insitu.json; nothing measured) and store it")
    c.set_defaults(func=cmd_calibrate)


def _verb_predict(sub) -> None:
    pr = sub.add_parser("predict", help="predict what the OS costs a workload (equations 1-6)",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog=PREDICT_EXAMPLES)
    pr.add_argument("--platform", help="platform file with the constants (jvmos calibrate)")
    pr.add_argument("--c-nt", type=float, help="µs per native thread (C_nt)")
    pr.add_argument("--c-link", type=float, help="µs per accepted connection (C_link)")
    pr.add_argument("--c-io-chunk", type=float, help="µs per blocking I/O chunk (C_I/Ochunk)")
    pr.add_argument("--c-file", type=float, help="µs per file opened (C_file)")
    pr.add_argument("--from-run", metavar="RUN_DIR",
                    help="take the workload from a recording (connections, I/O operations, "
                         "threads, files and T as counted; C_mem stays --mem-ms or 0, never the "
                         "run's own memory cost) and compare with what it measured")
    pr.add_argument("--connections", type=int, help="connections (n_links)")
    pr.add_argument("--chunks", type=float, help="I/O chunks per connection")
    pr.add_argument("--threads", type=int, help="native threads started (default: connections)")
    pr.add_argument("--files", type=int, default=0, help="files opened (default 0)")
    pr.add_argument("--file-chunks", type=float, help="I/O chunks per file (default: --chunks)")
    pr.add_argument("--mem-ms", type=float, help="C_mem in ms (default 0, as the paper)")
    pr.add_argument("--exec-time-ms", type=float, help="the workload's execution time T, for "
                                                       "the speedup T / (T - C_os)")
    pr.add_argument("--what-if", metavar="CHANGE[,CHANGE]",
                    help="with --from-run: the saving of a change to the application, one term "
                         "of C_os each: thread-pool, keep-alive, direct-buffers, bigger-chunks, "
                         "file-handles, pretouch, reuse-native-buffers (and whether jvmos run "
                         "interventions validated it on this machine)")
    pr.add_argument("--keep", type=int, default=0,
                    help="with --what-if thread-pool, keep-alive or file-handles: the uses the "
                         "change keeps (a pool's threads, the connections kept alive, the "
                         "files kept open; default 0)")
    pr.add_argument("--pid", type=int, help="with --what-if: the JVM of the recording to read "
                                            "(needed when it holds several)")
    pr.add_argument("--json", action="store_true", help="print the prediction as JSON")
    pr.set_defaults(func=cmd_predict)


def _verb_diff(sub) -> None:
    df = sub.add_parser("diff", help="what changed between two recordings (or two sets of "
                                     "repeats), per category",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog=DIFF_EXAMPLES)
    df.add_argument("before", help="the recording before the change (RUN_DIR, or RUN_DIR,RUN_DIR"
                                   ",... for repeats)")
    df.add_argument("after", help="the recording after it (the same forms)")
    df.add_argument("--what-if", metavar="CHANGE[,CHANGE]",
                    help="beside the difference, what 'jvmos predict --what-if CHANGE' "
                         "predicted from BEFORE (thread-pool, keep-alive, ...)")
    df.add_argument("--units", metavar="BEFORE,AFTER",
                    help="the units of work each side's recordings did (requests, pages: the "
                         "same for every repeat of a side), for CPU per unit")
    df.add_argument("--unit", default="unit", help="the name of a unit of work (default unit)")
    df.add_argument("--pid", type=int, help="the JVM to compare, when a recording holds several")
    df.add_argument("--platform", help="platform file (with --what-if)")
    df.add_argument("--out", help="also write DIR/diff.md, diff.json and diff.html (a table and "
                                  "a differential figure)")
    df.add_argument("--json", action="store_true", help="print the comparison as JSON")
    df.set_defaults(func=cmd_diff)


def _verb_agent(sub) -> None:
    ag = sub.add_parser("agent", help="a service: watch the host's JVMs, serve Prometheus metrics",
                        formatter_class=argparse.RawDescriptionHelpFormatter,
                        epilog=agent_examples())
    ag.add_argument("--config", help="TOML file with the options below (underscores for "
                                     "dashes); the command line overrides it; SIGHUP re-reads it")
    ag.add_argument("--layers", help="layers attached to each JVM, --mode count (default io)")
    ag.add_argument("--match", action="append", metavar="KEY=PATTERN[,KEY=PATTERN]",
                    help="watch only the JVMs whose user, main (class) or jar matches the "
                         "shell pattern; conditions of one --match all hold, several --match "
                         "are alternatives (default: every JVM)")
    ag.add_argument("--max-overhead", metavar="PCT%|none",
                    help="the estimated probe effect a JVM may have, as a share of its CPU "
                         "time (default 2%%): the io and jni layers are counted in a window "
                         "of every --interval sized to it; a layer is shed when even a 0.1 s "
                         "window would pass it")
    ag.add_argument("--interval", type=float, metavar="S",
                    help="seconds between two snapshots of a JVM's probes (default 5)")
    ag.add_argument("--scan", type=float, metavar="S",
                    help="seconds between two looks for new and exited JVMs (default 1)")
    ag.add_argument("--shed-backoff", type=float, metavar="S",
                    help="seconds before a shed layer is put back (default 60; doubled when "
                         "it is shed again right after its return, at most 900)")
    ag.add_argument("--listen", metavar="HOST:PORT",
                    help="address of the metrics endpoint, path /metrics (default "
                         "127.0.0.1:9377; read at start only)")
    ag.add_argument("--platform", help="platform file with the calibrated probe costs "
                                       "(default ~/.local/share/jvmos/platform.json)")
    ag.add_argument("--state-dir", help="directory for the engines' plans and logs (default: "
                                        "a temporary one, removed at the end)")
    ag.add_argument("--max-jvms", metavar="N",
                    help="watch at most N JVMs; the others selected are listed, with the "
                         "reason, in jvmos_jvm_unwatched and /status (default: no cap)")
    ag.add_argument("--sample", action="store_const", const=True,
                    help="CPU profiles: async-profiler in each watched JVM for "
                         "--sample-window seconds of every --sample-every, the last window "
                         "served as pprof at /debug/pprof/profile?pid=PID (needs jattach)")
    ag.add_argument("--sample-every", type=float, metavar="S",
                    help="seconds between two profile windows of a JVM (default 60)")
    ag.add_argument("--sample-window", type=float, metavar="S",
                    help="length of a profile window (default 5)")
    ag.add_argument("--otlp-endpoint", metavar="URL",
                    help="also push the metrics to an OpenTelemetry collector's OTLP/HTTP "
                         "receiver, e.g. http://127.0.0.1:4318 (POST URL/v1/metrics; default: "
                         "no push)")
    ag.add_argument("--otlp-every", type=float, metavar="S",
                    help="seconds between two OTLP pushes (default 15)")
    ag.add_argument("--no-calibrate", action="store_true",
                    help="refuse to start when the platform file lacks the probe costs of the "
                         "layers, instead of measuring them first (about a minute of "
                         "microbenchmarks on the host, as jvmos record does)")
    ag.set_defaults(func=cmd_agent)


def _verb_run(sub) -> None:
    x = sub.add_parser("run", help="run an experiment (paper tables)", add_help=False,
                       formatter_class=argparse.RawDescriptionHelpFormatter, epilog=RUN_EXAMPLES,
                       usage="jvmos run EXPERIMENT [options]  (jvmos run EXPERIMENT -h)")
    x.add_argument("experiment", nargs="?")
    x.set_defaults(func=cmd_run)


def build_parser():
    p = Parser(
        prog="jvmos", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Measure what the operating system costs a running JVM (eBPF: jvmos's "
                    "compiled probes).",
        epilog="verbs: doctor, record, report, index, export, calibrate, predict, diff, agent, "
               "run.  'jvmos VERB -h' has examples.")
    p.add_argument("--version", action="version", version=f"jvmos {__version__}")
    sub = p.add_subparsers(dest="verb", metavar="VERB")

    _verb_doctor(sub)
    _verb_record(sub)
    _verb_report(sub)
    _verb_index(sub)
    _verb_export(sub)
    _verb_calibrate(sub)
    _verb_predict(sub)
    _verb_diff(sub)
    _verb_agent(sub)
    _verb_run(sub)
    return p


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    p = build_parser()
    try:
        if argv and argv[0] == "run":
            sub = p._subparsers._group_actions[0].choices["run"]
            if len(argv) < 2 or argv[1] in ("-h", "--help"):
                sub.print_help()
                return 0 if len(argv) >= 2 else 2
            return cmd_run(argparse.Namespace(experiment=argv[1]), argv[2:])
        args = p.parse_args(argv)
        if not getattr(args, "func", None):
            p.print_help()
            return 2
        return args.func(args)
    except JvmosError as e:
        print(f"jvmos: error: {e.args[0]}", file=sys.stderr)
        return e.args[1] if len(e.args) > 1 else 2
    except KeyboardInterrupt:
        print("jvmos: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0
    except OSError as e:  # a file jvmos reads or writes (disk full, permissions): one line
        where = f": {e.filename}" if e.filename else ""
        print(f"jvmos: error: {e.strerror or e}{where}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
