"""Errors raised by the coding library."""

import math

from gcbench.errors import GcbenchError


class SchemeParameterError(GcbenchError, ValueError):
    """A scheme was asked for with parameters it does not accept."""


class NotDecodable(Exception):
    """The received messages do not determine the full gradient."""


def bad_parameter(scheme: str, name: str, expected: str, got: object, why: str = "") -> SchemeParameterError:
    """Build the one error message every parameter check uses."""
    reason = f" ({why})" if why else ""
    return SchemeParameterError(f"The '{name}' parameter of {scheme} must be {expected}{reason}. Got {got!r} instead.")


def check_like_default(scheme: str, name: str, value: object, default: object) -> None:
    """A declared parameter has its default's type: an int for an int, a finite number for a float."""
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if isinstance(default, bool):
        ok, expected = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, expected = numeric and isinstance(value, int), "an int"
    elif isinstance(default, float):
        ok, expected = numeric and math.isfinite(value), "a finite number"
    else:
        ok, expected = isinstance(value, type(default)), f"a {type(default).__name__}"
    if not ok:
        raise bad_parameter(scheme, name, expected, value)


def check_int(scheme: str, name: str, value: object, low: int, high: int, why: str = "") -> int:
    """Return value as an int if it lies in [low, high], else raise the standard error."""
    is_int = isinstance(value, int) and not isinstance(value, bool)
    if not is_int or not low <= value <= high:
        expected = f"an int in [{low}, {high}]" if low <= high else "an int in an empty range"
        raise bad_parameter(scheme, name, expected, value, why)
    return int(value)
