"""The SimPy cluster beside processes of a subclass's, its shared link's models, and one link for a whole
synchronous run under ``stale_work: finish``."""

from __future__ import annotations

import signal

import numpy as np
import pandas as pd
import pytest

from gcbench.errors import GcbenchError
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario
from gcbench.sim.cluster import SimPyCluster
from gcbench.sim.event import simulate_event

HANG_SECONDS = 60  # a run here takes well under a second; one that hangs fails instead of stalling the suite


@pytest.fixture(autouse=True)
def no_hang():
    def on_alarm(signum, frame):
        raise TimeoutError(f"the run hung for {HANG_SECONDS} s")

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(HANG_SECONDS)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


class Drifting(SimPyCluster):
    """A process that never ends, as docs/architecture.md invites: every second it drifts nothing (factor 1),
    so the tables are the plain cluster's; only the calendar is never empty."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.ticks = 0
        self.env.process(self.drift())

    def drift(self):
        while True:
            yield self.env.timeout(1.0)
            self.ticks += 1


def scenario_of(**fields) -> Scenario:
    data = {"name": "simpy", "workers": 6, "iterations": 20, "gradient": {"length": 1_000_000}}
    data["variants"] = [{"scheme": "uncoded"}]
    data["compute"] = {"per_partition": {"distribution": "exponential", "rate": 2.0}}
    return Scenario.model_validate({**data, **fields})


def run(scenario: Scenario, cluster_class=SimPyCluster):
    variant = scenario.variants[0]
    scheme = scheme_for(scenario, variant)
    rec = simulate_event(scenario, variant, scheme, 0, cluster_class=cluster_class)
    loads = np.array([len(scheme.partitions(w)) for w in range(scheme.n)])
    return pd.DataFrame(rec.iteration_columns()), pd.DataFrame(rec.worker_columns(loads))


def assert_same_tables(a, b) -> None:
    for left, right in zip(a, b, strict=True):
        pd.testing.assert_frame_equal(left, right, check_exact=False, rtol=1e-12)


CRASHES = {"model": "crash", "probability": 0.1, "downtime": 0.5}
SHARED = {"latency": 0.01, "bandwidth": 4e8, "shared_link": True}  # 10 ms per 1 MB message: the link queues


@pytest.mark.parametrize(
    "fields",
    [
        {"variants": [{"scheme": "fr", "s": 1, "policy": "wait_all"}]},
        {"variants": [{"scheme": "cr", "s": 2, "policy": "wait_all"}], "stale_work": "finish", "failures": CRASHES},
        {"variants": [{"scheme": "uncoded", "policy": {"name": "k_async", "k": 3}}]},
        {"variants": [{"scheme": "uncoded", "policy": {"name": "k_async", "k": 3}}], "failures": CRASHES},
        {"variants": [{"scheme": "uncoded", "policy": {"name": "k_async", "k": 2}}], "network": SHARED},
    ],
    ids=["wait_all", "wait_all-finish-crashes", "k_async", "k_async-crashes", "k_async-shared-link"],
)
def test_a_process_that_never_ends_changes_no_table_and_the_run_ends(fields):
    scenario = scenario_of(**fields)
    assert_same_tables(run(scenario, Drifting), run(scenario))


@pytest.mark.parametrize("policy", ["wait_all", {"name": "k_async", "k": 2}], ids=["wait_all", "k_async"])
def test_a_stuck_run_beside_a_process_that_never_ends_still_says_it_can_never_finish(policy):
    scenario = scenario_of(
        variants=[{"scheme": "uncoded", "policy": policy}],
        failures={"model": "crash", "probability": 0.3, "downtime": None},  # workers die for good
    )
    with pytest.raises(GcbenchError) as plain:
        run(scenario)
    with pytest.raises(GcbenchError) as drifting:
        run(scenario, Drifting)
    assert "can never finish" in str(plain.value)
    assert str(drifting.value) == str(plain.value)


def test_with_no_work_outstanding_next_event_moves_the_clock_to_until_or_returns_at_once():
    scenario = scenario_of()
    cluster = Drifting.from_scenario(scenario, scheme_for(scenario, scenario.variants[0]), 0)
    assert not cluster.pending()
    assert cluster.next_event(2.5) is None
    assert cluster.now == 2.5 and cluster.ticks == 2  # the process ran up to the clock
    assert cluster.next_event(float("inf")) is None
    assert cluster.now == 2.5


def late_work_scenario(**fields) -> Scenario:
    """Two workers, 1 s a job, worker 1 1.25 s later every time, 0.75 s a message on the shared link
    (3 MB at 4 MB/s), the master taking the first result: worker 1's message is late every iteration."""
    network = {"latency": 0.0, "bandwidth": 4e6, "shared_link": True, **fields.pop("network", {})}
    return scenario_of(
        workers=2,
        iterations=3,
        gradient={"length": 750_000},
        compute={"per_partition": {"distribution": "deterministic", "value": 1.0}},
        straggling={"model": "fixed", "workers": [1], "delay": 1.25},
        network=network,
        variants=[{"scheme": "uncoded", "policy": {"name": "fastest_k", "k": 1, "fallback": "approximate"}}],
        **fields,
    )


def timings(scenario: Scenario, cluster_class=SimPyCluster):
    variant = scenario.variants[0]
    rec = simulate_event(scenario, variant, scheme_for(scenario, variant), 0, cluster_class=cluster_class)
    return rec.duration.tolist(), rec.arrival.tolist()


@pytest.mark.parametrize("link_model", ["events", "resource"])
def test_under_finish_an_iteration_s_late_message_delays_the_next_one_s_on_the_link(link_model):
    """Iteration 0: worker 0's message on the link over [1, 1.75]; it ends the iteration. Worker 1's (ready at
    2.25) holds the link over [2.25, 3]; worker 0's of iteration 1 (ready at 2.75) waits for it: [3, 3.75]
    (3.5 on a link of its own), so iteration 1 takes 2 s. Worker 1's job 1 (begun at 2.25, ready at 4.5)
    holds [4.5, 5.25]; worker 0's of iteration 2 (begun at 3.75, ready at 4.75) arrives at 6."""
    durations, arrivals = timings(late_work_scenario(stale_work="finish", network={"link_model": link_model}))
    assert durations == [1.75, 2.0, 2.25]
    assert arrivals == [[1.75, 3.0], [3.75, 5.25], [6.0, 7.5]]


def test_under_abandon_each_iteration_has_a_link_of_its_own():
    """Abandoned workers stop: worker 1's late message delays nobody, every iteration takes 1.75 s."""
    durations, arrivals = timings(late_work_scenario(stale_work="abandon"))
    assert durations == [1.75, 1.75, 1.75]
    assert arrivals == [[1.75, 3.0], [3.5, 4.75], [5.25, 6.5]]


def test_link_model_resource_runs_the_shared_link_on_a_simpy_resource():
    from gcbench.sim.cluster import Link, ResourceLink

    for model, expected in [("events", Link), ("resource", ResourceLink)]:
        scenario = late_work_scenario(stale_work="finish", network={"link_model": model})
        cluster = SimPyCluster.from_scenario(scenario, scheme_for(scenario, scenario.variants[0]), 0)
        assert type(cluster.link) is expected


def test_the_architecture_docs_example_extends_the_resource_link():
    from pathlib import Path

    text = (Path(__file__).resolve().parents[1] / "docs" / "architecture.md").read_text()
    code = text.split("### Extending the shared link", 1)[1].split("```python", 1)[1].split("```", 1)[0]
    namespace: dict = {}
    exec(code, namespace)  # the documented example, as written
    # two messages at once: worker 0's of iteration 1 no longer waits for worker 1's late one
    durations, arrivals = timings(late_work_scenario(stale_work="finish"), namespace["TwoLaneCluster"])
    assert durations == [1.75, 1.75, 1.75]
    assert arrivals[1] == [3.5, 5.25]


LATE_WORK_YAML = """\
name: late_work
workers: 2
iterations: 3
seeds: [0]
gradient: {length: 750000}
compute: {per_partition: {distribution: deterministic, value: 1.0}}
straggling: {model: fixed, workers: [1], delay: 1.25}
network: {latency: 0.0, bandwidth: 4.0e+6, shared_link: true, link_model: resource}
stale_work: finish
variants:
  - {scheme: uncoded, policy: {name: fastest_k, k: 1, fallback: approximate}}
"""


def simulate_cli(tmp_path, text: str, *args: str):
    from typer.testing import CliRunner

    from gcbench.cli import app

    path = tmp_path / "late.yaml"
    path.write_text(text)
    return CliRunner().invoke(app, ["simulate", str(path), "--out", str(tmp_path / "run"), *args])


def test_simulate_runs_link_model_resource_on_the_event_engine_and_says_so(tmp_path):
    import json

    done = simulate_cli(tmp_path, LATE_WORK_YAML)
    assert done.exit_code == 0, done.output
    run = json.loads((tmp_path / "run" / "run.json").read_text())
    assert run["engines"] == {"uncoded/fastest_k": "event"} and run["link_model"] == "resource"
    assert "shared link model: resource" in done.output
    durations = pd.read_parquet(tmp_path / "run" / "iterations.parquet")["duration"].tolist()
    assert durations == [1.75, 2.0, 2.25]


def test_a_link_model_other_than_events_or_resource_exits_2_naming_the_field(tmp_path):
    done = simulate_cli(tmp_path, LATE_WORK_YAML.replace("link_model: resource", "link_model: fifo"))
    assert done.exit_code == 2 and "Traceback" not in done.output, done.output
    errors = [line for line in done.output.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "network.link_model: Input should be 'events' or 'resource'" in errors[0]


@pytest.mark.parametrize(
    ("network", "links"),
    [
        ("network: {latency: 0.0, bandwidth: 4.0e+6, shared_link: true, link_model: resource}", "network.shared_link"),
        ("network: {bandwidth: 4.0e+6}\ntopology: {nodes: 2}", "a topology's links"),
        ("network: {master: {ingress: 4.0e+6}}", "network.master.ingress"),
        (
            "network: {bandwidth: 4.0e+6, downlink: 4.0e+6}",
            "the weights' links (network.master.egress or network.downlink)",
        ),
    ],
    ids=["fifo", "topology", "ingress", "downlink"],
)
def test_the_vectorised_engine_refuses_late_work_on_a_shared_link_in_one_sentence(tmp_path, network, links):
    text = LATE_WORK_YAML.replace(
        "network: {latency: 0.0, bandwidth: 4.0e+6, shared_link: true, link_model: resource}", network
    )
    done = simulate_cli(tmp_path, text, "--engine", "vectorised")
    assert done.exit_code == 2, done.output
    errors = [line for line in done.output.splitlines() if line.startswith("error:")]
    assert errors == [
        "error: engine: vectorised gives each iteration's messages links of their own, and with "
        f"{links} and stale_work: finish late work shares the links with the next iteration's; use "
        "engine: auto or event, or stale_work: abandon."
    ]
    assert not (tmp_path / "run" / "iterations.parquet").exists()


def test_late_work_shares_the_master_s_ingress_fairly_with_the_next_iteration_s_messages(tmp_path):
    """LATE_WORK_YAML on an ingress of 4 MB/s shared fairly, 3 MB messages. Iteration 1 starts at 1.75; worker 1's
    late message (iteration 0's job) has the ingress alone from 2.25 to 2.75, then shares it with worker 0's:
    its last 1 MB at 2 MB/s ends at 3.25 (a FIFO link: 3.0), and worker 0's last 2 MB, alone again, at 3.75."""
    text = LATE_WORK_YAML.replace(
        "network: {latency: 0.0, bandwidth: 4.0e+6, shared_link: true, link_model: resource}",
        "network: {master: {ingress: 4.0e+6}}",
    )
    done = simulate_cli(tmp_path, text)
    assert done.exit_code == 0, done.output
    durations = pd.read_parquet(tmp_path / "run" / "iterations.parquet")["duration"]
    assert durations.tolist() == pytest.approx([1.75, 2.0, 2.25], rel=1e-12)
    workers = pd.read_parquet(tmp_path / "run" / "workers.parquet").set_index(["iteration", "worker"])
    assert workers.loc[(0, 1), "arrival"] == pytest.approx(3.25, rel=1e-12)  # iteration 0's job, late
    assert workers.loc[(1, 0), "arrival"] == pytest.approx(3.75, rel=1e-12)
