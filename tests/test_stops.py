"""One vocabulary of stop reasons (gcbench/stops.py): the policies give only these, the results schema lists
them all, and no other module spells one."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest
from pydantic import TypeAdapter

from gcbench import stops
from gcbench.coding import make_scheme
from gcbench.policies import Policy, available_policies
from gcbench.results.schema import ITERATION_COLUMNS

PACKAGE = Path(__file__).resolve().parents[1] / "gcbench"
SYNCHRONOUS = [
    "wait_all",
    {"name": "wait_all", "fallback": "approximate"},
    "decodable",
    {"name": "decodable", "fallback": "approximate"},
    {"name": "fastest_k", "k": 3},
    {"name": "fastest_k", "k": 3, "fallback": "approximate"},
    {"name": "deadline", "deadline": 0.5},
    {"name": "deadline", "deadline": 0.5, "fallback": "approximate"},
]


@pytest.mark.parametrize("spec", SYNCHRONOUS, ids=str)
def test_every_synchronous_policy_stops_for_a_reason_of_the_vocabulary(spec):
    policy = TypeAdapter(Policy).validate_python(spec)
    scheme = make_scheme("cr", n=6, s=1)
    arrivals = np.random.default_rng(0).exponential(0.4, size=(200, len(scheme.message_owner)))
    arrivals[::3, 0] = np.inf  # a worker crashed for good
    arrivals[::7, :3] = np.inf  # more than s crashed for good: only the approximate fallback finishes
    outcome = policy.stop_times(arrivals, scheme)
    assert set(outcome.reason[np.isfinite(outcome.stop)]) <= set(stops.SYNCHRONOUS)
    online = {policy.stop_now(scheme, list(range(len(scheme.message_owner))), 0.1, True)} - {None}
    assert online <= set(stops.SYNCHRONOUS)


def test_the_vocabulary_covers_every_policy_and_the_results_schema_lists_it():
    assert {spec if isinstance(spec, str) else spec["name"] for spec in SYNCHRONOUS} <= set(available_policies())
    assert len(set(stops.ALL)) == len(stops.ALL) == len(stops.SYNCHRONOUS) + len(stops.ASYNCHRONOUS)
    assert all(reason in ITERATION_COLUMNS["stop"] for reason in stops.ALL)


def test_no_module_but_stops_spells_a_stop_reason():
    """decodable, fastest_k and deadline also name policies (``name: Literal["decodable"]``), so only the reasons
    that name nothing else are looked for: written as a string anywhere else, they are a second vocabulary."""
    reasons = set(stops.ALL) - set(available_policies())
    spelled = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE)
        if where == Path("stops.py"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and node.value in reasons:
                spelled.append(f"gcbench/{where}:{node.lineno}: {node.value!r}")
    assert not spelled, "use gcbench.stops: " + "; ".join(spelled)
