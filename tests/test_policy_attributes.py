"""Callers ask a policy what it is (declared class attributes) instead of comparing its name."""

from __future__ import annotations

import ast
from pathlib import Path

from gcbench.policies import POLICIES, AggregationPolicy

PACKAGE = Path(__file__).resolve().parents[1] / "gcbench"


def test_every_policy_declares_what_callers_ask():
    for name in POLICIES.names():
        cls = POLICIES.get(name)
        assert issubclass(cls, AggregationPolicy), f"{name} is not an AggregationPolicy"
        assert isinstance(cls.synchronous, bool) and isinstance(cls.needs_master, bool)
        assert cls.needs_master or cls.real_only, f"{name}: only real mode can run a policy without a master"
    assert not POLICIES.get("allreduce").needs_master and POLICIES.get("allreduce").real_only
    assert all(POLICIES.get(name).needs_master for name in POLICIES.names() if name != "allreduce")


def test_no_module_compares_a_name_with_a_policys():
    names = set(POLICIES.names())
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        where = path.relative_to(PACKAGE)
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.Compare):
                continue
            sides = [node.left, *node.comparators]
            named = any(isinstance(side, ast.Attribute) and side.attr == "name" for side in sides)
            policy = [side.value for side in sides if isinstance(side, ast.Constant) and side.value in names]
            if named and policy:
                found.append(f"gcbench/{where}:{node.lineno}: .name compared with {policy[0]!r}")
    assert not found, "declare an attribute on the policy instead: " + "; ".join(found)
