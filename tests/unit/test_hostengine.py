"""The host engine's plan and its probe-id slots (jvmos/hostengine.py); the engine itself is
exercised on real JVMs in tests/integration/test_agent.py."""
import pytest

from jvmos import JvmosError
from jvmos import engine as engine_mod
from jvmos import hostengine as he


def bare_host(layers=("io",)) -> he.HostEngine:
    h = he.HostEngine.__new__(he.HostEngine)
    h.layers, h.slots = tuple(layers), {}
    return h


def test_the_host_plan_loads_the_layers_with_no_root_and_no_uprobes():
    p = he.host_plan(("io", "jni"))
    assert p.doc["host"] is True and p.doc["uprobes"] == []
    assert p.doc["order"][:3] == ["common", "io", "jni"]
    assert p.doc["constants"]["common"]["follow"] == 0
    assert p.doc["constants"]["common"]["hold_exec"] == 0
    assert p.doc["tracepoints"] == []          # --scope process: none to share


def test_plans_of_the_same_libraries_share_a_slot_and_others_get_their_own(tmp_path):
    a, b, libc = tmp_path / "a.so", tmp_path / "b.so", tmp_path / "libc.so.6"
    for f in (a, b, libc):
        f.write_text(f.name)
    h = bare_host()
    first, key = h.first_id({"LIBJVM": [a], "LIBC": [libc]})
    # the same file through another path (a container's JVM, through /proc/PID/root)
    again, key2 = h.first_id({"LIBC": [libc], "LIBJVM": [f"/proc/self/root{a}"]})
    other, key3 = h.first_id({"LIBJVM": [b], "LIBC": [libc]})
    assert first == again == 1 and key == key2
    assert other == 1 + he.SLOT and key3 != key
    # every id of a slot is below the engine's NAMED bit
    assert 1 + (he.SLOTS - 1) * he.SLOT + he.SLOT - 1 < engine_mod.NAMED


def test_a_slot_is_freed_with_its_last_jvm_and_reused():
    h = bare_host()
    first, key = h.first_id({"LIBJVM": ["/a"]})
    h.slots[key][1] += 2
    h._release(key)
    assert key in h.slots
    h._release(key)
    assert key not in h.slots
    assert h.first_id({"LIBJVM": ["/c"]})[0] == first


def test_no_slot_left_is_an_error_naming_the_limit():
    h = bare_host()
    for i in range(he.SLOTS):
        _, key = h.first_id({"LIBJVM": [f"/{i}"]})
        h.slots[key][1] += 1
    with pytest.raises(JvmosError, match=f"{he.SLOTS} different sets of libraries"):
        h.first_id({"LIBJVM": ["/one-more"]})


def test_a_layer_the_host_engine_lacks_is_refused_before_anything_is_sent():
    h = bare_host(("io",))
    with pytest.raises(JvmosError, match="no jni layer loaded"):
        h.attach(1, ("io", "jni"), {}, lambda p: {}, None, 1)
    assert h.slots == {}


def test_plans_built_from_a_first_id_number_from_it():
    from jvmos.jdk import libc_of, symbols
    libc = libc_of()
    if libc is None:
        pytest.skip("no libc found")
    p = engine_mod.build_plan(["io"], {"LIBC": [libc]}, symbols, mode="count",
                              scope="process", root=1, counting=False, follow=False,
                              usdt_of=lambda p: {}, first_id=2049)
    ids = [u["id"] for u in p.doc["uprobes"]]
    assert ids and min(ids) == 2049 and max(ids) < 2049 + he.SLOT
    assert he.mismatch(he.host_plan(("io", "jni")).doc, p.doc) == ""
    assert "not loaded" in he.mismatch(he.host_plan(("jni",)).doc, p.doc)


def test_a_plan_whose_constants_differ_does_not_fit():
    host = he.host_plan(("io",)).doc
    timed = engine_mod.build_plan(["io"], {}, lambda p: {}, mode="time", scope="process",
                                  root=1, counting=False, follow=False, usdt_of=lambda p: {})
    assert "io's constants differ" in he.mismatch(host, timed.doc)
    host_scope = engine_mod.build_plan(["io"], {}, lambda p: {}, mode="count", scope="host",
                                       root=1, counting=False, follow=False,
                                       usdt_of=lambda p: {})
    assert "is not attached" in he.mismatch(host, host_scope.doc)
