"""What every compressor is: a config that turns a message vector into a payload and back.

The shape is GRACE's (Xu et al., 2021): ``compress`` returns a payload (what travels) and keeps whatever it needs
for the next message in a ``state`` the caller holds per message stream; ``decompress`` gives the vector back.
Error feedback (the residual of one message added to the next: Seide et al. 2014, Karimireddy et al. 2019) is the
caller's (gcbench/compression/memory.py), for every compressor that declares it.

Vectors are numpy arrays; a torch tensor is taken as its CPU numpy array (compression runs on the CPU, after the
worker encodes), so the two give the same payload. A payload's randomness comes from its ``Key``: random-k's
indices and PowerSGD's shared factor from what every worker of one iteration shares, QSGD's rounding from the
message's own stream, so a run's compression is the same on every backend and on every rerun.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated, Any, ClassVar

import numpy as np
from pydantic import Field

from gcbench.models import Config

# the stream a key's shared randomness is drawn from, apart from the one of its own (numbers only: distinct)
SHARED, OWN = 0, 1


@dataclass(frozen=True)
class Key:
    """Where a message's randomness comes from: ``seed`` (the run's), ``iteration`` (the job's draw row: every
    worker of one iteration shares it), and the message's ``worker`` and index ``message``."""

    seed: int = 0
    iteration: int = 0
    worker: int = 0
    message: int = 0

    def shared(self) -> np.random.Generator:
        """A generator every message of this iteration draws the same numbers from (random-k, PowerSGD shared)."""
        return np.random.default_rng([SHARED, self.seed, self.iteration])

    def own(self) -> np.random.Generator:
        """A generator of this message's own (QSGD's stochastic rounding, PowerSGD's first factor)."""
        return np.random.default_rng([OWN, self.seed, self.iteration, self.worker, self.message])


@dataclass(frozen=True)
class Payload:
    """What a compressed message carries: named numpy arrays (their bytes are its size) and the vector's length.

    ``key``: the randomness the receiver must repeat to decompress (random-k's indices, PowerSGD's shared factor);
    its numbers travel too, as 24 bytes (``KEY_BYTES``), counted in ``nbytes`` where a compressor uses them."""

    name: str
    length: int
    arrays: dict[str, np.ndarray] = field(default_factory=dict)
    key: Key | None = None

    @property
    def nbytes(self) -> int:
        return sum(array.nbytes for array in self.arrays.values()) + (KEY_BYTES if self.key is not None else 0)

    def __reduce__(self):
        """Pickled (Ray's object store, the torch channel) as its arrays' bytes in one buffer, beside a few names
        and numbers: pickled one by one, each array's framing cost 100-150 bytes, 7% of a small PowerSGD message."""
        layout = tuple((name, array.dtype.str, array.shape) for name, array in self.arrays.items())
        data = b"".join(np.ascontiguousarray(array).tobytes() for array in self.arrays.values())
        key = None if self.key is None else (self.key.seed, self.key.iteration, self.key.worker, self.key.message)
        return _unpickle_payload, (self.name, self.length, layout, data, key)


def _unpickle_payload(name: str, length: int, layout: tuple, data: bytes, key: tuple | None) -> Payload:
    arrays, offset = {}, 0
    for array_name, dtype, shape in layout:
        array = np.frombuffer(data, dtype=dtype, count=int(np.prod(shape, dtype=np.int64)), offset=offset)
        arrays[array_name] = array.reshape(shape)
        offset += array.nbytes
    return Payload(name, length, arrays, None if key is None else Key(*key))


KEY_BYTES = 24  # seed and iteration as int64, worker and message as int32
NO_KEY = Key()  # a message's key where the caller gives none (a deterministic compressor needs none)


class Compressor(Config):
    """The base of every compressor; a subclass sets ``name`` (its registry tag) and implements the methods.

    ``compress_cost`` and ``decompress_cost``: seconds per gradient entry the simulator charges a message for
    compressing it on its worker and decompressing it on the master (docs/compression.md quotes what
    benchmarks/compression.py measures here); real mode takes its own time."""

    compress_cost: Annotated[float, Field(ge=0, le=1)] = 0.0
    decompress_cost: Annotated[float, Field(ge=0, le=1)] = 0.0

    reference: ClassVar[str]
    # parameter sets beyond the defaults that the conformance suite (gcbench/testing/compressor_checks.py) runs
    examples: ClassVar[tuple[dict[str, Any], ...]] = ()

    @property
    def random(self) -> bool:
        """Whether the payload depends on random numbers (the key's); its error bound is then a root mean square
        over them."""
        return False

    # what a compressor claims whatever its parameters (one whose claim depends on them overrides the property)
    claims_unbiased: ClassVar[bool] = False
    claims_linear: ClassVar[bool] = False

    @property
    def unbiased(self) -> bool:
        """E[decompress(compress(x))] = x over the key's randomness (or exactly, for a deterministic one)."""
        return self.claims_unbiased

    @property
    def linear(self) -> bool:
        """Whether compressing commutes with a linear decode: decompress(compress(sum_i w_i x_i)) equals
        sum_i w_i decompress(compress(x_i)) for messages of one iteration (up to rounding), so a decoded
        gradient is the compressed exact gradient."""
        return self.claims_linear

    @property
    def feedback(self) -> bool:
        """Whether the sender keeps error-feedback memory (the residual added to its next message)."""
        return bool(getattr(self, "error_feedback", False))

    def payload_bytes(self, length: int, itemsize: int = 4) -> int:
        """Bytes of the payload of one message of ``length`` entries (``itemsize``: of an uncompressed entry)."""
        raise NotImplementedError

    def bits_per_parameter(self, length: int, itemsize: int = 4) -> float:
        return 8.0 * self.payload_bytes(length, itemsize) / length

    def error_bound(self, length: int) -> float:
        """A bound on ||decompress(compress(x)) - x|| / ||x|| for one message (a root mean square over the key's
        randomness where ``random``); docs/compression.md says where each comes from."""
        raise NotImplementedError

    def compress(self, vector: Any, key: Key = NO_KEY, state: dict | None = None) -> Payload:
        """The payload of ``vector`` (a 1-d numpy array or torch tensor). ``state``: the caller's dict for this
        message stream, where a compressor may keep what its next message starts from (PowerSGD's warm start)."""
        raise NotImplementedError

    def decompress(self, payload: Payload) -> np.ndarray:
        """The vector a payload stands for, as float32 (float64 when it was sent uncompressed as float64)."""
        raise NotImplementedError

    def round_trip(self, vector: Any, key: Key = NO_KEY, state: dict | None = None) -> np.ndarray:
        return self.decompress(self.compress(vector, key, state))

    @property
    def display_name(self) -> str:
        """``topk(ratio=0.01)``: the name with the parameters that differ from their defaults, costs left out."""
        changed = {
            name: value
            for name, value in self.model_dump().items()
            if name not in ("name", "compress_cost", "decompress_cost")
            and value != type(self).model_fields[name].default
        }
        return self.name + ("(" + ",".join(f"{k}={_text(v)}" for k, v in changed.items()) + ")" if changed else "")


def _text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def as_vector(vector: Any) -> np.ndarray:
    """A 1-d numpy array of a numpy array or a torch tensor (on any device), without copying where it can."""
    if hasattr(vector, "detach"):  # a torch tensor (no torch import here)
        vector = vector.detach().cpu().numpy()
    array = np.asarray(vector)
    if array.ndim != 1:
        raise ValueError(f"a message to compress is one vector, not an array of shape {array.shape}")
    return array
