"""The scheme object a scenario's variant names (cached: construction checks conditioning), and the scenario as
that variant runs it (its workers placed by its code, where the topology says ``by_code``)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

from gcbench.coding import Scheme, make_scheme, scheme_class
from gcbench.scenario.schema import Scenario, Variant


@lru_cache(maxsize=64)
def _scheme(name: str, n: int, s: int, params: tuple) -> Scheme:
    return make_scheme(name, n=n, s=s, **{key: list(v) if isinstance(v, tuple) else v for key, v in params})


def scheme_parameters(scenario: Scenario, variant: Variant) -> dict[str, Any]:
    """The variant's scheme parameters; a scheme that takes ``speeds`` and is given none gets ``compute.speeds``."""
    params = variant.scheme_params()
    speeds = scenario.compute.speeds
    if speeds is not None and "speeds" in scheme_class(variant.scheme).defaults and not params.get("speeds"):
        params["speeds"] = list(speeds)
    return params


def scheme_for(scenario: Scenario, variant: Variant) -> Scheme:
    """The variant's scheme for the scenario's workers."""
    params = scheme_parameters(scenario, variant)
    key = tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in params.items()))
    return _scheme(variant.scheme, scenario.workers, variant.s, key)


def partition_shares(scenario: Scenario) -> dict[str, float]:
    """Per variant label, one of its scheme's partitions in uncoded ones (``Scheme.partition_share``: n / k), as
    run.json records it for the figures (which read results only)."""
    return {variant.display_label(): scheme_for(scenario, variant).partition_share for variant in scenario.variants}


def variant_labelled(scenario: Scenario, label: str) -> Variant | None:
    """The scenario's variant whose label is ``label`` (as the results tables name it), or None."""
    return next((variant for variant in scenario.variants if variant.display_label() == label), None)


@lru_cache(maxsize=64)
def _by_code(scheme: Scheme, nodes: int) -> tuple[int, ...]:
    from gcbench.coding.node_loss import by_code

    return by_code(scheme, nodes).node_of


def placed(scenario: Scenario, scheme: Scheme) -> Scenario:
    """The scenario with ``topology.placement: by_code`` made the explicit map ``scheme``'s code is placed by (the
    scenario itself where the placement is another)."""
    topology = scenario.topology
    if topology is None or topology.placement != "by_code":
        return scenario
    node_of = _by_code(scheme, topology.nodes)
    placement = {k: [w for w, node in enumerate(node_of) if node == k] for k in range(topology.nodes)}
    return scenario.model_copy(update={"topology": topology.model_copy(update={"placement": placement})})
