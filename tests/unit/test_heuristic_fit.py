"""`jvmos run heuristic`'s analysis: repeats combined by medians, the fit and its held-out error."""
import pytest

from jvmos.experiments import heuristic as h
from jvmos.heuristic import fit as hf
from jvmos.heuristic.model import Constants

TRUE = {"C_nt": 100.0, "C_link": 8.0, "C_io_chunk": 0.35, "C_mem": 2000.0}


def level(conns, threads, futex, mem_us=TRUE["C_mem"], scale=1.0):
    """A load level whose costs follow the model exactly (µs -> ns in by_resource); the real
    cost is the sum of the resources, as `measure_level` makes it (no synchronization time)."""
    ops = 10 * conns
    by = {"io": ops * TRUE["C_io_chunk"] * 1e3 * scale,
          "links": conns * TRUE["C_link"] * 1e3 * scale,
          "threads": threads * TRUE["C_nt"] * 1e3 * scale,
          "mem": mem_us * 1e3}
    return {"threads": 1, "pages": conns, "connections": conns,
            "by_resource": by, "guaranteed_ns": sum(by.values()),
            "counts": {"accepts": conns, "io_writes": 6 * conns, "io_reads": 4 * conns,
                       "io_syscalls": ops, "threads_created": threads, "files_opened": 0,
                       "futex": futex, "context_switches": {"voluntary": conns, "threads": 3}},
            "server_cpu_ns": 1e9, "wall_ns": 2e9, "probe_overhead_ns": 1e6,
            "bare": {"pages_per_s": 100.0}, "recorded": {"pages_per_s": 90.0},
            "run_dir": f"runs/{conns}"}


def test_a_model_that_holds_exactly_is_recovered_and_predicts_held_out_levels():
    # 310 thread creations in all: enough (MIN_THREADS_FIT) for C_nt to be fitted
    levels = [level(100, 30, 400), level(500, 120, 1300), level(1000, 20, 1600),
              level(2000, 90, 2300), level(3500, 50, 2800)]
    f = hf.fit(levels, Constants(C_nt=1, C_link=1, C_io_chunk=1))
    for k in ("C_nt", "C_link", "C_io_chunk", "C_mem"):
        assert f[k] == pytest.approx(TRUE[k])
    assert f["C_nt_fitted_from"] == "310 thread creations"
    # no synchronization term: the real cost holds no synchronization time
    assert set(f) == {"C_nt", "C_link", "C_io_chunk", "C_mem", "C_nt_fitted_from"}
    # fewer than 100 creations: the calibrated C_nt stands, and the fit says so
    few = hf.fit([level(100, 3, 400), level(500, 12, 1300)], Constants(C_nt=77, C_link=1,
                                                                       C_io_chunk=1))
    assert few["C_nt"] == 77 and few["C_nt_fitted_from"].startswith("calibrated: only 15 thread creation(s)")
    results = {"levels": {str(i): L for i, L in enumerate(levels)}}
    hf.analyze(results, Constants(C_nt=100, C_link=8, C_io_chunk=3.5))
    assert results["worst_held_out_error_pct"] == pytest.approx(0.0, abs=1e-9)
    assert results["goal_met"]


def test_a_level_with_a_memory_burst_misses_the_goal():
    levels = [level(100, 3, 0), level(500, 12, 0), level(1000, 2, 0),
              level(2000, 17, 0, mem_us=45000), level(3500, 8, 0)]
    results = {"levels": {str(i): L for i, L in enumerate(levels)}}
    hf.analyze(results, Constants(C_nt=100, C_link=8, C_io_chunk=0.35))
    assert not results["goal_met"]
    assert abs(results["levels"]["3"]["loo_diff_pct"]) > 50


def test_repeats_are_combined_resource_by_resource_with_medians():
    reps = [level(1000, 2, 1600), level(1000, 2, 1600, mem_us=45000), level(1000, 2, 1600, scale=1.1)]
    reps[2]["counts"]["accepts"] = 1003
    L = hf.combine(reps)
    # the burst of one repeat is not the level's memory cost
    assert L["by_resource"]["mem"] == pytest.approx(2000e3)
    assert L["by_resource"]["links"] == pytest.approx(1000 * 8e3)
    assert L["counts"]["accepts"] == 1000
    assert L["counts"]["context_switches"] == {"threads": 3, "voluntary": 1000}
    assert L["guaranteed_ns"] == pytest.approx(sum(L["by_resource"].values()))
    assert len(L["repeats"]) == 3
    g = [r["guaranteed_ns"] for r in reps]
    assert L["real_spread_pct"] == pytest.approx(100 * (max(g) - min(g)) / L["guaranteed_ns"])


def test_a_single_recording_is_the_level():
    one = level(100, 3, 400)
    L = hf.combine([one])
    assert L["guaranteed_ns"] == one["guaranteed_ns"] and L["real_spread_pct"] is None


def test_table7_shows_the_spread_of_the_repeats():
    reps = [level(100, 3, 400), level(100, 3, 400, scale=1.2), level(100, 3, 400, scale=0.9)]
    levels = {"a": hf.combine(reps), "b": hf.combine([level(500, 12, 1300)] * 3),
              "c": hf.combine([level(1000, 2, 1600)] * 3)}
    results = {"levels": levels, "repeat": 3, "jdk_label": "jdk", "page_bytes": 65536,
               "constants_us": {}}
    hf.analyze(results, Constants(C_nt=100, C_link=8, C_io_chunk=0.35))
    md = h.table7(results).markdown()
    assert "(n=3)" in md
    assert any("run-to-run noise" in n for n in h.notes_for(results))


def test_repeat_must_be_positive():
    with pytest.raises(SystemExit):
        h.parse(["--repeat", "0"])
    assert h.parse([]).repeat == 3 and h.parse(["--quick"]).repeat == 1


def mem_level(conns, threads, files):
    """A level whose memory cost grows with the load (allocator calls, page faults) and whose
    links include file opens: the extended model holds exactly, a constant C_mem does not."""
    L = level(conns, threads, 0)
    malloc_calls, faults = 4 * conns + 1000, conns // 2 + 100
    mp = {"malloc_ns": malloc_calls * 0.5e3, "page_fault_ns": faults * 1.4e3,
          "vm_syscall_ns": 300e3}
    L["mem_parts"] = mp
    L["counts"].update(malloc_calls=malloc_calls, page_faults=faults, files_opened=files)
    L["by_resource"]["mem"] = sum(mp.values())
    L["by_resource"]["links"] += files * 12e3
    L["guaranteed_ns"] = sum(L["by_resource"].values())
    return L


def test_extended_model_predicts_a_memory_cost_that_grows_with_the_load():
    levels = [mem_level(100, 3, 26), mem_level(500, 12, 46), mem_level(1000, 2, 68),
              mem_level(2000, 17, 92), mem_level(3500, 8, 96)]
    fx = hf.fit_extended(levels, 80.0)
    assert fx["C_link"] == pytest.approx(8.0) and fx["C_file"] == pytest.approx(12.0)
    assert fx["C_malloc"] == pytest.approx(0.5) and fx["C_pf"] == pytest.approx(1.4)
    assert fx["C_vm"] == pytest.approx(300.0)
    results = {"levels": {str(i): L for i, L in enumerate(levels)}}
    hf.analyze(results, Constants(C_nt=100, C_link=8, C_io_chunk=0.35))
    assert results["worst_held_out_error_extended_pct"] == pytest.approx(0.0, abs=1e-9)
    assert results["goal_met_extended"]
    # the paper's form, with C_mem one constant, cannot follow it
    assert not results["goal_met"]


def test_extended_model_needs_the_memory_split():
    assert hf.fit_extended([level(100, 3, 400), level(500, 12, 1300)], 80.0) is None
    results = {"levels": {str(i): level(c, 3, 10) for i, c in enumerate((100, 500, 1000))}}
    hf.analyze(results, Constants(C_nt=100, C_link=8, C_io_chunk=0.35))
    assert results["worst_held_out_error_extended_pct"] is None


def test_repeats_keep_the_memory_split_and_a_finished_run_can_be_analyzed_again(tmp_path):
    import json
    # 3 threads per level: no fit sees 100 creations, and the calibrated C_nt (the model's
    # 100 µs here) stands
    reps = {c: [mem_level(c, 3, 20), mem_level(c, 3, 20), mem_level(c, 3, 20)]
            for c in (100, 500, 1000, 2000)}
    L = hf.combine(reps[100])
    assert L["mem_parts"]["vm_syscall_ns"] == pytest.approx(300e3)
    # a run written before the analysis existed: levels as measured, repeats kept
    results = {"levels": {str(c): {**hf.combine(r), "mem_parts": None} for c, r in reps.items()},
               "repeat": 3, "jdk_label": "jdk", "page_bytes": 65536,
               "constants_us": {"C_nt": {"mean_us": 100.0, "ci95_us": [90, 110]},
                                "C_link": {"mean_us": 6.0, "ci95_us": [5, 7]},
                                "C_io_chunk": {"mean_us": 0.8, "ci95_us": [0.7, 0.9]}}}
    for x in results["levels"].values():
        del x["mem_parts"]
    (tmp_path / "table7.json").write_text(json.dumps(results))
    assert h.main(["--analyze", str(tmp_path)]) == 0
    again = json.loads((tmp_path / "table7.json").read_text())
    assert again["worst_held_out_error_extended_pct"] == pytest.approx(0.0, abs=1e-6)
    assert "extended fit" in (tmp_path / "table7.md").read_text()


def test_analyze_of_a_directory_that_is_not_a_heuristic_run(tmp_path):
    from jvmos import JvmosError
    with pytest.raises(JvmosError, match="no table7.json"):
        h.main(["--analyze", str(tmp_path)])
    (tmp_path / "table7.json").write_text("{}")
    with pytest.raises(JvmosError, match="not a heuristic result"):
        h.main(["--analyze", str(tmp_path)])


def test_two_regressor_fit_falls_back_when_a_coefficient_would_be_negative():
    a, b = hf._lstsq2([1, 2, 3], [3, 2, 1], [1.0, 2.0, 3.0])
    assert a == pytest.approx(1.0) and b == 0.0


# --- what each estimate of Table 7 uses -----------------------------------------------------

K = Constants(C_nt=10.0, C_link=2.0, C_io_chunk=0.5, C_file=3.0)


def toy(name, accepts, writes, reads, threads, files, io, links, thr, mem):
    """A level of the 3-level toy set: counts, and measured costs in µs (stored in ns)."""
    by = {"io": io * 1e3, "links": links * 1e3, "threads": thr * 1e3, "mem": mem * 1e3}
    return {"threads": 1, "pages": accepts, "connections": accepts, "by_resource": by,
            "guaranteed_ns": sum(by.values()),
            "counts": {"accepts": accepts, "io_writes": writes, "io_reads": reads,
                       "threads_created": threads, "files_opened": files, "futex": 50,
                       "malloc_calls": 10 * accepts, "page_faults": accepts},
            "mem_parts": {"malloc_ns": mem * 0.5e3, "page_fault_ns": mem * 0.3e3,
                          "vm_syscall_ns": mem * 0.2e3},
            "repeats": [], "run_dir": f"runs/{name}"}


def toy_set():
    # measured memory: A 1000 µs, B 2000 µs, C 6000 µs
    return {"A": toy("A", 100, 600, 400, 2, 4, io=600, links=250, thr=30, mem=1000),
            "B": toy("B", 200, 1300, 700, 1, 6, io=1100, links=420, thr=12, mem=2000),
            "C": toy("C", 400, 2500, 1500, 3, 8, io=2100, links=830, thr=33, mem=6000)}


def test_eq1_takes_c_mem_from_the_other_levels_worked_by_hand():
    results = {"levels": toy_set()}
    hf.analyze(results, K)
    A, B, C = (results["levels"][n] for n in "ABC")
    # leave-one-out C_mem = median of the two other levels' measured memory (µs):
    #   A: median(2000, 6000) = 4000;  B: median(1000, 6000) = 3500;  C: median(1000, 2000) = 1500
    assert (A["loo_mem_us"], B["loo_mem_us"], C["loo_mem_us"]) == (4000.0, 3500.0, 1500.0)
    # equation 1 at A with the calibrated constants and A's counts:
    #   threads 2 x 10 = 20; links 100 x 2 = 200; I/O (600 + 400) x 0.5 = 500; files 4 x 3 = 12
    #   -> 732 µs without memory; + C_mem 4000 (the other levels) = 4732 µs
    assert A["counted_estimate"]["C_os_us"] == pytest.approx(4732.0)
    assert A["counted_estimate"]["workload"]["mem_us"] == 4000.0
    assert "other levels" in A["counted_estimate"]["workload"]["mem_source"]
    # real A = 600 + 250 + 30 + 1000 = 1880 µs; diff = (1880 - 4732) / 1880 = -151.70...%
    assert A["counted_diff_pct"] == pytest.approx(100 * (1880 - 4732) / 1880)
    # the variant with A's own measured memory, kept apart: 732 + 1000 = 1732 µs
    assert A["counted_own_mem_estimate"]["C_os_us"] == pytest.approx(1732.0)
    assert "not a prediction" in A["counted_own_mem_estimate"]["workload"]["mem_source"]
    # C: threads 3 x 10 = 30; links 400 x 2 = 800; I/O 4000 x 0.5 = 2000; files 8 x 3 = 24
    #   -> 2854; + 1500 = 4354 µs
    assert C["counted_estimate"]["C_os_us"] == pytest.approx(4354.0)
    # the paper's terms fitted on A and B only, C predicted (µs):
    #   C_io = (1000*600 + 2000*1100) / (1000^2 + 2000^2) = 2,800,000 / 5,000,000 = 0.56
    #   C_link = (100*250 + 200*420) / (100^2 + 200^2) = 109,000 / 50,000 = 2.18
    #   C_nt: A and B created 3 threads, fewer than 100: not fitted, the calibrated 10 stands
    #   C_mem = median(1000, 2000) = 1500
    #   C: 3 x 10 + 400 x 2.18 + 4000 x 0.56 + 1500 = 30 + 872 + 2240 + 1500 = 4642
    assert C["loo_fit"]["C_nt"] == 10.0
    assert C["loo_estimate_us"] == pytest.approx(4642.0)
    # the worst error of the eq. 1 column is that of the leave-one-out estimates
    errs = [abs(L["counted_diff_pct"]) for L in (A, B, C)]
    assert results["worst_counted_error_pct"] == pytest.approx(max(errs))


def test_no_estimate_uses_the_levels_own_measured_costs():
    """Change every measured cost of one level (its memory above all) and nothing else: each
    of its estimates stays the same, except the one column labelled as using its memory."""
    base = {"levels": toy_set()}
    hf.analyze(base, K)
    changed = {"levels": toy_set()}
    B = changed["levels"]["B"]
    B["by_resource"] = {"io": 9e6, "links": 7e6, "threads": 5e6, "mem": 40e6}
    B["mem_parts"] = {"malloc_ns": 20e6, "page_fault_ns": 15e6, "vm_syscall_ns": 5e6}
    B["guaranteed_ns"] = sum(B["by_resource"].values())
    hf.analyze(changed, K)
    b0, b1 = base["levels"]["B"], changed["levels"]["B"]
    for key, label in h.T7_COLUMNS:
        e0, e1 = h._estimate(b0, key)[0], h._estimate(b1, key)[0]
        if key == "counted_own_mem":
            assert "not a prediction" in label
            assert e1 - e0 == pytest.approx(40_000.0 - 2000.0)     # its own memory, in µs
        else:
            assert e1 == pytest.approx(e0), label
    assert b1["loo_mem_us"] == b0["loo_mem_us"] == 3500.0
    # and the other levels do see B's new memory: A's C_mem = median(40000, 6000) = 23000
    assert changed["levels"]["A"]["loo_mem_us"] == 23000.0


def test_table7_says_what_each_estimate_uses():
    results = {"levels": toy_set(), "jdk_label": "jdk", "page_bytes": 65536, "repeat": 1,
               "constants_us": {}}
    hf.analyze(results, K)
    t = h.table7(results)
    assert "eq. 1: calibrated constants, counted workload, C_mem from the other levels" in t.headers
    assert "eq. 1 with this level's measured memory (not a prediction)" in t.headers
    assert "real cost (probes: measured + estimated; no synchronization time)" in t.headers
    row = dict(zip(t.headers, t.rows[0]))
    assert row["C_mem from the other levels (median)"] == "4.00"           # 4000 µs, in ms
    assert row["eq. 1: calibrated constants, counted workload, C_mem from the other levels"] \
        == "4.73"                                                         # 4732 µs
    assert row["eq. 1 with this level's measured memory (not a prediction)"] == "1.73"
    notes = " ".join(h.notes_for(results))
    assert "not a prediction" in notes and "synchronization" in notes
    assert all("C_sync" not in r[0] for r in h.table_fit(results).rows)


def test_the_fit_has_no_synchronization_term():
    """Futex calls are not a regressor: a held-out level's prediction does not move with them,
    and residual error that grows with them is not fitted."""
    results = {"levels": toy_set()}
    hf.analyze(results, K)
    more = {"levels": toy_set()}
    more["levels"]["C"]["counts"]["futex"] = 50_000
    more["levels"]["A"]["counts"]["futex"] = 10
    hf.analyze(more, K)
    for n in "ABC":
        assert more["levels"][n]["loo_estimate_us"] == results["levels"][n]["loo_estimate_us"]
        assert "C_sync" not in more["levels"][n]["loo_fit"]
