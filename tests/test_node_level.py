"""A node straggling or crashing takes every worker on it (``straggling.level: node``, ``failures.level: node``):
the draws a node's workers share, closed forms of the iteration time in both engines, and the scenarios refused."""

from __future__ import annotations

import numpy as np
import pytest

from gcbench.scenario.build import scheme_for
from gcbench.scenario.draws import draw_run
from gcbench.sim.event import simulate_event
from gcbench.sim.synchronous import simulate_synchronous

from simhelpers import SMALL_SCENARIO, check_refusal, scenario

ENGINES = {"vectorised": simulate_synchronous, "event": simulate_event}
COMPUTE, DELAY, P = 0.1, 1.0, 0.2  # a partition's deterministic seconds; a straggling node's delay; its chance


def node_scenario(**fields):
    data = {
        "workers": 6,
        "iterations": 4000,
        "compute": {"per_partition": {"distribution": "deterministic", "value": COMPUTE}},
        "straggling": {"model": "independent", "level": "node", "probability": P, "delay": DELAY},
        "topology": {"nodes": 3},
    }
    return scenario(**{**data, **fields})


def mean_iteration(engine: str, sc) -> tuple[float, float]:
    """The mean iteration and its standard error."""
    durations = ENGINES[engine](sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0).duration
    return float(durations.mean()), float(durations.std(ddof=1) / np.sqrt(len(durations)))


def test_a_node_s_workers_share_its_draws_and_the_nodes_draw_apart():
    sc = node_scenario(failures={"model": "crash", "level": "node", "probability": 0.2, "downtime": 0.5})
    draws = draw_run(sc, scheme_for(sc, sc.variants[0]), 3)
    node_of = sc.topology.node_of(6)  # spread: node k holds workers k and k + 3
    for k in range(3):
        held = np.flatnonzero(node_of == k)
        for table in (draws.straggling, draws.crash):
            assert (table[:, held] == table[:, held[:1]]).all()
    assert not (draws.straggling[:, 0] == draws.straggling[:, 1]).all()
    assert draws.straggling[:, 0].mean() == pytest.approx(P, abs=0.02)


@pytest.mark.parametrize("engine", ENGINES)
def test_wait_all_under_node_stragglers_waits_for_any_straggling_node(engine):
    """Six workers on three nodes, each node straggling with probability p: an iteration is c + d whenever any
    of the 3 nodes straggles, c otherwise: mean c + d (1 - (1 - p)^3), against 1 - (1 - p)^6 for workers."""
    for level, units in (("node", 3), ("worker", 6)):
        straggling = {"model": "independent", "level": level, "probability": P, "delay": DELAY}
        mean, error = mean_iteration(engine, node_scenario(straggling=straggling))
        assert mean == pytest.approx(COMPUTE + DELAY * (1 - (1 - P) ** units), abs=4 * error)


@pytest.mark.parametrize("engine", ENGINES)
def test_fr_spread_rides_out_a_straggling_node_and_packed_waits_for_it(engine):
    """FR s=1 (groups (0, 1), (2, 3), (4, 5), load 2) under node stragglers. Packed, node k holds group k whole:
    the iteration waits whenever any node straggles, 2c + d (1 - (1 - p)^3). Spread, each group's replicas are on
    two nodes, one pair of nodes a group: it waits only when two nodes or more straggle, 2c + d (3p^2 (1 - p) +
    p^3)."""
    fr = [{"scheme": "fr", "s": 1}]
    packed = node_scenario(variants=fr, topology={"nodes": 3, "placement": "pack"})
    mean, error = mean_iteration(engine, packed)
    assert mean == pytest.approx(2 * COMPUTE + DELAY * (1 - (1 - P) ** 3), abs=4 * error)
    mean, error = mean_iteration(engine, node_scenario(variants=fr))
    assert mean == pytest.approx(2 * COMPUTE + DELAY * (3 * P**2 * (1 - P) + P**3), abs=4 * error)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_worker_level_model_on_top_adds_each_worker_s_own_slowness(engine):
    """Nodes straggle with p (delay D), and on top each worker with q (delay d < D; the delays add). With m workers
    a node on K nodes, wait-all's extra time is D + d where some node straggles with one of its own workers (A),
    D where a node straggles otherwise, d where only workers do: (D + d) A + D (B - A) + d (C - B), with
    A = 1 - (1 - p (1 - (1 - q)^m))^K, B = 1 - (1 - p)^K, C = 1 - (1 - p)^K (1 - q)^(K m)."""
    p, q, big, small, nodes, each = 0.2, 0.1, 1.0, 0.3, 3, 2
    straggling = {"model": "independent", "level": "node", "probability": p, "delay": big,
                  "also": {"model": "independent", "probability": q, "delay": small}}  # fmt: skip
    mean, error = mean_iteration(engine, node_scenario(straggling=straggling))
    a = 1 - (1 - p * (1 - (1 - q) ** each)) ** nodes
    b = 1 - (1 - p) ** nodes
    c = 1 - (1 - p) ** nodes * (1 - q) ** (nodes * each)
    assert mean == pytest.approx(COMPUTE + (big + small) * a + big * (b - a) + small * (c - b), abs=4 * error)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_node_s_speed_divides_each_of_its_workers_compute(engine):
    """compute.node_speeds: node 1 (workers 1 and 4, spread) at half speed, beside worker 0's own speed of 0.8:
    uncoded waits 2c for node 1's workers; worker 0 computes c / 0.8; the heterogeneous code is built from the
    same per-worker speeds."""
    from gcbench.scenario.build import placed, scheme_parameters

    compute = {"per_partition": {"distribution": "deterministic", "value": COMPUTE},
               "speeds": [0.8, 1, 1, 1, 1, 1], "node_speeds": [1.0, 0.5, 1.0]}  # fmt: skip
    variants = [{"scheme": "uncoded", "policy": "wait_all"}, {"scheme": "heterogeneous", "s": 1}]
    sc = node_scenario(compute=compute, iterations=3, straggling={"model": "none"}, variants=variants)
    rec = ENGINES[engine](sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    assert rec.duration == pytest.approx([2 * COMPUTE] * 3, rel=1e-12)
    assert (rec.compute_end - rec.compute_start)[:, 0] == pytest.approx([COMPUTE / 0.8] * 3, rel=1e-12)
    assert placed(sc, scheme_for(sc, sc.variants[0])).compute.speeds == [0.8, 0.5, 1.0, 1.0, 0.5, 1.0]
    assert scheme_parameters(sc, sc.variants[1])["speeds"] == [0.8, 0.5, 1.0, 1.0, 0.5, 1.0]


@pytest.mark.parametrize("engine", ENGINES)
def test_a_fixed_slow_node_slows_each_of_its_workers(engine):
    """Node 1 (workers 1 and 4, spread) four times slow in every iteration: uncoded waits 4c; FR spread, whose
    groups have a replica off node 1, c times its load."""
    slow = {"model": "fixed", "level": "node", "nodes": [1], "slowdown": 4.0}
    sc = node_scenario(straggling=slow, iterations=5)
    rec = ENGINES[engine](sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    assert rec.duration == pytest.approx([4 * COMPUTE] * 5, rel=1e-12)
    assert rec.straggling[:, [1, 4]].all() and not rec.straggling[:, [0, 2, 3, 5]].any()
    fr = node_scenario(straggling=slow, iterations=5, variants=[{"scheme": "fr", "s": 1}])
    rec = ENGINES[engine](fr, fr.variants[0], scheme_for(fr, fr.variants[0]), 0)
    assert rec.duration == pytest.approx([2 * COMPUTE] * 5, rel=1e-12)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "straggling: {model: independent, level: node, probability: 0.1, delay: 1}\n",
            "straggling.level: node draws per node of the topology, and the scenario has none; give one (topology: "
            "{nodes: 2}, for example).",
        ),
        (
            "failures: {model: crash, level: node, probability: 0.1}\n",
            "failures.level: node draws per node of the topology, and the scenario has none",
        ),
        (
            "topology: {nodes: 2}\nstraggling: {model: independent, level: node, probability: 0.1, delay: 1}\n"
            "variants: [{scheme: uncoded, policy: async}]\n",
            "straggling.level: node strikes a node's workers in the same iteration, and variants[0]'s policy async "
            "starts each worker's jobs on its own clock; use level: worker or a synchronous policy.",
        ),
        (
            "topology: {nodes: 2}\nstraggling: {model: fixed, level: node, workers: [1], delay: 1}\n",
            "straggling: at level node, the fixed model lists its straggling nodes (give nodes, not workers).",
        ),
        (
            "straggling: {model: fixed, nodes: [1], delay: 1}\n",
            "straggling: at level worker, the fixed model lists its straggling workers (give workers, not nodes).",
        ),
        (
            "straggling: {model: independent, probability: 0.1, delay: 1,\n"
            "             also: {model: independent, probability: 0.1}}\n",
            "straggling: also adds a worker-level model to a node-level one: give it at level node, and the model it "
            "adds at level worker.",
        ),
        (
            "compute: {per_partition: {distribution: exponential, rate: 1}, node_speeds: [1, 0.5]}\n",
            "compute.node_speeds: gives each node of the topology a speed, and the scenario has none; give one "
            "(topology: {nodes: 2}, for example).",
        ),
        (
            "topology: {nodes: 2}\ncompute: {per_partition: {distribution: exponential, rate: 1}, node_speeds: [1]}\n",
            "compute.node_speeds: needs one speed per node (2), got 1.",
        ),
        (
            "topology: {nodes: 2, placement: by_code}\n"
            "compute: {per_partition: {distribution: exponential, rate: 1}, node_speeds: [1, 0.5]}\n"
            "variants: [{scheme: heterogeneous, s: 1}]\n",
            "compute.node_speeds: heterogeneous is built from the workers' speeds, and by_code places its workers by "
            "that code, so neither can come first; give an explicit placement.",
        ),
        (
            "topology: {nodes: 2}\nstraggling: {model: fixed, level: node, nodes: [2], delay: 1}\n",
            "straggling.nodes: names node 2, and the nodes are 0 to 1.",
        ),
        (
            "topology: {nodes: 2}\nstraggling: {model: independent, level: rack, probability: 0.1}\n",
            "straggling.level: Input should be 'worker' or 'node'.",
        ),
    ],
)
def test_node_levels_a_scenario_cannot_have_are_one_sentence_and_exit_2(tmp_path, text, expected):
    assert expected in check_refusal(tmp_path, SMALL_SCENARIO + text)


def test_by_code_places_each_variant_s_workers_by_its_code():
    """topology.placement: by_code is each variant's own map: the heterogeneous code's from the swap search (the
    one that survives 3 lost nodes of 4), FR's spread; both engines give the same tables with it."""
    from gcbench.coding.node_loss import by_code
    from gcbench.scenario.build import placed

    speeds = [1.0, 4.0, 7.0, 3.0, 6.0, 2.0, 5.0, 1.0]
    variants = [{"scheme": "heterogeneous", "s": 2, "speeds": speeds}, {"scheme": "fr", "s": 1}]
    sc = node_scenario(workers=8, iterations=50, topology={"nodes": 4, "placement": "by_code"}, variants=variants)
    for variant in sc.variants:
        scheme = scheme_for(sc, variant)
        node_of = placed(sc, scheme).topology.node_of(8)
        assert tuple(node_of) == by_code(scheme, 4).node_of
        fast = simulate_synchronous(sc, variant, scheme, 0)
        event = simulate_event(sc, variant, scheme, 0)
        np.testing.assert_allclose(fast.duration, event.duration, rtol=1e-9)
    fr = scheme_for(sc, sc.variants[1])
    assert tuple(placed(sc, fr).topology.node_of(8)) == tuple(np.arange(8) % 4)
