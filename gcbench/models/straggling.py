"""Straggling: which workers are slow in which iteration, and how slow.

A straggling worker's compute time is multiplied by ``slowdown`` and ``delay``
seconds are added; at ``level: node`` the draws are a node's, and every worker on a
straggling node is slowed together; ``delay_scaling: load`` multiplies the delay by the worker's
load (slow per partition), ``once`` adds it once per iteration (a hiccup). Coding
adds load, so it wins under ``once`` and can lose under ``load``.
"""

from __future__ import annotations

from typing import Annotated, Literal

import numpy as np
from pydantic import Field, model_validator

from gcbench.models._config import Config, Seconds
from gcbench.models._registry import Registry

STRAGGLING = Registry("straggling model", "model")

Probability = Annotated[float, Field(ge=0, le=1)]


class _Slowness(Config):
    slowdown: Annotated[float, Field(ge=1, le=1e6)] = 1.0
    delay: Seconds = 0.0
    delay_scaling: Literal["load", "once"] = "once"
    # what straggles: each worker on its own, or each node of the topology, slowing every worker on it together
    # (the draws are per node, then the node's workers share them: gcbench/scenario/draws.py)
    level: Literal["worker", "node"] = "worker"
    # at level node, a worker-level model drawn on top (each worker's own slowness besides its node's, from a
    # stream of its own); its penalty adds to the node's
    also: Straggling | None = None

    @model_validator(mode="after")
    def _also_on_a_node_level(self):
        if self.also is not None and (self.level != "node" or getattr(self.also, "level", "worker") != "worker"):
            raise ValueError("also adds a worker-level model to a node-level one: give it at level node, and the "
                             "model it adds at level worker")  # fmt: skip
        if self.also is not None and getattr(self.also, "also", None) is not None:
            raise ValueError("also adds one worker-level model; that model takes no also of its own")
        return self

    def penalty(self, compute: np.ndarray, load: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Extra seconds that straggling (mask) adds to these compute times."""
        slower = compute * (self.slowdown - 1.0)
        if self.delay:  # (adding no delay changes no time: not a pass over the array)
            slower += self.delay * (load if self.delay_scaling == "load" else 1.0)
        if slower.shape != np.shape(mask) or not np.isfinite(np.add.reduce(slower, axis=None)):
            return np.where(mask, slower, 0.0)
        # times are finite and never negative here, so x * False is where's 0.0: the same array, twice as fast
        return np.multiply(slower, mask, out=slower)


@STRAGGLING.register
class NoStraggling(Config):
    """No worker straggles: compute times are as drawn."""

    model: Literal["none"] = "none"

    def draw(self, rng: np.random.Generator, iterations: int, n: int, previous=None) -> np.ndarray:
        return np.zeros((iterations, n), dtype=bool)

    def penalty(self, compute: np.ndarray, load: np.ndarray, mask: np.ndarray) -> np.ndarray:
        return np.zeros_like(compute)


@STRAGGLING.register
class IndependentStraggling(_Slowness):
    """Each worker straggles in each iteration with ``probability``, independently."""

    model: Literal["independent"]
    probability: Probability

    def draw(self, rng: np.random.Generator, iterations: int, n: int, previous=None) -> np.ndarray:
        return rng.random((iterations, n)) < self.probability


@STRAGGLING.register
class MarkovStraggling(_Slowness):
    """Persistent stragglers: a two-state chain per worker (enter / leave probabilities per iteration).

    Workers start in the stationary distribution: P(straggling) = enter / (enter + leave).
    """

    model: Literal["markov"]
    enter: Probability
    leave: Annotated[float, Field(gt=0, le=1)]

    def draw(self, rng: np.random.Generator, iterations: int, n: int, previous=None) -> np.ndarray:
        """``previous``: the row before this block's (None: the chain starts, in the stationary distribution)."""
        uniforms = rng.random((iterations, n))
        mask = np.empty((iterations, n), dtype=bool)
        state = previous
        for t in range(iterations):
            if state is None:
                state = uniforms[t] < self.enter / (self.enter + self.leave)
            else:
                state = uniforms[t] < np.where(state, 1.0 - self.leave, self.enter)
            mask[t] = state
        return mask


@STRAGGLING.register
class FixedStraggling(_Slowness):
    """The listed workers straggle in every iteration (at node level: the listed nodes, every worker on them)."""

    model: Literal["fixed"]
    workers: list[Annotated[int, Field(ge=0)]] | None = None
    nodes: list[Annotated[int, Field(ge=0)]] | None = None

    @model_validator(mode="after")
    def _lists_what_straggles(self) -> FixedStraggling:
        listed, other = ("nodes", "workers") if self.level == "node" else ("workers", "nodes")
        if getattr(self, listed) is None or getattr(self, other) is not None:
            raise ValueError(f"at level {self.level}, the fixed model lists its straggling {listed} (give {listed}, "
                             f"not {other})")  # fmt: skip
        return self

    def draw(self, rng: np.random.Generator, iterations: int, n: int, previous=None) -> np.ndarray:
        """``n``: the workers, or at node level the nodes."""
        mask = np.zeros((iterations, n), dtype=bool)
        mask[:, self.nodes if self.level == "node" else self.workers] = True
        return mask


Straggling = STRAGGLING.union()
for _model in (IndependentStraggling, MarkovStraggling, FixedStraggling):  # (``also`` names the union itself)
    _model.model_rebuild()
