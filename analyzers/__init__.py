"""Analyzers: the probes' raw maps (the engine's, or an older recording's bpftrace output) ->
summary.json -> tables. Data flows one way."""
