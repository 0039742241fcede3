"""Experiments: each reproduces a table of the paper and writes it under its --out directory."""
from . import accuracy, blocking_io, jni_census, memory, threads

EXPERIMENTS = {
    "blocking-io": blocking_io.main,
    "jni-census": jni_census.main,
    "accuracy": accuracy.main,
    "threads": threads.main,
    "memory": memory.main,
}
