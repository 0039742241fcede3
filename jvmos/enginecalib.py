"""What a compiled layer declares about its own probe costs (its module's CALIBRATIONS).

A module of its own, importing nothing of jvmos, so that the layer modules
(jvmos/enginelayers/) can declare their calibrations without importing jvmos.enginecost,
which imports the engine, which imports the layers.
"""
from dataclasses import dataclass
from typing import Tuple


@dataclass(frozen=True)
class Calibration:
    """One probe cost a compiled layer declares (its module's CALIBRATIONS): probecal --mode
    MODE run bare and under the engine with LAYERS loaded; the cost per hit is (probed -
    bare) / the hits of KINDS (analyzers/overhead.py's kinds) that the maps counted."""
    key: str                    # the cost key (engine_probes[key]; overhead.KINDS name it)
    mode: str                   # probecal --mode
    iterations: int
    layers: Tuple[str, ...]
    kinds: Tuple[str, ...]
    measured_with: str
    run_mode: str = "time"      # the recording mode the cost is for
    scope: str = "process"
    # yield mode: each switch is the loop's unit: the bare time is scaled to the switches of
    # the probed run (getrusage counts both), and the hits must match the switches
    per_switch: bool = False
    # symbols of a library placeholder that probecal's jvmos_probe_target stands in for (the
    # allocator, probed on a function with no side effects): {"LIBC": ("malloc",)}
    target_as: Tuple[Tuple[str, Tuple[str, ...]], ...] = ()
    # "object:program" names: the cost is these programs' in-kernel run time (BPF run
    # statistics, every run) per hit of KINDS, an upper bound of their own cost, for a raw
    # tracepoint whose cost the loop's clock cannot resolve from the event's own (a page
    # fault's, a thread creation's); the tracepoint's dispatch is not in it
    kernel_stats: Tuple[str, ...] = ()
