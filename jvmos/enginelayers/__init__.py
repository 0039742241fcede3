"""The compiled layers, one module each: what a layer's programs are attached to (its part of
the engine's plan) and the ids its header (probes/<layer>.h) declares, with the map and key
each id becomes for the analyzers (bpftrace's names and layouts, so every table means what it
meant under bpftrace).

A layer module defines:
  NAME, OBJECT            the layer and its object (build/probes/<layer>.bpf.o)
  HEADER                  probes/<layer>.h
  CATEGORIES              {category name: id}
  NAMES                   {id: (name, calls map, time map)}: stats entries keyed by a name
  WHATS                   {id: (map name, key(sub, x) -> the key after the pid, "" for none,
                          None for a sub it does not know)}: counts entries
  MISSED, HITS            {name: id}: subs of JVMOS_WHAT_MISSED / JVMOS_WHAT_HITS
  constants(ctx)          {constant: value} for its object
  plan(ctx)               adds its uprobes and tracepoints to the plan (ctx: engine.PlanBuilder)
  CALIBRATIONS            [enginecost.Calibration]: the probe costs of its kinds, measured
                          on workloads/c/probecal by `jvmos calibrate --engine bpf`
  HEADER_NAMES, BASE      what its header calls each id, and its block (for the tests)
Ids live in the layer's block (jvmos.h: JVMOS_BASE_*), so layers never collide.
"""
from jvmos.enginelayers import io

MODULES = {m.NAME: m for m in (io,)}
