"""The registered compressors, by the name a scenario spells (``compression: {name: topk, ratio: 0.01}``)."""

from __future__ import annotations

from gcbench.models import Registry

COMPRESSORS = Registry("compressor", "name")
register_compressor = COMPRESSORS.register


def available_compressors() -> list[str]:
    """Registered compressor names, in registration order."""
    return COMPRESSORS.names()
