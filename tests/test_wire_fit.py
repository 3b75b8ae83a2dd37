"""The twin learns the wire (gcbench/twin/wire_fit.py): each node's latency and uplink bandwidth, fitted to the
uploads of runs with two message sizes, recovered from simulated runs of known links."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gcbench.errors import GcbenchError
from gcbench.scenario.loading import SweepPoint
from gcbench.scenario.schema import Scenario, Variant
from gcbench.sim.tasks import Task, run_task
from gcbench.twin.measured import measured_run
from gcbench.twin.wire_fit import fit_links

LENGTH = 250_000  # a float32 gradient of a million bytes
VARIANTS = [
    {"label": "uncoded", "scheme": "uncoded", "policy": "wait_all"},
    {"label": "uncoded fp16", "scheme": "uncoded", "policy": "wait_all", "compression": {"name": "fp16"}},
]


def known(**fields) -> Scenario:
    data = {
        "name": "wire",
        "workers": 6,
        "iterations": 60,
        "gradient": {"length": LENGTH, "dtype": "float32"},
        "compute": {"per_partition": {"distribution": "shifted_exponential", "shift": 0.05, "rate": 20.0}},
        "variants": VARIANTS,
    }
    return Scenario.model_validate({**data, **fields})


def simulated(scenario: Scenario):
    frames = [run_task(SweepPoint({}, scenario), 0, Task(0, i, 0), True) for i in range(len(scenario.variants))]
    iterations = pd.concat([pd.DataFrame(f[0]) for f in frames], ignore_index=True)
    workers = pd.concat([pd.DataFrame(f[1]) for f in frames], ignore_index=True)
    return measured_run("simulated", scenario, iterations, workers, "simulated", cut_short=False)


def test_each_node_s_latency_and_uplink_are_recovered_through_their_sharing():
    """Three nodes: node 0 (the master's) with workers 0 and 3, node 1 with 1 and 4 on a 20 MB/s uplink and 10 ms
    of latency, node 2 with 2 and 5 on 5 MB/s and 30 ms; every node's two messages share its uplink, and all
    share the master's 30 MB/s ingress. Uncompressed (1 MB) and fp16 (0.5 MB) messages tell latency from
    bandwidth."""
    network = {
        "latency": 0.002,
        "master": {"ingress": 3e7},
        "nodes": {1: {"bandwidth": 2e7, "latency": 0.01}, 2: {"bandwidth": 5e6, "latency": 0.03}},
    }
    fit = fit_links([simulated(known(topology={"nodes": 3}, network=network))])
    np.testing.assert_allclose(fit.latency, [0.002, 0.01, 0.03], rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(fit.bandwidth[1:], [2e7, 5e6], rtol=1e-3)
    assert fit.bandwidth[0] == np.inf and fit.sizes == [500_000, 1_000_000]


def test_an_unfair_sharing_is_recovered_with_the_links():
    """The same nodes, their two messages sharing each uplink unequally (network.unfairness 0.4: the second to
    join weighs 0.6 of the first), as TCP shared the emulated wire's (docs/emulation.md): the unfairness comes
    back with the links; a fair one comes back 0."""
    nodes = {1: {"bandwidth": 2e7, "latency": 0.01}, 2: {"bandwidth": 5e6, "latency": 0.03}}
    for unfairness in (0.4, 0.0):
        network = {"latency": 0.002, "nodes": nodes, "unfairness": unfairness}
        fit = fit_links([simulated(known(topology={"nodes": 3}, network=network))])
        assert fit.unfairness == pytest.approx(unfairness, abs=1e-3)
        np.testing.assert_allclose(fit.bandwidth[1:], [2e7, 5e6], rtol=1e-3)
        np.testing.assert_allclose(fit.latency, [0.002, 0.01, 0.03], rtol=1e-3, atol=1e-6)


def test_links_are_fitted_where_by_code_places_each_variant_on_its_own():
    """``placement: by_code``: cyclic-MDS s=1 and FR s=1 place 6 workers on 3 nodes differently (1 0 2 0 1 2
    against spread), a run's workers table says so, and each variant's uploads are replayed from its own nodes."""
    variants = [{"label": "cyclic", "scheme": "cyclic_mds", "s": 1},
                {"label": "FR fp16", "scheme": "fr", "s": 1, "compression": {"name": "fp16"}}]  # fmt: skip
    network = {
        "latency": 0.002,
        "nodes": {1: {"bandwidth": 2e7, "latency": 0.01}, 2: {"bandwidth": 5e6, "latency": 0.03}},
    }
    scenario = known(topology={"nodes": 3, "placement": "by_code"}, network=network, variants=variants)
    fit = fit_links([simulated(scenario)])
    np.testing.assert_allclose(fit.latency, [0.002, 0.01, 0.03], rtol=1e-3, atol=1e-6)
    np.testing.assert_allclose(fit.bandwidth[1:], [2e7, 5e6], rtol=1e-3)


def test_without_a_topology_one_link_each_is_recovered():
    fit = fit_links([simulated(known(network={"latency": 0.004, "bandwidth": 1e7}))])
    np.testing.assert_allclose([fit.latency[0], fit.bandwidth[0]], [0.004, 1e7], rtol=1e-3)


def test_one_message_size_cannot_tell_latency_from_bandwidth():
    run = simulated(known(variants=VARIANTS[:1], network={"latency": 0.004, "bandwidth": 1e7}))
    with pytest.raises(GcbenchError, match="calibrating the links needs messages of two sizes or more"):
        fit_links([run])


def test_calibrate_writes_the_fitted_links_and_predicts_a_held_out_compressor():
    """Calibrated from uncompressed and fp16 runs on a topology, the written scenario carries each node's links;
    simulated, it predicts top-k's mean iteration (its 1% of the entries, held out) as the true links do."""
    from gcbench.scenario.build import scheme_for
    from gcbench.sim.synchronous import simulate_synchronous
    from gcbench.twin.calibrate import calibrate

    network = {
        "nodes": {1: {"bandwidth": 4e6, "latency": 0.01}, 2: {"bandwidth": 1e7}},
        "dispatch": {"distribution": "exponential", "rate": 100.0},
    }
    between = {"between_iterations": {"distribution": "lognormal", "mu": -6.0, "sigma": 0.4}}
    truth = known(topology={"nodes": 3}, network=network, master=between, iterations=200)
    calibration = calibrate([simulated(truth)])
    nodes = calibration.scenario.network.nodes
    assert nodes[1].bandwidth == pytest.approx(4e6, rel=0.01) and nodes[1].latency == pytest.approx(0.01, abs=1e-3)
    assert nodes[2].bandwidth == pytest.approx(1e7, rel=0.01)
    assert any(note.startswith("Upload: links fitted to") for note in calibration.notes)
    topk = Variant.model_validate(
        {"label": "uncoded topk", "scheme": "uncoded", "policy": "wait_all", "compression": {"name": "topk"}}
    )

    def mean_iteration(scenario: Scenario) -> float:
        scheme = scheme_for(scenario, topk)
        return float(simulate_synchronous(scenario, topk, scheme, 1).duration.mean())

    assert mean_iteration(calibration.scenario) == pytest.approx(mean_iteration(truth), rel=0.03)


def test_the_calibrate_command_says_the_links_it_fitted(tmp_path):
    """`gcbench calibrate` on a run with links prints them, and the written scenario carries them (with its
    comment), where a run without links prints the mean upload as the latency."""
    from gcbench.twin.calibrate import calibrate, scenario_yaml

    network = {"nodes": {1: {"bandwidth": 4e6}}, "dispatch": {"distribution": "exponential", "rate": 100.0}}
    between = {"between_iterations": {"distribution": "lognormal", "mu": -6.0, "sigma": 0.4}}
    calibration = calibrate([simulated(known(topology={"nodes": 2}, network=network, master=between))])
    assert calibration.upload_words().startswith("links fitted to 720 messages of 500,000 and 1,000,000 bytes: ")
    written = scenario_yaml(calibration)
    assert "# links fitted to" in written and "nodes:" in written
    plain = calibrate([simulated(known(network={"dispatch": network["dispatch"]}, master=between))])
    assert plain.upload_words().startswith("latency (mean upload): ")


def test_calibrated_from_a_real_run_abandoned_messages_finish_crossing_the_wire():
    """A real cluster's TCP sends a message it was given to its end, abandoned or not: calibrated from a real run
    (its work cut short where the master stopped it), the scenario says so, and its comment too; from the
    simulator's tables, whose scenario dropped them, it keeps dropping them."""
    from dataclasses import replace

    from gcbench.twin.calibrate import calibrate, scenario_yaml

    network = {"nodes": {1: {"bandwidth": 4e6}}, "dispatch": {"distribution": "exponential", "rate": 100.0}}
    between = {"between_iterations": {"distribution": "lognormal", "mu": -6.0, "sigma": 0.4}}
    run = simulated(known(topology={"nodes": 2}, network=network, master=between))
    real = calibrate([replace(run, cut_short=True)])
    assert real.scenario.network.abandoned_messages == "finish"
    assert "crosses the links to its end (network.abandoned_messages: finish)" in scenario_yaml(real)
    assert calibrate([run]).scenario.network.abandoned_messages == "drop"


def test_the_uplinks_token_buckets_the_run_recorded_are_replayed_and_written():
    """Uplinks that send their first B bytes at once (network.burst, as the emulated cluster's token buckets do):
    given the buckets run.json records, the fit recovers each node's latency and bandwidth and the written
    scenario keeps the buckets; left out, the fit takes them for a faster link or a shorter latency."""
    from dataclasses import replace

    from gcbench.twin.calibrate import calibrate

    nodes = {1: {"bandwidth": 2e7, "latency": 0.01}, 2: {"bandwidth": 5e6, "latency": 0.03}}
    dispatch = {"distribution": "exponential", "rate": 100.0}
    between = {"between_iterations": {"distribution": "lognormal", "mu": -6.0, "sigma": 0.4}}
    network = {"latency": 0.002, "nodes": nodes, "burst": 2e5, "dispatch": dispatch}
    truth = known(topology={"nodes": 3}, network=network, master=between)
    run = simulated(truth)
    fit = fit_links([replace(run, bursts=(0.0, 2e5, 2e5))])
    np.testing.assert_allclose(fit.bandwidth[1:], [2e7, 5e6], rtol=1e-3)
    np.testing.assert_allclose(fit.latency, [0.002, 0.01, 0.03], rtol=1e-3, atol=1e-6)
    blind = fit_links([run])
    assert not np.allclose(blind.latency[1:], [0.01, 0.03], rtol=0.05)
    written = calibrate([replace(run, bursts=(0.0, 2e5, 2e5))]).scenario.network.nodes
    assert written[1].burst == written[2].burst == 2e5
