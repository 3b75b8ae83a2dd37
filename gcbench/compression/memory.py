"""A sender's side of compression: one state per message stream, with its error-feedback memory.

A worker compresses each of its messages (by index among its own) with the variant's compressor; where the
compressor keeps error feedback, the residual of the last message of that index (what compression dropped) is
added to the next one before it is compressed, and replaced by the new residual (Seide et al. 2014; Karimireddy
et al. 2019). The memory lives in the worker's process: a restarted worker starts with none (``lost``).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from gcbench.compression._base import Compressor, Key, Payload, as_vector


class MessageCompressor:
    """The compressing end of one worker's messages: per message index, the compressor's state and residual."""

    def __init__(self, compressor: Compressor, seed: int, worker: int) -> None:
        self.compressor, self.seed, self.worker = compressor, seed, worker
        self.states: dict[int, dict[str, Any]] = {}  # message index -> the compressor's state and "residual"

    def compress(self, message: int, vector: Any, iteration: int) -> Payload:
        """Message ``message`` (its index among this worker's) of ``iteration`` (the job's mini-batch, which every
        worker of one iteration shares: the key's shared randomness), compressed."""
        key = Key(self.seed, iteration, self.worker, message)
        state = self.states.setdefault(message, {})
        x = as_vector(vector)
        if not self.compressor.feedback:
            return self.compressor.compress(x, key, state)
        residual = state.get("residual")
        compensated = x.astype(np.float32) if residual is None else x + residual
        payload = self.compressor.compress(compensated, key, state)
        state["residual"] = compensated - self.compressor.decompress(payload)
        return payload

    @property
    def remembers(self) -> bool:
        """Whether it holds error-feedback memory now (a fresh or restarted worker holds none)."""
        return any("residual" in state for state in self.states.values())
