"""One rank of the DistributedDataParallel baseline (``policy: allreduce``): a process the driver starts.

It joins the driver's channel (gcbench/real/processes/channel.py, as a torch-cluster worker does), takes its
setup (its partition's shard, the model, the hook, its straggling and overhead draws), joins the n ranks'
process group (gloo or NCCL: gcbench/real/ddp/ddp_run.py's rank_devices) and trains the blocks of iterations it is
told to with ``torch.nn.parallel.DistributedDataParallel``. Each iteration it reports its times and its
partition's loss; rank 0 also sends the weights and optimizer state after each block (evaluation and
checkpoints are the driver's). It ignores Ctrl-C (the driver ends it) and exits when its driver is gone.
"""

from __future__ import annotations

import datetime
import os
import queue
import re
import signal
import sys
import threading
import time
from typing import Any

import numpy as np
import torch
import torch.distributed as dist

from gcbench.real.processes import channel
from gcbench.real.processes.child import orphan_watch, receive
from gcbench.real.wallclock.threads import limit_process_threads
from gcbench.training.batches import PartitionSampler
from gcbench.training.device import synchronize
from gcbench.training.gradients import FlatModel, to_inputs, warm_up_on_shard
from gcbench.training.models import build_model


def serve(rank: int, world: int, port: int, timeout: float, host: str = channel.HOST) -> None:
    """The process's whole life: join the channel and the group (on the driver's store at ``host``:``port``),
    then train what the driver asks."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    limit_process_threads(1)
    threading.Thread(target=orphan_watch, args=(os.getppid(),), daemon=True).start()
    rendezvous = channel.store(port, timeout, host)
    down = channel.group(rendezvous, rank, 0, channel.DOWN, 1, timeout)
    up = channel.group(rendezvous, rank, 0, channel.UP, 1, timeout)
    inbox: queue.Queue = queue.Queue()
    threading.Thread(target=receive, args=(down, inbox.put, inbox), daemon=True).start()
    try:
        _train(rank, world, rendezvous, inbox, channel.Sender(up, rank, 0), timeout)
    except Exception as error:  # noqa: BLE001 - e.g. another rank died mid all-reduce: say why, and exit at once
        line = f"gcbench: DDP rank {rank} stops: {type(error).__name__}: {first_sentence(str(error))}\n"
        os.write(2, line.encode())  # (one write: the ranks' lines never run into each other)
        os._exit(1)
    os._exit(0)  # (gloo's threads would otherwise hold the interpreter's exit)


SOURCE_LOCATION = re.compile(r"^\[[^\]]*:\d+\]\s*")  # gloo's "[.../pair.cc:561] " before its message
MOST = 300  # characters of an error's first sentence a rank prints


def first_sentence(message: str) -> str:
    """An error's first sentence, without the source location gloo puts before it: "Connection closed by peer
    [10.9.0.2]:16598." (cut at a word, with "...", past ``MOST`` characters)."""
    text = SOURCE_LOCATION.sub("", (message.strip().splitlines() or [""])[0])
    sentence = text.split(". ")[0].rstrip(".")
    if len(sentence) > MOST:
        return sentence[:MOST].rsplit(" ", 1)[0] + "..."
    return f"{sentence}." if sentence else "(no message)"


def _train(rank: int, world: int, rendezvous, inbox: queue.Queue, sender, timeout: float) -> None:
    setup = inbox.get()
    if setup["kind"] != "setup":
        return  # stopped before it began
    if setup.get("nccl_hostid"):  # ranks sharing a GPU: NCCL takes each for a host of its own (run.rank_devices)
        os.environ["NCCL_HOSTID"] = f"gcbench-rank-{rank}"
    _join_group(rendezvous, rank, world, setup["process_group"], timeout)
    trainer = RankTrainer(rank, world, setup)
    sender.send({"kind": "ready", "pid": os.getpid()})
    while (message := inbox.get())["kind"] == "run":
        for t in range(message["first"], message["last"]):
            sender.send({"kind": "iteration", **trainer.iteration(t)})
        if rank == 0:
            sender.send({"kind": "state", **trainer.state()})


def _join_group(rendezvous, rank: int, world: int, process_group: str, timeout: float) -> None:
    store = dist.PrefixStore("ddp/", rendezvous)
    wait = datetime.timedelta(seconds=timeout)
    dist.init_process_group(process_group, store=store, rank=rank, world_size=world, timeout=wait)  # gloo or nccl


class RankTrainer:
    """The rank's model under DDP, its partition's data and draws; ``iteration(t)`` trains one mini-batch.

    The parameters are views of one flat tensor stepped by the optimizer every backend uses (FlatModel), so
    the loss trajectory is the local backend's and a checkpoint is any real run's.
    """

    def __init__(self, rank: int, world: int, setup: dict[str, Any]) -> None:
        from torch.nn.parallel import DistributedDataParallel

        self.rank, self.world, self.training = rank, world, setup["training"]
        self.device = torch.device(setup["device"])
        if self.device.type == "cuda":
            torch.cuda.set_device(self.device)
        self.model = build_model(self.training.model, setup["classes"], setup["seed"]).to(self.device)
        self.flat = FlatModel(self.model, self.training)
        if setup.get("state"):
            self.model.load_state_dict(setup["state"]["model"])
            self.flat.optimizer.load_state_dict(setup["state"]["optimizer"])
        self.images, self.labels, self.offset = setup["shard"]
        self.sampler = PartitionSampler(setup["samples"], world, self.training.batch_size, setup["seed"])
        self.straggling, self.straggles, self.overhead = setup["straggling"], setup["straggles"], setup["overhead"]
        warm_up_on_shard(self.model, setup["shard"], self.sampler, rank, self.device)  # (before DDP wraps it)
        ids = [self.device.index] if self.device.type == "cuda" and setup["process_group"] == "nccl" else None
        self.ddp = DistributedDataParallel(self.model, device_ids=ids)
        register_hook(self.ddp, setup["hook"], setup["powersgd_rank"])
        self.ready, self.backward_seconds = 0.0, 0.0
        for parameter in self.model.parameters():  # when the last local gradient is ready: the all-reduce starts
            parameter.register_post_accumulate_grad_hook(self._gradient_ready)

    def _gradient_ready(self, parameter: torch.Tensor) -> None:
        self.ready = time.time()

    def iteration(self, t: int) -> dict[str, Any]:
        """Forward, the injected delay, backward (the all-reduce waits for the slowest rank), step; the times."""
        start = time.time()
        rows = self.sampler.indices(t, self.rank) - self.offset
        logits = self.ddp(to_inputs(self.images[rows], self.device))
        labels = torch.from_numpy(self.labels[rows]).to(self.device)
        loss = torch.nn.functional.cross_entropy(logits, labels, reduction="sum") / self.sampler.batch_size
        share = float(loss.detach())  # this partition's share of the mini-batch's mean loss (and a CUDA sync)
        delay = self._injected(t, time.time() - start)
        time.sleep(delay)
        backward = time.time()
        (loss * self.world).backward()  # DDP averages over the ranks: the sum over partitions, as decoded
        synchronize(self.device)  # on a GPU the all-reduce may still be queued when backward returns
        end = time.time()
        self.backward_seconds = self.ready - backward
        self.flat.step(torch.cat([p.grad.reshape(-1) for p in self.model.parameters()]))
        self.model.zero_grad(set_to_none=True)
        return {"iteration": t, "start": start, "ready": self.ready, "end": end, "injected": delay, "loss": share}

    def _injected(self, t: int, forward: float) -> float:
        """Straggling's penalty plus compute.overhead, as a worker of the coded variants sleeps them.

        The penalty scales a compute time that must be known before the backward pass: this iteration's
        forward plus the previous iteration's local backward (none in the rank's first iteration).
        """
        compute = np.array([forward + self.backward_seconds])
        penalty = self.straggling.penalty(compute, np.ones(1), np.array([self.straggles[t]]))
        return float(penalty[0]) + float(self.overhead[t])

    def state(self) -> dict[str, Any]:
        """The weights and optimizer state, on the CPU: what the driver evaluates and checkpoints."""
        model = {key: value.detach().cpu() for key, value in self.model.state_dict().items()}
        optimizer = self.flat.optimizer.state_dict()  # (its per-parameter dicts are the optimizer's own)
        on_cpu = lambda value: value.detach().cpu().clone() if torch.is_tensor(value) else value  # noqa: E731
        optimizer["state"] = {i: {k: on_cpu(v) for k, v in values.items()} for i, values in optimizer["state"].items()}
        return {"model": model, "optimizer": optimizer}


def register_hook(ddp, hook: str, rank: int) -> None:
    """PyTorch's own communication hook for ``hook`` (none: DDP's built-in all-reduce)."""
    from torch.distributed.algorithms.ddp_comm_hooks import default_hooks, powerSGD_hook

    if hook == "fp16":
        ddp.register_comm_hook(None, default_hooks.fp16_compress_hook)
    elif hook == "bf16":
        ddp.register_comm_hook(None, default_hooks.bf16_compress_hook)
    elif hook == "powersgd":
        # compression from the third iteration (PowerSGD's earliest with error feedback and warm start)
        state = powerSGD_hook.PowerSGDState(None, matrix_approximation_rank=rank, start_powerSGD_iter=2)
        ddp.register_comm_hook(state, powerSGD_hook.powerSGD_hook)


def main(arguments: list[str]) -> None:
    """The command line ``rank world port timeout [host]``: as ``python -m`` runs it, or a zygote's fork."""
    rank, world, port = (int(argument) for argument in arguments[:3])
    serve(rank, world, port, float(arguments[3]), *arguments[4:5])


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
