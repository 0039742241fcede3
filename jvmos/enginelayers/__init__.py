"""The compiled layers, one module each: what a layer's programs are attached to (its part of
the engine's plan) and the ids its header (probes/<layer>.h) declares, with the map and key
each id becomes for the analyzers (bpftrace's names and layouts, so every table means what it
meant under bpftrace). A module in this package that defines NAME is a compiled layer.

A layer module defines:
  NAME, OBJECT            the layer and its object (build/probes/<layer>.bpf.o)
  HEADER, BASE            probes/<layer>.h, and its block of ids (jvmos.h: JVMOS_BASE_*)
  HEADER_NAMES            what its header calls each id (JVMOS_ left out), for the tests
  CATEGORIES              {category name: id}
  NAMES                   {id: (name, calls map, time map)}: stats entries keyed by a name
                          (JVMOS_NAMED(id)), e.g. (\"failed\", \"ncalls\", None)
  WHATS                   {id: (sum name, key(sub, x) -> the key fields after the pid, a
                          tuple of strings, () for none, None for a sub it does not know)}:
                          counts entries
  MISSED, HITS            {name: id}: subs of JVMOS_WHAT_MISSED / JVMOS_WHAT_HITS
  constants(ctx)          {constant: value} for its object
  plan(ctx)               adds its uprobes and tracepoints to the plan (ctx: engine.PlanBuilder)
  CALIBRATIONS            [enginecost.Calibration]: the probe costs of its kinds, measured
                          on workloads/c/probecal by `jvmos calibrate --probes`
Ids live in the layer's block, so layers never collide.
"""
import importlib
import pkgutil

MODULES = {}
for _info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
    _mod = importlib.import_module(f"{__name__}.{_info.name}")
    if hasattr(_mod, "NAME"):
        MODULES[_mod.NAME] = _mod
