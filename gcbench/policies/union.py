"""The YAML form of a policy: a name, or a mapping with ``name`` and its parameters."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, Field

from gcbench.policies.asynchronous import Async, KAsync, KBatchAsync
from gcbench.policies.synchronous import Deadline, Decodable, FastestK, WaitAll


def _name_to_mapping(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


Policy = Annotated[
    WaitAll | Decodable | FastestK | Deadline | KAsync | KBatchAsync | Async,
    Field(discriminator="name"),
    BeforeValidator(_name_to_mapping),
]

POLICY_NAMES = ("wait_all", "decodable", "fastest_k", "deadline", "k_async", "k_batch_async", "async")
