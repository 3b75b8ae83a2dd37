"""The YAML form of a policy: a name, or a mapping with ``name`` and its parameters."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator

from gcbench.policies._registry import POLICIES, available_policies


def _name_to_mapping(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


# every registered policy; gcbench/policies/__init__.py imports them all before this module
Policy = Annotated[POLICIES.union(), BeforeValidator(_name_to_mapping)]

__all__ = ["Policy", "available_policies"]
