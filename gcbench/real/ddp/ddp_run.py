"""A (variant, seed) of the DistributedDataParallel baseline (``policy: allreduce``), one block at a time.

It has ``VariantRun``'s face (the session gives it turns, checkpoints and tables alike) but no master and no
cluster protocol: DDP has no master to wait, decode or redo anything, so there is nothing for the protocol
to carry. The driver starts n rank processes (gcbench/real/ddp/rank.py, ``python -m``, a TCPStore on a free
loopback port, as the torch cluster starts its workers; they need no Ray, so ``--backend ray`` runs them the
same way), tells them which iterations to train, and builds the shared tables from what each rank reports:
an iteration starts when the first rank starts it and ends when the all-reduce has reached every rank. The
driver evaluates and checkpoints rank 0's weights between blocks, in the format of every real run's
checkpoint, so ``--resume`` continues it.
"""

from __future__ import annotations

import logging
import queue
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from gcbench import stops
from gcbench.errors import GcbenchError
from gcbench.master.outcome import name_workers
from gcbench.real.processes import channel, zygote
from gcbench.real.processes.worker_session import WorkerSession, start_worker, worker_environment
from gcbench.real.run.checkpoint import load_checkpoint, save_checkpoint
from gcbench.real.run.training_run import OnIteration, TrainingRun, VariantStopped
from gcbench.real.wallclock.clock import WallClock
from gcbench.real.wallclock.placement import emulated_placement, say_node_crashed, use_node_interface
from gcbench.real.wallclock.threads import EVALUATION_THREADS, compute_threads
from gcbench.results.recorder import RunRecorder
from gcbench.results.rows import identity, restore, row_dicts, table_columns
from gcbench.scenario.build import placed, scheme_for
from gcbench.scenario.draws import draw_run
from gcbench.scenario.schema import Scenario
from gcbench.training.data import Dataset
from gcbench.training.device import resolve_device, worker_device
from gcbench.training.evaluation import evaluate_master
from gcbench.training.gradients import FlatModel
from gcbench.training.models import build_model

# The process group's backend when ranks share a GPU (training.ddp_backend: auto); docs/gpu.md measures both
SHARED_GPU_BACKEND = "gloo"
RANK = "gcbench.real.ddp.rank"  # the module a rank runs (python -m, or a zygote's fork)


class RankLauncher:
    """Starts the ranks' processes (the ``launcher`` of their worker sessions, gcbench/real/processes/): forks
    of a zygote that imported torch once, as the torch cluster's workers are (on Linux), or else fresh
    interpreters. On an emulated cluster (``gcbench run --emulate``), rank r runs on worker r's node, a fork of
    that node's zygote, and meets the driver's store at node 0's address: the ranks' all-reduce crosses the
    nodes' links."""

    def __init__(self, world: int, port: int, timeout: float, nodes=None, rank_nodes: list[int] | None = None):
        self.world, self.port, self.timeout, self.rank_nodes = world, port, timeout, rank_nodes
        self.host = channel.HOST if nodes is None else nodes.addresses[0]
        self.zygote = zygote.Zygote(worker_environment(), (RANK,)) if zygote.usable() and nodes is None else None
        self.zygotes = None
        if nodes is not None:
            from gcbench.real.emulation import INTERFACE

            self.zygotes = zygote.NodeZygotes(nodes, worker_environment(), (RANK,), INTERFACE)

    def spawn(self, rank: int, session: int, scope: str = ""):
        arguments = [str(value) for value in (rank, self.world, self.port, self.timeout, self.host)]
        if self.zygotes is not None:
            return self.zygotes.spawn(self.rank_nodes[rank], RANK, arguments, self.timeout)
        if self.zygote is not None:
            return self.zygote.spawn(RANK, arguments, self.timeout)
        return start_worker([sys.executable, "-m", RANK, *arguments])

    def close(self) -> None:
        if self.zygote is not None:
            self.zygote.close()
        if self.zygotes is not None:
            self.zygotes.close()


class DDPRun(TrainingRun):
    """Variant ``index`` (an allreduce one) of the scenario with one seed: its recorder, checkpoint and ranks."""

    needs_cluster = False  # its ranks are torch.distributed processes whatever the backend: no cluster, no Ray

    def __init__(self, scenario: Scenario, index: int, seed: int, data: Dataset, checkpoint: Path | None,
                 backend: str = "torch") -> None:  # fmt: skip
        self.scenario, self.index, self.seed, self.data, self.backend = scenario, index, seed, data, backend
        self.variant = scenario.variants[index]
        self.scheme = scheme_for(scenario, self.variant)
        self.scenario = scenario = placed(scenario, self.scheme)  # (by_code: its workers where its code puts them)
        self.n, self.timeout = self.scheme.n, scenario.training.timeout
        self.loads = np.ones(self.n, dtype=int)
        self.checkpoint = checkpoint
        self.state = load_checkpoint(checkpoint, scenario, self.variant, data) if checkpoint else None
        self.rec = RunRecorder(scenario.iterations, self.n)
        self.draws = draw_run(scenario, self.scheme, seed)  # the straggling and overhead rows of uncoded wait_all
        self.rec.straggling[:] = self.draws.straggling
        if self.state:
            restore(self.rec, self.state["rows"], self.state["workers"])
        self.resumed_at = self.next_iteration = self.state["next_iteration"] if self.state else 0
        self.checkpointed = self.resumed_at
        self.stopped: str | None = None
        self.sessions: list[WorkerSession] = []
        self.rendezvous, self.launcher = None, None
        self.inbox: queue.Queue = queue.Queue()
        self.clock = WallClock()
        self.kills = scheduled_kills(scenario)  # iteration -> the ranks a scheduled crash kills as it starts
        self.model = build_model(scenario.training.model, data.classes, seed)  # rank 0's weights, between blocks
        self.flat = FlatModel(self.model, scenario.training)

    @property
    def label(self) -> str:
        return self.variant.display_label()

    @property
    def finished(self) -> bool:
        return self.stopped is not None or self.next_iteration >= self.scenario.iterations

    def run_block(self, last: int, on_iteration: OnIteration | None = None) -> None:
        """Iterations ``next_iteration`` to ``last`` (exclusive), in stretches that end where the driver
        evaluates; then a checkpoint."""
        try:
            if not self.sessions:
                self._start()
            self.clock.resume()
            for first, end in stretches(self.next_iteration, last, self.scenario, self.kills):
                self._train(first, end, on_iteration)
            self.clock.pause()
        except GcbenchError as error:
            self.stopped = str(error)
            self.close()
            raise VariantStopped(str(error), *self.frames()) from None
        if self.checkpoint:
            rows, workers = row_dicts(self.rec, self.loads, self.next_iteration)
            rng = torch.get_rng_state()  # the driver's: the ranks draw no random numbers
            save_checkpoint(self.checkpoint, self.model, self.flat.optimizer, self.next_iteration, rows, workers, rng)
            self.checkpointed = self.next_iteration
        if self.finished:
            self.close()

    def _start(self) -> None:
        # kept for the whole run: NCCL builds its communicator through the store at the first all-reduce
        self.rendezvous = rendezvous = channel.store(0, self.timeout)
        placement = emulated_placement(self.scenario)
        if placement is not None:
            use_node_interface()  # (the driver's end of each rank's channel: node 0's address)
        self.launcher = launcher = RankLauncher(self.n, rendezvous.port, self.timeout, *(placement or ()))
        self.sessions = [WorkerSession(r, 0, launcher, self.timeout) for r in range(self.n)]
        device, process_group, shared = rank_devices(self.scenario, self.n)
        shards = self._shards()
        for session in self.sessions:
            try:
                session.connect(rendezvous, self.inbox)
            except RuntimeError:  # gloo gave up waiting for it
                raise GcbenchError(
                    f"rank {session.worker} of '{self.label}' did not join within {self.timeout:g} s "
                    "(training.timeout)."
                ) from None
            setup = self._setup(session.worker, device[session.worker], process_group, shards[session.worker])
            session.send({**setup, "nccl_hostid": process_group == "nccl" and shared})
        for _ in range(self.n):
            self._take(("ready",))
        self.state = None  # sent: its rows live on in the recorder
        self.clock.continue_from(float(self.rec.end[self.next_iteration - 1]) if self.next_iteration else 0.0)
        self.clock.pause()

    def _shards(self) -> list:
        from gcbench.training.batches import PartitionSampler

        training = self.scenario.training
        sampler = PartitionSampler(len(self.data.train_labels), self.n, training.batch_size, self.seed)
        return sampler.shard_data(self.data.train_images, self.data.train_labels)

    def _setup(self, rank: int, device: str, process_group: str, shard) -> dict[str, Any]:
        state = self.state
        hook, rank_of_powersgd = self.variant.policy.hook_for(self.variant.compressor)  # (the scenario checked it)
        return {
            "kind": "setup", "training": self.scenario.training, "device": device, "process_group": process_group,
            "classes": self.data.classes, "seed": self.seed, "samples": len(self.data.train_labels), "shard": shard,
            "straggling": self.scenario.straggling, "straggles": self.draws.straggling[:, rank].tolist(),
            "overhead": self.draws.overhead[:, rank].tolist(), "hook": hook,
            "powersgd_rank": rank_of_powersgd,
            "state": {"model": state["model"], "optimizer": state["optimizer"]} if state else None,
        }  # fmt: skip

    def _train(self, first: int, end: int, on_iteration: OnIteration | None) -> None:
        """Iterations first..end-1 on every rank; then rank 0's weights, evaluated where the scenario says."""
        for session in self.sessions:
            if not session.send({"kind": "run", "first": first, "last": end}):
                raise GcbenchError(self._lost(session.worker, first))
        if first in self.kills:
            self._kill(first)
        reports: dict[int, list[dict]] = {}
        state = None  # rank 0's, after its last iteration: it may come before another rank's last report
        for t in range(first, end):
            while len(reports.get(t, [])) < self.n:
                kind, rank, message = self._take(("iteration", "state"), t)
                if kind == "state":
                    state = message
                else:
                    reports.setdefault(message["iteration"], []).append({**message, "rank": rank})
            self._record(t, reports.pop(t))
            if t < end - 1 and on_iteration:
                on_iteration(t + 1, float(self.rec.loss[t]), np.nan)
        state = state or self._take(("state",), end - 1)[2]
        self.model.load_state_dict(state["model"])
        self.flat.optimizer.load_state_dict(state["optimizer"])
        accuracy = np.nan
        if end % self.scenario.training.eval_every == 0 or end == self.scenario.iterations:
            self.clock.pause()  # (between iterations, and on no clock: as in gcbench/real/run/variant_run.py)
            with compute_threads(EVALUATION_THREADS):
                accuracy = evaluate_master(self.model, self.data, self.scenario.training.batch_size)
            self.clock.resume()
        self.rec.accuracy[end - 1] = accuracy
        self.next_iteration = end
        if on_iteration:
            on_iteration(end, float(self.rec.loss[end - 1]), accuracy)

    def _record(self, t: int, reports: list[dict]) -> None:
        rec, at = self.rec, self.clock.at
        for report in reports:
            r = report["rank"]
            rec.compute_start[t, r], rec.compute_end[t, r] = at(report["start"]), at(report["ready"])
            rec.arrival[t, r], rec.injected[t, r] = at(report["end"]), report["injected"]
        rec.used[t], rec.failed[t] = True, False
        rec.start[t], rec.end[t] = rec.compute_start[t].min(), rec.arrival[t].max()
        rec.duration[t] = max(report["end"] for report in reports) - min(report["start"] for report in reports)
        rec.reason[t], rec.exact[t], rec.residual[t], rec.staleness[t] = stops.ALL_ARRIVED, True, 0.0, 0.0
        rec.loss[t] = sum(report["loss"] for report in reports)

    def _take(self, kinds: tuple[str, ...], t: int | None = None) -> tuple[str, int, dict]:
        """The next message from the ranks, of one of these kinds; an exit or a silent training.timeout stops the
        variant."""
        try:
            kind, rank, _, message = self.inbox.get(timeout=self.timeout)
        except queue.Empty:
            raise GcbenchError(
                f"the ranks of '{self.label}' sent nothing for {self.timeout:g} s (training.timeout)"
                + ("" if t is None else f" in iteration {t}")
                + "."
            ) from None
        if kind == "exit":
            raise GcbenchError(self._lost(rank, t, message["code"]))
        if kind not in kinds:
            raise RuntimeError(f"rank {rank} sent {kind} where {' or '.join(kinds)} was due")
        return kind, rank, message

    def _kill(self, t: int) -> None:
        """The scheduled crash of iteration t: kill its ranks' processes (on an emulated cluster, every process of
        a crashed node but node 0's driver); then wait for the other ranks' ends, and stop with what happened."""
        ranks, nodes = self.kills[t]
        placement = emulated_placement(self.scenario)
        killed = time.monotonic()
        for node in nodes:
            if placement is not None and node > 0:
                pids = placement[0].crash(node)
                on_node = ", ".join(str(r) for r in ranks if placement[1][r] == node)
                say_node_crashed(node, t, len(pids), f"ranks {on_node}", "the scenario's schedule")
        for rank in ranks:
            self.sessions[rank].process.kill()
        ends: dict[int, float] = {}
        while len(ends) < self.n:
            try:
                kind, rank, _, _ = self.inbox.get(timeout=self.timeout)
            except queue.Empty:
                break
            if kind == "exit" and rank not in ends:
                ends[rank] = time.monotonic() - killed
        self._restore(placement, nodes)
        survivors = sorted(set(range(self.n)) - set(ranks))
        lost = f"node {nodes[0]} crashed" if nodes else f"rank {ranks[0]} crashed"
        if nodes:
            lost += f" with {name_workers(ranks, noun='rank')}"
        ended = [ends[r] for r in survivors if r in ends]
        if len(ended) == len(survivors):
            what = f"the other ranks' all-reduce failed and they exited within {max(ended):.2f} s"
        else:
            what = (f"{len(survivors) - len(ended)} of the other ranks still waited in their all-reduce after "
                    f"{self.timeout:g} s (training.timeout)")  # fmt: skip
        raise GcbenchError(
            f"'{self.label}': {lost} in iteration {t} (the scenario's schedule); DistributedDataParallel has no fault "
            f"tolerance: {what}, so the variant stops."
        )

    @staticmethod
    def _restore(placement, nodes: list[int]) -> None:
        """The crashed nodes made whole for the variants after this one: on an emulated cluster that runs Ray, a
        node's crash took its Ray processes too, which no Ray run will start again (a torch cluster's workers start
        a new zygote on their own)."""
        if placement is None:
            return
        from gcbench.real.emulation.ray_nodes import ray_node_restored

        for node in nodes:
            if (why := ray_node_restored(placement[0], node)) is not None:
                logging.getLogger("gcbench").warning(f"gcbench: {why}; the next variants' workers on it will not start")

    def _lost(self, rank: int, t: int | None, code: int | None = None) -> str:
        status = "" if code is None else f" (status {code})"
        when = "while starting" if t is None else f"in iteration {t}"
        return (
            f"rank {rank} of '{self.label}' exited{status} {when}; DistributedDataParallel has no fault "
            "tolerance, so the variant stops."
        )

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The iterations and workers tables of what this run has done so far."""
        v = self.variant
        keys = identity(self.label, v.scheme, v.s, self.scheme.m, v.policy.name, self.seed)
        iterations, workers = table_columns(self.rec, keys, self.loads, self.next_iteration, trained=True)
        return pd.DataFrame(iterations), pd.DataFrame(workers)

    def close(self, interrupted: bool = False) -> None:
        """Stop every rank (a stop message, then SIGTERM, then SIGKILL): none outlives the run."""
        for session in self.sessions:
            if session.sender is not None:
                session.send({"kind": "stop"})
        for session in self.sessions:
            session.stop()
        if self.launcher is not None:
            self.launcher.close()
        self.sessions, self.rendezvous, self.launcher = [], None, None

    def worker_pids(self) -> list[int]:
        return [session.pid for session in self.sessions if session.alive()]


def stretches(first: int, last: int, scenario: Scenario, kills: dict | None = None) -> list[tuple[int, int]]:
    """Iterations first..last-1 cut after every evaluation (every ``eval_every``): the driver evaluates between;
    and before each iteration a scheduled crash kills ranks in (the driver kills them as it starts)."""
    every = scenario.training.eval_every
    cuts = {first, last, *range((first // every + 1) * every, last, every)}
    cuts |= {t for t in (kills or {}) if first < t < last}
    cuts = sorted(cuts)
    return list(zip(cuts[:-1], cuts[1:], strict=False))


def scheduled_kills(scenario: Scenario) -> dict[int, tuple[list[int], list[int]]]:
    """Per iteration, the ranks the schedule's crashes kill as it starts, and the nodes they take (rank r is
    worker r, on worker r's node)."""
    kills: dict[int, tuple[list[int], list[int]]] = {}
    topology = scenario.topology
    node_of = None if topology is None else [int(k) for k in topology.node_of(scenario.workers)]
    for entry in getattr(scenario.failures, "schedule", []):
        ranks, nodes = kills.setdefault(entry.iteration, ([], []))
        if entry.node is None:
            ranks.append(entry.worker)
        else:
            nodes.append(entry.node)
            ranks += [r for r in range(scenario.workers) if node_of[r] == entry.node]
    return {t: (sorted(set(ranks)), sorted(set(nodes))) for t, (ranks, nodes) in kills.items()}


def rank_devices(scenario: Scenario, n: int) -> tuple[list[str], str, bool]:
    """Each rank's device, the process group's backend, and whether ranks share a GPU.

    On GPUs the ranks spread over this machine's GPUs as the coded variants' workers do (rank r on
    cuda:(r mod GPUs); ``cuda:N`` puts them all on GPU N). ``training.ddp_backend``: ``auto`` is NCCL when every
    rank has a GPU of its own and SHARED_GPU_BACKEND when ranks share one (docs/gpu.md has both measured); on the
    CPU it is gloo. NCCL refuses two ranks of one host on one GPU, so ranks that share one run NCCL under a host
    id of their own each (``NCCL_HOSTID``): to NCCL they are hosts, joined by its socket transport.
    """
    device, asked = resolve_device(scenario.training.device), scenario.training.ddp_backend
    if device.type != "cuda":
        return ["cpu"] * n, "gloo", False
    devices = [worker_device(str(device), r) for r in range(n)]
    shared = len(set(devices)) < n
    backend = asked if asked != "auto" else (SHARED_GPU_BACKEND if shared else "nccl")
    return devices, backend, shared
