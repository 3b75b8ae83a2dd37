"""PowerSGD (Vogels et al. 2019): the message as a matrix, sent as two thin factors of rank ``rank``."""

from __future__ import annotations

import math
from typing import Annotated, Any, ClassVar, Literal

import numpy as np
from pydantic import Field

from gcbench.compression._base import KEY_BYTES, NO_KEY, Compressor, Key, Payload, as_vector
from gcbench.compression._registry import register_compressor


def matrix_shape(length: int) -> tuple[int, int]:
    """The flat message as a matrix: ceil(sqrt(d)) columns, as many rows as it takes (the last one zero-padded)."""
    columns = max(1, math.isqrt(length - 1) + 1) if length > 1 else 1
    return -(-length // columns), columns


def orthonormal(matrix: np.ndarray) -> np.ndarray:
    """Orthonormal columns spanning ``matrix``'s (its QR's Q; a zero column stays a unit vector)."""
    q, _ = np.linalg.qr(matrix)
    return q


@register_compressor
class PowerSGD(Compressor):
    """The message reshaped to a near-square matrix M (ceil(sqrt(d)) columns, zero-padded), sent as P (rows x rank)
    and Q (columns x rank) with M ~ P Q^T after one power iteration: P = orth(M Q_prev), Q = M^T P, Q_prev the
    stream's last Q (warm start). With error feedback, as Vogels et al. 2019.

    ``shared_factor``: Q is an orthonormal matrix drawn from the iteration's shared seed and only P = M Q travels;
    then M ~ M Q Q^T is the same projection for every worker, so it commutes with a linear decode (a smaller
    payload too, at a larger error than the warm-started factor). gcbench applies it to the flat message, not per
    layer: the message of a coded scheme is a combination of whole gradients, with no layer boundaries kept."""

    name: Literal["powersgd"] = "powersgd"
    rank: Annotated[int, Field(ge=1, le=1024)] = 1
    shared_factor: bool = False
    error_feedback: bool = True

    reference: ClassVar[str] = "Vogels et al., NeurIPS 2019"
    examples: ClassVar[tuple] = ({"rank": 4}, {"rank": 2, "shared_factor": True}, {"error_feedback": False})

    @property
    def random(self) -> bool:  # the shared factor is drawn
        return self.shared_factor

    @property
    def linear(self) -> bool:
        return self.shared_factor

    def effective_rank(self, length: int) -> int:
        return min(self.rank, *matrix_shape(length))

    def payload_bytes(self, length: int, itemsize: int = 4) -> int:
        rows, columns = matrix_shape(length)
        r = self.effective_rank(length)
        return 4 * r * rows + KEY_BYTES if self.shared_factor else 4 * r * (rows + columns)

    def error_bound(self, length: int) -> float:
        return 1.0  # M - P P^T M (or M - M Q Q^T) is a projection's complement: never longer than M

    def _matrix(self, x: np.ndarray) -> np.ndarray:
        rows, columns = matrix_shape(len(x))
        padded = np.zeros(rows * columns, dtype=np.float64)
        padded[: len(x)] = x
        return padded.reshape(rows, columns)

    def shared_q(self, length: int, key: Key) -> np.ndarray:
        _, columns = matrix_shape(length)
        return orthonormal(key.shared().standard_normal((columns, self.effective_rank(length))))

    def compress(self, vector: Any, key: Key = NO_KEY, state: dict | None = None) -> Payload:
        x = as_vector(vector)
        m = self._matrix(x)
        if self.shared_factor:
            p = m @ self.shared_q(len(x), key)
            return Payload(self.name, len(x), {"p": p.astype(np.float32)}, key=key)
        state = {} if state is None else state
        q = state.get("q")
        if q is None or q.shape != (m.shape[1], self.effective_rank(len(x))):
            q = key.own().standard_normal((m.shape[1], self.effective_rank(len(x))))
        p = orthonormal(m @ q)
        q = m.T @ p
        state["q"] = q
        return Payload(self.name, len(x), {"p": p.astype(np.float32), "q": q.astype(np.float32)})

    def decompress(self, payload: Payload) -> np.ndarray:
        p = payload.arrays["p"].astype(np.float64)
        q = self.shared_q(payload.length, payload.key) if self.shared_factor else payload.arrays["q"].astype(np.float64)
        return (p @ q.T).ravel()[: payload.length].astype(np.float32)
