"""The simulator's shared links against closed forms: uploads through the master's ingress and through nodes' own
uplinks, shared fairly (gcbench/models/fair_share.py), in both engines."""

from __future__ import annotations

import numpy as np
import pytest

from gcbench.scenario.build import scheme_for
from gcbench.sim.event import simulate_event
from gcbench.sim.synchronous import simulate_synchronous

from simhelpers import scenario

COMPUTE, LENGTH = 0.1, 250_000  # seconds a job; a float32 gradient of a million bytes
BYTES = 4 * LENGTH
DETERMINISTIC = {"per_partition": {"distribution": "deterministic", "value": COMPUTE}}
ENGINES = {"vectorised": simulate_synchronous, "event": simulate_event}


def durations(engine: str, **fields):
    sc = scenario(iterations=4, compute=DETERMINISTIC, gradient={"length": LENGTH, "dtype": "float32"}, **fields)
    variant = sc.variants[0]
    return ENGINES[engine](sc, variant, scheme_for(sc, variant), 0).duration


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("policy", ["wait_all", {"name": "fastest_k", "k": 1}])
def test_n_uploads_through_one_ingress_share_it_and_end_together(engine, policy):
    """n messages of b bytes reaching an ingress of rate r at once each get r / n: all arrive n b / r later,
    the first as late as the last (a FIFO link, network.shared_link, delivers the first after b / r)."""
    n, rate = 6, 2e7
    network = {"latency": 0.01, "master": {"ingress": rate}}
    got = durations(engine, workers=n, network=network, variants=[{"scheme": "uncoded", "policy": policy}])
    assert got == pytest.approx([COMPUTE + 0.01 + n * BYTES / rate] * 4, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_an_ingress_wider_than_the_workers_uplinks_adds_nothing(engine):
    """Each worker's own uplink of rate u, an ingress of more than n u: each message takes b / u, as without it."""
    n, rate = 6, 1e7
    network = {"bandwidth": rate, "master": {"ingress": n * rate * 1.5}}
    assert durations(engine, workers=n, network=network) == pytest.approx([COMPUTE + BYTES / rate] * 4, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_two_nodes_of_w_workers_each_share_their_own_uplink(engine):
    """The master alone on node 0, w workers on each of nodes 1 and 2, uplinks of rate u, no ingress limit:
    each node's w messages share its link, so every message takes w b / u."""
    w, rate = 3, 2e7
    topology = {"nodes": 3, "placement": {0: [], 1: [0, 1, 2], 2: [3, 4, 5]}}
    got = durations(engine, workers=2 * w, topology=topology, network={"bandwidth": rate})
    assert got == pytest.approx([COMPUTE + w * BYTES / rate] * 4, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_workers_on_the_master_s_node_cross_no_link(engine):
    """All workers on node 0, beside the master: a message arrives its latency after it is ready."""
    got = durations(engine, workers=4, topology={"nodes": 1}, network={"latency": 0.02, "bandwidth": 1e3})
    assert got == pytest.approx([COMPUTE + 0.02] * 4, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_ingress_is_filled_by_water_levels_over_the_nodes_uplinks(engine):
    """Node 1: one worker on a slow uplink s; node 2: three workers on a fast one; an ingress of rate r between
    them. Node 1's flow keeps its s (below the level), node 2's three share r - s: they end 3 b / (r - s) after
    they start; node 1's ends at b / s (later), alone on the ingress by then."""
    slow, fast, ingress = 4e6, 1e8, 2e7
    topology = {"nodes": 3, "placement": {0: [], 1: [0], 2: [1, 2, 3]}}
    network = {"bandwidth": fast, "nodes": {1: {"bandwidth": slow}}, "master": {"ingress": ingress}}
    wait_all = {"scheme": "uncoded", "policy": "wait_all"}
    three = {"scheme": "uncoded", "policy": {"name": "fastest_k", "k": 3}}
    assert 3 * BYTES / (ingress - slow) < BYTES / slow
    got = durations(engine, workers=4, topology=topology, network=network, variants=[three])
    assert got == pytest.approx([COMPUTE + 3 * BYTES / (ingress - slow)] * 4, rel=1e-12)
    got = durations(engine, workers=4, topology=topology, network=network, variants=[wait_all])
    assert got == pytest.approx([COMPUTE + BYTES / slow] * 4, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_node_on_a_slow_link_is_a_network_straggler_a_code_rides_out(engine):
    """Four workers on nodes 1 and 2 (spread), node 2's uplink 20 times slower. Uncoded waits for node 2's two
    messages sharing its link: 2 b / slow. FR s=1's groups, (0, 1) and (2, 3), each have a worker on node 1:
    it decodes once node 1's two messages are in, 2 b / fast; each FR message carries 2 partitions' worth of
    work but as many bytes."""
    fast, slow = 4e7, 2e6
    topology = {"nodes": 3, "placement": {0: [], 1: [0, 2], 2: [1, 3]}}
    network = {"bandwidth": fast, "nodes": {2: {"bandwidth": slow, "latency": 0.05}}}
    uncoded = durations(engine, workers=4, topology=topology, network=network)
    assert uncoded == pytest.approx([COMPUTE + 0.05 + 2 * BYTES / slow] * 4, rel=1e-12)
    fr = durations(engine, workers=4, topology=topology, network=network, variants=[{"scheme": "fr", "s": 1}])
    assert fr == pytest.approx([2 * COMPUTE + 2 * BYTES / fast] * 4, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_later_flow_takes_half_the_ingress_from_its_arrival(engine):
    """Two workers on an ingress of rate r, with b = 2 r c: worker 0 is ready at c, worker 1 (half as fast) at
    2c. Worker 0 has the ingress alone for c (r c sent), then half of it: its last r c take 2c, to 4c. Worker 1
    gets r / 2 from 2c to 4c (r c sent), then all of it for its last r c: c more, to 5c."""
    rate = BYTES / (2 * COMPUTE)
    compute = {"per_partition": {"distribution": "deterministic", "value": COMPUTE}, "speeds": [1.0, 0.5]}
    sc = scenario(iterations=3, gradient={"length": LENGTH, "dtype": "float32"}, workers=2,
                  network={"master": {"ingress": rate}}, compute=compute)  # fmt: skip
    rec = ENGINES[engine](sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    arrival = rec.arrival - rec.start[:, None]
    assert arrival[:, 0] == pytest.approx([4 * COMPUTE] * 3, rel=1e-12)
    assert arrival[:, 1] == pytest.approx([5 * COMPUTE] * 3, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_the_weights_broadcast_to_n_workers_shares_the_master_s_egress(engine):
    """n copies of the weights (b bytes, the gradient's size) leave an egress of rate e together: each job starts
    n b / e after its iteration, and the iteration lasts that plus the compute."""
    n, rate = 5, 4e7
    got = durations(engine, workers=n, network={"master": {"egress": rate}})
    assert got == pytest.approx([n * BYTES / rate + COMPUTE] * 4, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_each_node_s_downlink_is_shared_by_its_workers_copies(engine):
    """Two workers on the master's node (no link), two on node 1 whose downlink of rate d they share, and three
    on node 2 with a downlink of its own, twice as fast: node 1's jobs start 2 b / d after the iteration, node
    2's 3 b / (2 d), node 0's at once; the iteration waits for node 1's (the later)."""
    rate = 2e7
    topology = {"nodes": 3, "placement": {0: [0, 1], 1: [2, 3], 2: [4, 5, 6]}}
    network = {"downlink": rate, "nodes": {2: {"downlink": 2 * rate}}}
    sc = scenario(iterations=2, compute=DETERMINISTIC, gradient={"length": LENGTH, "dtype": "float32"}, workers=7,
                  topology=topology, network=network)  # fmt: skip
    rec = ENGINES[engine](sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    waited = rec.compute_start - rec.start[:, None]
    expected = [0, 0] + [2 * BYTES / rate] * 2 + [3 * BYTES / (2 * rate)] * 3
    np.testing.assert_allclose(waited, [expected] * 2, rtol=1e-12, atol=1e-15)
    assert rec.duration == pytest.approx([2 * BYTES / rate + COMPUTE] * 2, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_without_egress_or_downlinks_the_weights_take_no_time(engine):
    """Today's scenarios: uplinks only, jobs start as their iteration does."""
    sc = scenario(iterations=2, compute=DETERMINISTIC, gradient={"length": LENGTH, "dtype": "float32"}, workers=3,
                  network={"bandwidth": 1e7})  # fmt: skip
    rec = ENGINES[engine](sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    assert (rec.compute_start == rec.start[:, None]).all()


def test_a_message_abandoned_once_sent_crosses_the_link_beside_the_next_iteration_s():
    """Two workers on node 1's uplink of rate r, b = 4 r c, the fastest one taken: worker 0 is ready at c, worker
    1 (0.4 as fast) at 2.5c. Worker 0 has the link alone for 1.5c, then half of it for its last 2.5c worth: to
    7.5c. Dropped, worker 1's message leaves the link then, and every iteration lasts 7.5c. Finishing (TCP sends
    what it was given), it has 1.5c worth left at 7.5c: alone until worker 0's next is ready at 8.5c, then
    shared, to 9.5c; worker 0's, 0.5c worth sent by then, has the link alone until worker 1's next is ready at
    10c, then half of it for its last 3c worth: to 16c. The second iteration lasts 8.5c."""
    rate = BYTES / (4 * COMPUTE)
    compute = {"per_partition": {"distribution": "deterministic", "value": COMPUTE}, "speeds": [1.0, 0.4]}
    fastest = [{"scheme": "uncoded", "policy": {"name": "fastest_k", "k": 1}}]
    topology = {"nodes": 2, "placement": {0: [], 1: [0, 1]}}
    got = {}
    for abandoned in ("drop", "finish"):
        network = {"bandwidth": rate, "abandoned_messages": abandoned}
        sc = scenario(iterations=2, gradient={"length": LENGTH, "dtype": "float32"}, workers=2, topology=topology,
                      network=network, compute=compute, variants=fastest)  # fmt: skip
        got[abandoned] = simulate_event(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    assert got["drop"].duration == pytest.approx([7.5 * COMPUTE] * 2, rel=1e-12)
    assert got["finish"].duration == pytest.approx([7.5 * COMPUTE, 8.5 * COMPUTE], rel=1e-12)
    assert got["finish"].arrival[0, 1] == pytest.approx(9.5 * COMPUTE, rel=1e-12)  # when it had crossed


def test_a_message_abandoned_before_it_was_sent_takes_no_share_of_the_link():
    """As above with worker 1 an eighth as fast (ready at 8c): worker 0's message, alone, ends at 5c, before worker
    1's is ready; finishing abandoned messages changes nothing, since worker 1 was stopped before it sent."""
    rate = BYTES / (4 * COMPUTE)
    compute = {"per_partition": {"distribution": "deterministic", "value": COMPUTE}, "speeds": [1.0, 0.125]}
    fastest = [{"scheme": "uncoded", "policy": {"name": "fastest_k", "k": 1}}]
    topology = {"nodes": 2, "placement": {0: [], 1: [0, 1]}}
    for abandoned in ("drop", "finish"):
        network = {"bandwidth": rate, "abandoned_messages": abandoned}
        sc = scenario(iterations=3, gradient={"length": LENGTH, "dtype": "float32"}, workers=2, topology=topology,
                      network=network, compute=compute, variants=fastest)  # fmt: skip
        rec = simulate_event(sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
        assert rec.duration == pytest.approx([5 * COMPUTE] * 3, rel=1e-12)


def test_the_fast_path_refuses_abandoned_messages_that_finish_in_one_sentence():
    from gcbench.errors import GcbenchError
    from gcbench.sim.engines import engine_for

    topology = {"nodes": 2, "placement": {0: [], 1: [0, 1]}}
    network = {"bandwidth": 1e6, "abandoned_messages": "finish"}
    sc = scenario(workers=2, topology=topology, network=network, engine="vectorised")
    with pytest.raises(GcbenchError, match=r"network.abandoned_messages: finish an abandoned message shares the"):
        engine_for(sc, sc.variants[0])
    assert engine_for(sc.model_copy(update={"engine": "auto"}), sc.variants[0]) == "event"


def burst_durations(engine: str, workers: int, placement, burst: float, rate: float, **fields):
    topology = {"nodes": 2, "placement": {0: [], 1: placement}}
    network = {"bandwidth": rate, "burst": burst, **fields.pop("network", {})}
    return durations(engine, workers=workers, topology=topology, network=network, **fields)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_message_on_an_idle_shaped_link_crosses_its_first_burst_bytes_at_once(engine):
    """A token bucket B deep on a link of rate r: one worker's message of b bytes takes (b - B) / r; one of no
    more than B bytes crosses at once. Two workers ready together: the first (by worker) takes the bucket, and
    the two then share the rate: the last byte is through (2b - B) / r after they are ready."""
    rate, burst = 1e7, BYTES / 4
    got = burst_durations(engine, 1, [0], burst, rate)
    assert got == pytest.approx([COMPUTE + (BYTES - burst) / rate] * 4, rel=1e-12)
    got = burst_durations(engine, 1, [0], 2 * BYTES, rate)
    assert got == pytest.approx([COMPUTE] * 4, rel=1e-12)
    got = burst_durations(engine, 2, [0, 1], burst, rate)
    assert got == pytest.approx([COMPUTE + (2 * BYTES - burst) / rate] * 4, rel=1e-12)


@pytest.mark.parametrize("engine", ENGINES)
def test_a_bucket_refills_at_the_link_s_rate_while_it_idles(engine):
    """Worker 0 (ready at c) and worker 1 (4/7 as fast: ready at 1.75c) on one link, b = 2B, B = r c / 2: worker
    0's message takes the full bucket and ends (b - B) / r = c / 2 later, at 1.5c; the link idles until 1.75c and
    refills r (c / 4) = B / 2 bytes, half the bucket: worker 1's crosses those at once and ends (b - B / 2) / r =
    0.75c later, at 2.5c (a fresh link's full bucket would end it at 2.25c)."""
    rate = BYTES / COMPUTE
    burst = BYTES / 2
    compute = {"per_partition": {"distribution": "deterministic", "value": COMPUTE}, "speeds": [1.0, 4 / 7]}
    topology = {"nodes": 2, "placement": {0: [], 1: [0, 1]}}
    sc = scenario(iterations=3, gradient={"length": LENGTH, "dtype": "float32"}, workers=2, topology=topology,
                  network={"bandwidth": rate, "burst": burst}, compute=compute)  # fmt: skip
    rec = ENGINES[engine](sc, sc.variants[0], scheme_for(sc, sc.variants[0]), 0)
    arrival = rec.arrival - rec.start[:, None]
    assert arrival[:, 0] == pytest.approx([1.5 * COMPUTE] * 3, rel=1e-12)
    assert arrival[:, 1] == pytest.approx([2.5 * COMPUTE] * 3, rel=1e-12)
