"""Engine probe costs are measured again when the programs they were measured on changed."""
from jvmos import enginecost


def test_a_changed_object_makes_its_costs_stale(monkeypatch):
    monkeypatch.delenv("JVMOS_ENGINE_OBJECTS", raising=False)
    now = {"common": "c1", "threads": "t2"}
    monkeypatch.setattr(enginecost, "objects_sha256", lambda layers=None: dict(now))
    costs = {k: {"mean_ns": 1.0} for k in enginecost.all_keys(["threads"])}
    assert enginecost.stale_objects(dict(costs, objects_sha256=now), ["threads"]) == []
    assert not enginecost.incomplete(dict(costs, objects_sha256=now), ["threads"])
    old = dict(costs, objects_sha256={"common": "c1", "threads": "t1"})
    assert enginecost.stale_objects(old, ["threads"]) == ["threads"]
    assert enginecost.incomplete(old, ["threads"])
    # costs from before objects were recorded: measured again once
    assert enginecost.incomplete(costs, ["threads"])
    # a developer's objects (JVMOS_ENGINE_OBJECTS): no calibration measured them
    monkeypatch.setenv("JVMOS_ENGINE_OBJECTS", "/elsewhere")
    assert not enginecost.incomplete(old, ["threads"])


def test_a_partial_calibration_keeps_the_other_layers_hashes():
    old = {"objects_sha256": {"common": "c1", "io": "i1"}}
    new = {"objects_sha256": {"common": "c2", "threads": "t1"}}
    assert enginecost.merge(old, new)["objects_sha256"] == {"common": "c2", "io": "i1",
                                                            "threads": "t1"}
