"""heuristic/constants.py: one trial's platform constant from a summary, and the statistics of
the trials (docs/mutation.md). Every expected value is computed by hand in the comment
beside it."""
import pytest

from jvmos import JvmosError
from jvmos.heuristic import constants as kc


def _nt(threads=4, libc=3000.0, kernel=5000.0, warnings=()):
    java = {"threads": threads, "libc_ns": libc, "kernel_ns": kernel}
    return {"categories": {"thread_create": {"layers": {"java": java}}},
            "warnings": list(warnings)}


def test_default_chunk_is_tomcats_write_buffer():
    assert kc.DEFAULT_CHUNK == 8192


def test_stat_mean_interval_and_rounded_samples():
    # mean 2; sd sqrt((1 + 1) / 1) = sqrt 2; half-width t95(1) * sd / sqrt 2 = 12.706
    s = kc.stat([1.0, 3.0], "w")
    assert s["mean_us"] == pytest.approx(2.0)
    assert s["ci95_us"] == pytest.approx([2.0 - 12.706, 2.0 + 12.706])
    assert s["what"] == "w"
    assert kc.stat([1.23456, 2.0], "x")["samples_us"] == [1.2346, 2.0]


def test_c_nt_is_libc_plus_kernel_per_thread():
    # (3000 + 5000) ns / 4 threads = 2000 ns = 2 µs
    assert kc.value_of("C_nt", _nt()) == pytest.approx(2.0)


def test_c_nt_kernel_is_the_kernel_part_alone():
    # 6000 ns / 3 threads = 2 µs
    assert kc.value_of("C_nt_kernel", _nt(threads=3, kernel=6000.0)) == pytest.approx(2.0)


@pytest.mark.parametrize("s", [_nt(threads=0), _nt(threads=None),
                               {"categories": {}, "warnings": []}])
def test_c_nt_without_threads_is_an_error(s):
    with pytest.raises(JvmosError, match="no Java thread creation"):
        kc.value_of("C_nt", s)


@pytest.mark.parametrize("s", [_nt(libc=None), _nt(kernel=None)])
def test_c_nt_without_native_time_is_an_error(s):
    with pytest.raises(JvmosError, match="no native time"):
        kc.value_of("C_nt", s)


def test_c_nt_zero_native_time_is_a_value_not_an_error():
    assert kc.value_of("C_nt", _nt(libc=0.0, kernel=0.0)) == 0.0


@pytest.mark.parametrize("s", [_nt(threads=0), _nt(kernel=None)])
def test_c_nt_kernel_without_its_parts_is_an_error(s):
    with pytest.raises(JvmosError, match="no kernel time"):
        kc.value_of("C_nt_kernel", s)


def test_c_nt_kernel_zero_kernel_time_is_a_value():
    assert kc.value_of("C_nt_kernel", _nt(kernel=0.0)) == 0.0


def test_unknown_cost_error_names_only_the_unknown_and_unresolved_warnings():
    s = _nt(libc=None, warnings=["probe cost of X unknown", "an unrelated note",
                                 "cost of Y not resolved"])
    with pytest.raises(JvmosError) as e:
        kc.value_of("C_nt", s)
    msg = str(e.value)
    assert "probe cost of X unknown; cost of Y not resolved;" in msg
    assert "unrelated" not in msg
    assert "jvmos calibrate --probes" in msg


def test_unknown_cost_error_keeps_300_characters_of_the_warnings():
    s = _nt(libc=None, warnings=["unknown " + "x" * 400])
    with pytest.raises(JvmosError) as e:
        kc.value_of("C_nt", s)
    assert ("unknown " + "x" * 292 + ";") in str(e.value)


def _link(accept=(2, 4000.0), accept4=(2, 8000.0), close=(4, 2000.0)):
    sc = {"connect": {"calls": 5, "time_ns": 1e6}}
    if accept:
        sc["accept"] = {"calls": accept[0], "time_ns": accept[1]}
    if accept4:
        sc["accept4"] = {"calls": accept4[0], "time_ns": accept4[1]}
    cats = {"link": {"syscalls": sc}}
    if close:
        cats["file"] = {"syscalls": {"close": {"calls": close[0], "time_ns": close[1]}}}
    return {"categories": cats, "warnings": []}


def test_c_link_is_accept_plus_an_average_close():
    # accepts (4000 + 8000) / 4 = 3000 ns, close 2000 / 4 = 500 ns: 3.5 µs (connect left out)
    assert kc.value_of("C_link", _link()) == pytest.approx(3.5)


def test_c_link_of_accept4_alone():
    # 9000 / 3 = 3000 ns + 2000 / 4 = 500 ns
    assert kc.value_of("C_link", _link(accept=None, accept4=(3, 9000.0))) == pytest.approx(3.5)


@pytest.mark.parametrize("s", [_link(accept=None, accept4=None), _link(close=None),
                               _link(close=(0, 0.0))])
def test_c_link_without_accept_or_close_is_an_error(s):
    with pytest.raises(JvmosError, match="no accept or close"):
        kc.value_of("C_link", s)


@pytest.mark.parametrize("s", [_link(close=(4, None)), _link(accept=(2, None))])
def test_c_link_without_time_is_an_error(s):
    with pytest.raises(JvmosError, match="has no time"):
        kc.value_of("C_link", s)


def _file(open_time=1000.0):
    sc = {"openat": {"calls": 2, "time_ns": 3000.0}, "open": {"calls": 1, "time_ns": open_time},
          "close": {"calls": 3, "time_ns": 2000.0}}
    return {"categories": {"file": {"syscalls": sc}}, "warnings": []}


def test_c_file_is_open_and_close_time_per_open():
    # (3000 + 1000 + 2000) ns / 3 opens = 2 µs (closes are not counted as opens)
    assert kc.value_of("C_file", _file()) == pytest.approx(2.0)


def test_c_file_without_open_is_an_error():
    s = {"categories": {"file": {"syscalls": {"close": {"calls": 3, "time_ns": 1.0}}}}}
    with pytest.raises(JvmosError, match="no open was recorded"):
        kc.value_of("C_file", s)


def test_c_file_without_time_is_an_error():
    with pytest.raises(JvmosError, match="has no time"):
        kc.value_of("C_file", _file(open_time=None))


def _io(write_bytes=8000, nio_bytes=16000, nio_time=4000.0, kc_time=4500.0, kc_bytes=9000,
        copyin_bytes=6000, calls=4):
    return {"categories": {
        "io_syscall": {"syscalls": {"write": {"calls": calls, "bytes": write_bytes}}},
        "nio_copy": {"bytes": nio_bytes, "time_ns": nio_time},
        "kernel_copy": {"time_ns": kc_time, "bytes": kc_bytes, "copyin_bytes": copyin_bytes}},
        "warnings": []}


def test_c_io_chunk_is_written_nio_copy_plus_copyin_per_write():
    # NIO: 4000 ns x 8000/16000 = 2000; copyin: 4500 x 6000/9000 = 3000; 5000 / 4 = 1.25 µs
    assert kc.value_of("C_io_chunk", _io()) == pytest.approx(1.25)


def test_c_io_chunk_takes_at_most_all_the_nio_copy():
    # written bytes above the NIO bytes: the whole 4000 ns; (4000 + 3000) / 4 = 1.75 µs
    assert kc.value_of("C_io_chunk", _io(write_bytes=32000)) == pytest.approx(1.75)


def test_c_io_chunk_without_kernel_copy_bytes_has_no_copyin():
    # 2000 / 4 = 0.5 µs
    assert kc.value_of("C_io_chunk", _io(kc_bytes=0)) == pytest.approx(0.5)


@pytest.mark.parametrize("s", [_io(calls=0), _io(nio_bytes=0), _io(kc_time=None)])
def test_c_io_chunk_without_a_write_is_an_error(s):
    with pytest.raises(JvmosError, match="no NIO socket write"):
        kc.value_of("C_io_chunk", s)


def test_c_io_chunk_with_zero_kernel_time_is_a_value():
    assert kc.value_of("C_io_chunk", _io(kc_time=0.0)) == pytest.approx(0.5)


def test_an_unknown_constant_is_a_key_error():
    with pytest.raises(KeyError):
        kc.value_of("C_sync", _nt())


def test_io_chunk_bounds_scale_with_the_per_byte_intervals():
    s = _io()
    s["constants"] = {
        "nio_heap_to_direct": {"/jdk": {"ns_per_byte": 2.0, "ns_per_byte_ci95": [-1.0, 3.0]}},
        "kernel_copyin": {"ns_per_byte": 4.0, "ns_per_byte_ci95": [2.0, 6.0]}}
    # NIO ratios max(0, -1)/2 = 0 and 3/2 = 1.5; copyin 2/4 = 0.5 and 6/4 = 1.5
    # low (2000 x 0 + 3000 x 0.5) / 4 = 375 ns; high (2000 x 1.5 + 3000 x 1.5) / 4 = 1875 ns
    lo, hi = kc.io_chunk_bounds(s, "/jdk")
    assert lo == pytest.approx(0.375)
    assert hi == pytest.approx(1.875)


def test_io_chunk_bounds_with_a_positive_low_end():
    s = _io()
    s["constants"] = {
        "nio_heap_to_direct": {"/jdk": {"ns_per_byte": 2.0, "ns_per_byte_ci95": [1.0, 3.0]}}}
    # NIO 1/2 and 3/2, copyin unknown (1, 1): (1000 + 3000) / 4 and (3000 + 3000) / 4
    lo, hi = kc.io_chunk_bounds(s, "/jdk")
    assert lo == pytest.approx(1.0)
    assert hi == pytest.approx(1.5)


@pytest.mark.parametrize("nio", [None, {"ns_per_byte": 2.0},
                                 {"ns_per_byte": 0.0, "ns_per_byte_ci95": [1.0, 3.0]}])
def test_io_chunk_bounds_without_an_interval_are_the_value(nio):
    s = _io()
    s["constants"] = {"nio_heap_to_direct": {"/jdk": nio} if nio else {}}
    assert kc.io_chunk_bounds(s, "/jdk") == pytest.approx((1.25, 1.25))


def test_c_io_chunk_without_nio_time_has_no_nio_part():
    s = _io()
    del s["categories"]["nio_copy"]["time_ns"]
    # copyin alone: 3000 / 4 = 0.75 µs
    assert kc.value_of("C_io_chunk", s) == pytest.approx(0.75)
