"""The vectorised engine takes a stretch of iterations a block of rows at a time (a speed choice): any block
size gives the same tables, bit for bit, as one block for the whole stretch."""

from __future__ import annotations

import numpy as np
import pytest

from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario
from gcbench.sim import synchronous
from gcbench.sim.synchronous import simulate_synchronous

CASES = [
    ({"scheme": "fr", "s": 3}, {}),
    ({"scheme": "cr", "s": 2, "policy": {"name": "deadline", "deadline": 0.4, "fallback": "approximate"}}, {}),
    (
        {"scheme": "uncoded", "policy": {"name": "fastest_k", "k": 9}},
        {"failures": {"model": "crash", "probability": 0.02, "downtime": 0.5}},
    ),
    ({"scheme": "fr", "s": 1}, {"network": {"latency": 0.01, "bandwidth": 1e8, "shared_link": True}}),
]


def tables(variant: dict, fields: dict) -> dict[str, np.ndarray]:
    data = {"name": "blocks", "workers": 12, "iterations": 97, "gradient": {"length": 1_000_000}}
    data["compute"] = {"per_partition": {"distribution": "exponential", "rate": 5.0}}
    scenario = Scenario.model_validate({**data, **fields, "variants": [variant]})
    rec = simulate_synchronous(scenario, scenario.variants[0], scheme_for(scenario, scenario.variants[0]), 3)
    return {name: value for name, value in vars(rec).items() if isinstance(value, np.ndarray)}


@pytest.mark.parametrize(("variant", "fields"), CASES)
@pytest.mark.parametrize("block", [1, 12 * 5, 12 * 40])  # a row a block; 5 rows; 40 (the last block 17)
def test_any_block_size_gives_the_same_tables(monkeypatch, variant, fields, block):
    whole = tables(variant, fields)
    monkeypatch.setattr(synchronous, "BLOCK_ELEMENTS", block)
    blocked = tables(variant, fields)
    for name, column in whole.items():
        same = (
            column == blocked[name] if column.dtype == object else np.array_equal(column, blocked[name], equal_nan=True)
        )
        assert np.all(same), name
