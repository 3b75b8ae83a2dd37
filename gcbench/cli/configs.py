"""Listing a registry's configs (`gcbench policies`, `gcbench compressors`): each one's parameters as a user
writes them, and its docstring's first paragraph."""

from __future__ import annotations

import typing
from typing import Any

_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


def type_text(annotation: Any, metadata: list[Any]) -> str:
    """``int >= 1``, ``float > 0``, ``wait | approximate``: a field's type as a user writes it."""
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(str(choice) for choice in typing.get_args(annotation))
    name = getattr(annotation, "__name__", str(annotation))
    bounds = [f"{sign} {getattr(m, attr)}" for m in metadata for attr, sign in _BOUNDS if hasattr(m, attr)]
    return " ".join([name, *bounds])


def config_parameters(cls: type, tag: str) -> list[str]:
    """``k: int >= 1 (required)``, ``fallback: wait | approximate (default wait)``: a registered config's
    parameters (a policy's, a compressor's), required ones first; neither the registry's ``tag`` nor a field the
    class declares internal (gcbench.models.internal)."""
    from gcbench.models import is_internal

    fields = [(name, f) for name, f in cls.model_fields.items() if name != tag and not is_internal(f)]
    fields.sort(key=lambda item: not item[1].is_required())
    return [
        f"{name}: {type_text(field.annotation, field.metadata)} "
        f"({'required' if field.is_required() else f'default {_yaml(field.default)}'})"
        for name, field in fields
    ]


def summary_line(cls: type) -> str:
    """The first paragraph of a class's docstring, on one line, without reST quotes."""
    paragraph = (cls.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split()).replace("``", "")


def _yaml(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
