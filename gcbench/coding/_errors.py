"""Errors raised by the coding library."""

import math
import numbers
from typing import Any

import numpy as np

from gcbench.errors import GcbenchError


class SchemeParameterError(GcbenchError, ValueError):
    """A scheme was asked for with parameters it does not accept."""


class NotDecodable(Exception):
    """The received messages do not determine the full gradient."""


def bad_parameter(scheme: str, name: str, expected: str, got: object, why: str = "") -> SchemeParameterError:
    """Build the one error message every parameter check uses."""
    reason = f" ({why})" if why else ""
    return SchemeParameterError(
        f"The '{name}' parameter of {scheme} must be {expected}{reason}. Got {plain(got)!r} instead."
    )


def is_integer(value: object) -> bool:
    """An integer of any kind (Python's, numpy's: ``numbers.Integral``), but not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_real(value: object) -> bool:
    """A real number of any kind (``numbers.Real``: ints, floats, numpy's), but not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def plain(value: Any) -> Any:
    """A numpy (or other) number as the Python int or float it stands for, so stored parameters print and
    serialise cleanly; a list's items likewise, and a numpy array as such a list; anything else as it is."""
    if value is None or type(value) in (bool, int, float, str):  # type: numpy's float64 is a float subclass
        return value
    if isinstance(value, np.bool_):
        return bool(value)
    if is_integer(value):
        return int(value)
    if is_real(value):
        return float(value)
    if isinstance(value, np.ndarray):
        value = value.tolist()
    if isinstance(value, list):
        return [plain(v) for v in value]
    return value


def check_like_default(scheme: str, name: str, value: object, default: object) -> None:
    """A declared parameter has its default's type: an int for an int, a finite number for a float (numpy's
    included, as everywhere the library takes numbers), a list for a list."""
    if isinstance(default, bool):
        ok, expected = isinstance(value, bool), "true or false"
    elif isinstance(default, int):
        ok, expected = is_integer(value), "an int"
    elif isinstance(default, float):
        ok, expected = is_real(value) and math.isfinite(value), "a finite number"
    else:
        ok, expected = isinstance(value, type(default)), f"a {type(default).__name__}"
    if not ok:
        raise bad_parameter(scheme, name, expected, value)


def check_int(scheme: str, name: str, value: object, low: int, high: int, why: str = "") -> int:
    """Return value as a Python int if it is an integer (numpy's too) in [low, high], else raise the standard
    error."""
    if not is_integer(value) or not low <= value <= high:
        expected = f"an int in [{low}, {high}]" if low <= high else "an int in an empty range"
        raise bad_parameter(scheme, name, expected, value, why)
    return int(value)
