"""Analyzers: raw bpftrace output -> summary.json -> tables. Data flows one way."""
