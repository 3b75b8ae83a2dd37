"""Scheme names, as scenarios and the CLI spell them, mapped to classes."""

from __future__ import annotations

from typing import Any

from gcbench.coding._base import Scheme
from gcbench.coding._errors import SchemeParameterError
from gcbench.errors import did_you_mean

_SCHEMES: dict[str, type[Scheme]] = {}


def register_scheme(cls: type[Scheme]) -> type[Scheme]:
    """Class decorator: make a scheme available under ``cls.name``."""
    if not cls.name or cls.name in _SCHEMES:
        raise ValueError(f"scheme name {cls.name!r} is empty or already registered")
    _SCHEMES[cls.name] = cls
    return cls


def unregister_scheme(name: str) -> None:
    """Remove the scheme registered under ``name`` (a test's scheme, registered for its duration)."""
    del _SCHEMES[name]


def available_schemes() -> list[str]:
    """Registered scheme names, in registration order."""
    return list(_SCHEMES)


def scheme_class(name: str) -> type[Scheme]:
    """The class registered under ``name``."""
    if name not in _SCHEMES:
        raise SchemeParameterError(
            f"Unknown scheme '{name}'; {did_you_mean(name, _SCHEMES)}available: {', '.join(_SCHEMES)}."
        )
    return _SCHEMES[name]


def make_scheme(name: str, n: int, s: int = 0, **params: Any) -> Scheme:
    """Build scheme ``name`` for n workers tolerating s stragglers (params: m, seed, ...)."""
    return scheme_class(name)(n=n, s=s, **params)
