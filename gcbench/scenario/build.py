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
    """The variant's scheme parameters; a scheme that takes ``speeds`` and is given none gets the workers' speeds
    (``worker_speeds``)."""
    params = variant.scheme_params()
    speeds = worker_speeds(scenario)
    if speeds is not None and "speeds" in scheme_class(variant.scheme).defaults and not params.get("speeds"):
        params["speeds"] = list(speeds)
    return params


def worker_speeds(scenario: Scenario) -> list[float] | None:
    """Each worker's speed: ``compute.speeds`` times its node's ``compute.node_speeds`` (None: neither given)."""
    compute, topology = scenario.compute, scenario.topology
    if compute.node_speeds is None or topology is None or topology.placement == "by_code":
        return compute.speeds  # (by_code: checks.py refuses node speeds beside a code built from the speeds)
    own = compute.speeds or [1.0] * scenario.workers
    node_of = topology.node_of(scenario.workers)
    return [float(speed * compute.node_speeds[node]) for speed, node in zip(own, node_of, strict=True)]


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
    """The scenario as this variant runs it: ``topology.placement: by_code`` made the explicit map ``scheme``'s
    code is placed by, and ``compute.node_speeds`` folded into each worker's ``compute.speeds`` (the scenario
    itself where it has neither)."""
    topology = scenario.topology
    if topology is None or (topology.placement != "by_code" and scenario.compute.node_speeds is None):
        return scenario
    if topology.placement == "by_code":
        node_of = _by_code(scheme, topology.nodes)
        placement = {k: [w for w, node in enumerate(node_of) if node == k] for k in range(topology.nodes)}
        topology = topology.model_copy(update={"placement": placement})
        scenario = scenario.model_copy(update={"topology": topology})
    if scenario.compute.node_speeds is not None:
        compute = scenario.compute.model_copy(update={"speeds": worker_speeds(scenario), "node_speeds": None})
        scenario = scenario.model_copy(update={"compute": compute})
    return scenario
