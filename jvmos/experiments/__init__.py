"""Experiments: each reproduces a table of the paper and writes it under its --out directory."""
from jvmos.experiments import (accuracy, agent_overhead, agent_windows, blocking_io, chat,
                               heldout, heuristic, interventions, ipc, jni_census, matmul,
                               memory, overhead, predictions, probe_effect, sampler_cost,
                               serialization, server, threads, tomcat)

EXPERIMENTS = {
    "blocking-io": blocking_io.main,
    "jni-census": jni_census.main,
    "accuracy": accuracy.main,
    "threads": threads.main,
    "memory": memory.main,
    "tomcat": tomcat.main,
    "chat": chat.main,
    "server": server.main,
    "ipc": ipc.main,
    "serialization": serialization.main,
    "matmul": matmul.main,
    "heuristic": heuristic.main,
    "interventions": interventions.main,
    "predictions": predictions.main,
    "held-out": heldout.main,
    "overhead": overhead.main,
    "agent-overhead": agent_overhead.main,
    "agent-windows": agent_windows.main,
    "probe-effect": probe_effect.main,
    "sampler-cost": sampler_cost.main,
}
