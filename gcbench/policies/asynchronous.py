"""Asynchronous policies (Dutta et al., AISTATS 2018): the master updates as results come in.

Workers compute continuously; a worker whose result is used restarts at once on
the newest model, so results can be stale. ``k_async`` waits for k results from
distinct workers, ``k_batch_async`` for any k results, ``async`` is k = 1.
The one master (gcbench/master/asynchronous.py) runs them, on the SimPy cluster and on Ray alike.
"""

from __future__ import annotations

from typing import Annotated, ClassVar, Literal

from pydantic import Field

from gcbench.models import internal
from gcbench.policies._base import AggregationPolicy
from gcbench.policies._registry import register_policy


class _AsyncPolicy(AggregationPolicy):
    synchronous: ClassVar[bool] = False
    needs_master: ClassVar[bool] = True  # the one master runs it
    distinct: bool = internal(True)  # each class's mode: k_async counts distinct workers, k_batch_async any

    @property
    def batch(self) -> int:
        return 1


@register_policy
class KAsync(_AsyncPolicy):
    """Update after k results from distinct workers; those k restart on the new model."""

    name: Literal["k_async"] = "k_async"
    k: Annotated[int, Field(ge=1)]

    @property
    def batch(self) -> int:
        return self.k


@register_policy
class KBatchAsync(_AsyncPolicy):
    """Update after any k results (a fast worker may contribute several)."""

    name: Literal["k_batch_async"] = "k_batch_async"
    k: Annotated[int, Field(ge=1)]
    distinct: bool = internal(False)

    @property
    def batch(self) -> int:
        return self.k


@register_policy
class Async(_AsyncPolicy):
    """Fully asynchronous SGD: apply every result as it arrives (k = 1)."""

    name: Literal["async"] = "async"
