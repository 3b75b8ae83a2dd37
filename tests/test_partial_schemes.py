"""Issue 12: partial_cr and chunked_cr, whose slow workers' partial work counts, in the simulator and end to end.

The end-to-end tests train a tiny synthetic scenario on Ray and on torch.distributed and compare the losses with
the local backend's (one process, the whole mini-batch): exact decodes give the same steps.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from gcbench.coding import make_scheme
from gcbench.results.schema import MESSAGE_COLUMNS
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario
from gcbench.sim.cluster import SimPyCluster
from gcbench.sim.event import simulate_event

LATENCY = 0.25
UNIT = 1.0  # seconds per partition


class TwoSlow(SimPyCluster):
    """Workers 0 and 1 take 1.5 times as long as the others: 1.5 units per partition against 1."""

    def seconds(self, worker: int, row: int) -> float:
        return self.busy[row][worker] * (1.5 if worker in (0, 1) else 1.0)


def simulate(scheme: str, **params):
    sc = Scenario.model_validate(
        {
            "name": "partial",
            "workers": 4,
            "iterations": 2,
            "compute": {"per_partition": {"distribution": "deterministic", "value": UNIT}},
            "network": {"latency": LATENCY},
            "variants": [{"scheme": scheme, "s": 1, "policy": "decodable", **params}],
        }
    )
    v = sc.variants[0]
    return simulate_event(sc, v, scheme_for(sc, v), 0, cluster_class=TwoSlow)


@pytest.mark.parametrize(("scheme", "params"), [("partial_cr", {}), ("chunked_cr", {"m": 1})])
def test_a_slow_worker_s_first_message_is_used_and_the_iteration_ends_before_cr_s(scheme, params):
    """cr (s = 1) waits for three whole jobs: a slow worker's, 3 units. Both new schemes decode at 1.5 units,
    when the slow workers' first partitions are done: partial_cr from every worker's first message (each its own
    partition), chunked_cr once every chunk has a copy (chunks 0 and 1 from the slow workers' first messages)."""
    cr = simulate("cr")
    assert cr.duration.tolist() == [3 * UNIT + LATENCY] * 2
    rec = simulate(scheme, **params)
    assert rec.exact.all() and rec.duration.tolist() == [1.5 * UNIT + LATENCY] * 2
    log = pd.DataFrame(rec.messages.columns())
    slow = log[log.worker.isin([0, 1]) & (log.iteration == 0)].sort_values("message")
    assert slow.groupby("worker").used.apply(list).tolist() == [[True, False], [True, False]]
    assert slow[slow.used].ready.tolist() == [1.5 * UNIT] * 2  # half way through their 3-unit jobs


def test_chunked_cr_decodes_each_chunk_from_m_copies_and_partial_cr_from_its_first_messages():
    """The structural claims, spelled out at n = 4, s = 1."""
    chunked = make_scheme("chunked_cr", n=4, s=1, m=2)  # worker i: chunks i, i+1, i+2, one message each
    firsts_and_seconds = [mid for w in range(4) for mid in chunked.messages(w)[:2]]  # chunk j: from j and j - 1
    assert chunked.can_decode(firsts_and_seconds)
    assert not chunked.can_decode([mid for w in range(4) for mid in chunked.messages(w)[:1]])  # one copy each
    partial = make_scheme("partial_cr", n=4, s=1)
    assert partial.can_decode([partial.messages(w)[0] for w in range(4)])
    assert partial.can_decode([partial.messages(w)[1] for w in range(3)])
    assert not partial.can_decode([partial.messages(w)[0] for w in range(3)])


TINY = """\
name: partial
workers: 4
iterations: 3
compute: {per_partition: {distribution: exponential, rate: 10}}
straggling: {model: independent, probability: 0.3, delay: 0.2}
variants:
  - {scheme: partial_cr, s: 1}
  - {scheme: chunked_cr, s: 1, m: 2}
training: {dataset: synthetic, batch_size: 48, eval_every: 3, device: cpu}
"""


def test_a_messages_log_survives_a_checkpoint_and_a_damaged_one_is_refused():
    """A real run keeps its messages table's rows in its checkpoints (key ``messages``)."""
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    from gcbench.real.run.checkpoint import _structure_problem
    from gcbench.results.messages import MessageLog

    log = MessageLog()
    log.add(0, 1, 0, 2, 0.5, 0.75, True)
    log.add(1, 1, 1, 3, 1.5, 1.75, False)
    back = MessageLog.restored(log.row_dicts(1))
    assert back.rows == log.rows[:1] and back.used_ids(0) == [2]
    state = {"model": {}, "optimizer": {}, "torch_rng": None, "next_iteration": 0, "rows": [], "workers": []}
    assert "message rows" in _structure_problem({**state, "messages": log.row_dicts(2)}, 3, 4)
    assert "message rows" in _structure_problem({**state, "messages": [{"iteration": 0}]}, 3, 4)


def trains_as_local(tmp_path, backend: str) -> None:
    from typer.testing import CliRunner

    from gcbench.cli import app
    from gcbench.results import read_results

    path = tmp_path / "partial.yaml"
    path.write_text(TINY)
    for name in (backend, "local"):
        result = CliRunner().invoke(app, ["run", str(path), "--backend", name, "--out", str(tmp_path / name)])
        assert result.exit_code == 0, result.output
    iterations = read_results(tmp_path / backend)[0]
    expected = read_results(tmp_path / "local")[0]["loss"].to_numpy()
    assert iterations["variant"].nunique() == 2 and iterations["exact"].all()
    # the real run's messages table: each message as the master took it, counted in messages_used
    messages = pd.read_parquet(tmp_path / backend / "messages.parquet")
    assert list(messages.columns) == list(MESSAGE_COLUMNS) and not (tmp_path / "local" / "messages.parquet").exists()
    used = messages[messages["used"]].groupby(["variant", "iteration"]).size()
    assert used.to_dict() == iterations.set_index(["variant", "iteration"])["messages_used"].to_dict()
    assert (messages["ready"] <= messages["arrival"]).all()
    for label, frame in iterations.groupby("variant"):
        trained = frame.sort_values("iteration")["loss"].to_numpy()
        np.testing.assert_allclose(trained, expected, rtol=1e-4, err_msg=label)


@pytest.mark.slow
def test_both_train_on_torch_as_one_process_does_on_the_whole_mini_batch(tmp_path):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    trains_as_local(tmp_path, "torch")


@pytest.mark.slow
def test_both_train_on_ray_as_one_process_does_on_the_whole_mini_batch(tmp_path):
    pytest.importorskip("ray", reason="ray is part of the [real] extra")
    trains_as_local(tmp_path, "ray")


def test_impossible_parameters_exit_2_with_one_sentence():
    from typer.testing import CliRunner

    from gcbench.cli import app

    runner = CliRunner()
    for args, sentence in (
        (["chunked_cr", "--n", "4", "--s", "2", "--m", "3"], "The 'm' parameter of chunked_cr must be an int in"),
        (["partial_cr", "--n", "4", "--s", "1", "--seed", "-1"], "The 'seed' parameter of partial_cr must be an int"),
    ):
        result = runner.invoke(app, ["schemes", *args])
        assert result.exit_code == 2, result.output
        assert sentence in result.output and result.output.count("error:") == 1 and "Traceback" not in result.output
