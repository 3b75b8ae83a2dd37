"""The YAML form of a compressor: a name (``compression: fp16``), or a mapping with ``name`` and its parameters."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BeforeValidator, TypeAdapter, ValidationError

from gcbench.compression._registry import COMPRESSORS


def _name_to_mapping(value: Any) -> Any:
    return {"name": value} if isinstance(value, str) else value


# every registered compressor; gcbench/compression/__init__.py imports them all before this module
Compression = Annotated[COMPRESSORS.union(), BeforeValidator(_name_to_mapping)]

_ADAPTER = TypeAdapter(Compression)


def is_valid_compression(value: Any) -> bool:
    """Whether ``value`` (YAML data) is a valid compression field."""
    try:
        _ADAPTER.validate_python(value)
    except ValidationError:
        return False
    return True


def compressor_from(spec: Any) -> Any:
    """The compressor a spec (a name, or a mapping as a scenario or ``model_dump`` gives it) describes."""
    return _ADAPTER.validate_python(spec)
