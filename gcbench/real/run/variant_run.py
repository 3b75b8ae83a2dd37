"""One (variant, seed) of a real run, trained one block of iterations at a time.

Between its blocks the run's workers stay up but idle while the other
variants take their turns; its clock stops meanwhile, so its times are as if it
had run alone. Every block ends with the late timings of its abandoned work
collected and a checkpoint saved, so a block boundary is exactly the state a
``--resume`` continues from.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import torch

from gcbench.cluster import cluster_class
from gcbench.errors import GcbenchError
from gcbench.master import SynchronousMaster, decoding_quality, master_for
from gcbench.real.run.checkpoint import load_checkpoint, save_checkpoint
from gcbench.real.run.training_run import OnIteration, TrainingRun, VariantStopped
from gcbench.real.wallclock.clock import WallClock
from gcbench.real.wallclock.threads import EVALUATION_THREADS, compute_threads, master_threads
from gcbench.results.messages import MessageLog
from gcbench.results.recorder import RunRecorder
from gcbench.results.rows import identity, restore, row_dicts, table_columns
from gcbench.scenario.build import placed, scheme_for
from gcbench.scenario.draws import draw_run
from gcbench.scenario.schema import Scenario
from gcbench.training.data import Dataset
from gcbench.training.device import resolve_device
from gcbench.training.evaluation import evaluate_master
from gcbench.training.learner import Learner

# (iterations done, loss, test accuracy or NaN) after each iteration

DRAIN_SECONDS = 5.0  # at the end of a block, how long to wait for abandoned work to report its timings


def cluster_for(scenario: Scenario, variant, scheme, seed: int, draws, clock: WallClock, backend: str = "ray"):
    """The variant's workers on the cluster registered as ``backend`` (ray, torch), fed by the run's draws
    (injected straggling, crashes, overhead)."""
    device = str(resolve_device(scenario.training.device))
    return cluster_class(backend)(
        scenario, scheme, draws, seed=seed, device=device, clock=clock, compressor=variant.sent_compressed
    )


class VariantRun(TrainingRun):
    """Variant ``index`` of the scenario with one seed: its recorder, its checkpoint, and its master once started.

    The one master (gcbench/master) runs it on a Ray or torch.distributed cluster in wall time, with a
    learner that decodes and steps; the tables are built from its recorder (gcbench/results/rows.py)."""

    needs_cluster = True  # its backend's cluster (and what runs it, Ray) must be up

    def __init__(self, scenario: Scenario, index: int, seed: int, data: Dataset, checkpoint: Path | None,
                 backend: str = "ray") -> None:  # fmt: skip
        self.scenario, self.index, self.seed, self.data, self.backend = scenario, index, seed, data, backend
        self.variant = scenario.variants[index]
        self.scheme = scheme_for(scenario, self.variant)
        self.scenario = scenario = placed(scenario, self.scheme)  # (by_code: its workers where its code puts them)
        self.loads = np.array([self.scheme.step_load(w) for w in range(self.scheme.n)])
        self.checkpoint = checkpoint
        self.state = load_checkpoint(checkpoint, scenario, self.variant, data) if checkpoint else None
        if self.state and self.scheme.sequential:
            raise GcbenchError(
                f"variant '{self.variant.display_label()}' ({self.scheme.name}) cannot continue from its checkpoint: "
                f"the results its last {self.scheme.delay} job(s) hold for their decode are not saved; delete "
                f"{checkpoint} to run it again from the start."
            )
        self.rec = RunRecorder(scenario.iterations, self.scheme.n)
        self.draws = draw_run(scenario, self.scheme, seed)  # the simulator's streams
        if self.state:
            restore(self.rec, self.state["rows"], self.state["workers"])
            if "messages" in self.state:
                self.rec.messages = MessageLog.restored(self.state["messages"])
        self.resumed_at = self.next_iteration = self.state["next_iteration"] if self.state else 0
        self.checkpointed = self.resumed_at  # the iteration the newest checkpoint continues from
        self.stopped: str | None = None
        self.master = self.cluster = self.learner = self.rng = None
        self.clock = WallClock()
        self.node_crashes: list[dict] = []  # its cluster's, once closed

    @property
    def label(self) -> str:
        return self.variant.display_label()

    @property
    def finished(self) -> bool:
        return self.stopped is not None or self.next_iteration >= self.scenario.iterations

    def run_block(self, last: int, on_iteration: OnIteration | None = None) -> None:
        """Iterations ``next_iteration`` to ``last`` (exclusive); then the late timings and a checkpoint."""
        master = self.master or self._start()
        self.clock.resume()
        torch.set_rng_state(self.rng)
        first = self.next_iteration
        try:
            with compute_threads(master_threads(self.scheme.n, self.backend)):
                for t in master.steps(first, last):
                    self._record(t, on_iteration)
            self.clock.pause()  # its clock stops here: waiting for abandoned work is no iteration's
            if isinstance(master, SynchronousMaster):
                master.finish(DRAIN_SECONDS)
        except GcbenchError as error:
            self.stopped = str(error)
            self.close()
            decoding_quality(self.rec, self.scheme, np.arange(first, self.next_iteration))
            raise VariantStopped(str(error), *self.frames()) from None
        decoding_quality(self.rec, self.scheme, np.arange(first, self.next_iteration))
        self.rng = torch.get_rng_state()
        if self.checkpoint:
            rows, workers = row_dicts(self.rec, self.loads, self.next_iteration)
            messages = None if self.rec.messages is None else self.rec.messages.row_dicts(self.next_iteration)
            save_checkpoint(self.checkpoint, self.learner.model, self.learner.optimizer, self.next_iteration, rows,
                            workers, self.rng, messages)  # fmt: skip
            self.checkpointed = self.next_iteration
        if self.finished:
            self.close()

    def _start(self):
        scenario, training = self.scenario, self.scenario.training
        self.learner = Learner(self.scheme, training, self.data.classes, self.seed, self.variant.sent_compressed,
                               resolve_device(training.device))  # fmt: skip
        entries = -(-self.learner.d // self.scheme.m)  # one message: a float32 slice of the gradient, or its payload
        self.rec.message_bytes = self.variant.compressor.payload_bytes(entries, 4)
        self.rng = torch.get_rng_state()
        self.cluster = cluster_for(scenario, self.variant, self.scheme, self.seed, self.draws, self.clock, self.backend)
        self.cluster.start(self.data)
        if self.scheme.pipelined:  # its weights' steps count on from where a resumed run continues
            self.cluster.version = self.next_iteration - 1
        self.clock.continue_from(0.0)  # the clock starts once the workers are ready
        if self.state is not None:
            self.learner.model.load_state_dict(self.state["model"])
            self.learner.optimizer.load_state_dict(self.state["optimizer"])
            self.rng = self.state["torch_rng"]
            self.clock.continue_from(float(self.rec.end[self.next_iteration - 1]) if self.next_iteration else 0.0)
            self.state = None  # its rows live on in the recorder
        self.master = master_for(self.cluster, scenario, self.variant, self.scheme, self.draws, self.rec,
                                 self.learner, first=self.next_iteration)  # fmt: skip
        return self.master

    def _record(self, t: int, on_iteration: OnIteration | None) -> None:
        training, iterations = self.scenario.training, self.scenario.iterations
        accuracy = np.nan
        if (t + 1) % training.eval_every == 0 or t == iterations - 1:
            # between iterations, and on no clock: the simulator's evaluations take no simulated time either,
            # so times to a target accuracy compare (the test set took 10 to 19 s a time on Ray with CIFAR-10)
            self.clock.pause()
            with compute_threads(EVALUATION_THREADS):
                accuracy = evaluate_master(self.learner.model, self.data, training.batch_size)
            self.clock.resume()
        self.rec.accuracy[t] = accuracy
        self.next_iteration = t + 1
        if on_iteration:
            on_iteration(t + 1, float(self.rec.loss[t]), accuracy)

    def frames(self) -> tuple[pd.DataFrame, pd.DataFrame]:
        """The iterations and workers tables of what this run has done so far."""
        v = self.variant
        keys = identity(self.label, v.scheme, v.s, self.scheme.m, v.policy.name, self.seed)
        iterations, workers = table_columns(self.rec, keys, self.loads, self.next_iteration, trained=True)
        return pd.DataFrame(iterations), pd.DataFrame(workers)

    def messages_frame(self) -> pd.DataFrame | None:
        """The messages table of what this run has done so far (None: its workers send one message each)."""
        if self.rec.messages is None:
            return None
        keys = {"variant": self.label, "point": 0, "seed": self.seed}
        columns = self.rec.messages.columns(self.next_iteration)
        count = len(columns["iteration"])
        return pd.DataFrame({**{k: np.repeat(v, count) for k, v in keys.items()}, **columns})

    def node_crash_records(self) -> list[dict]:
        """run.json's record of each node this run's crashes took (an emulated cluster's): when it was killed,
        each worker noticed gone and back, and the node started again, in seconds on the run's clock."""
        crashes = getattr(self.cluster, "node_crashes", []) if self.cluster is not None else self.node_crashes
        return [{"variant": self.label, "seed": self.seed, **crash,
                 "noticed": {str(w): round(t, 4) for w, t in crash["noticed"].items()},
                 "back": {str(w): round(t, 4) for w, t in crash["back"].items()}} for crash in crashes]  # fmt: skip

    def close(self, interrupted: bool = False) -> None:
        if self.cluster is not None:
            self.cluster.shutdown(interrupted)
            self.node_crashes = getattr(self.cluster, "node_crashes", [])
            self.master = self.cluster = None
