"""The scheme object a scenario's variant names (cached: construction checks conditioning)."""

from __future__ import annotations

from functools import lru_cache

from gcbench.coding import Scheme, make_scheme
from gcbench.scenario.schema import Scenario, Variant


@lru_cache(maxsize=64)
def _scheme(name: str, n: int, s: int, params: tuple) -> Scheme:
    return make_scheme(name, n=n, s=s, **dict(params))


def scheme_for(scenario: Scenario, variant: Variant) -> Scheme:
    """The variant's scheme for the scenario's workers."""
    return _scheme(variant.scheme, scenario.workers, variant.s, tuple(sorted(variant.scheme_params().items())))
