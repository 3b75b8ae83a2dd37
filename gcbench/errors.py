"""Errors a user can cause; the CLI prints them as one sentence and exits with 2. ``did_you_mean`` names the
registered name nearest a misspelt one."""

from __future__ import annotations

from collections.abc import Iterable


class GcbenchError(Exception):
    """An error caused by user input (bad parameters, bad files, missing data)."""


def did_you_mean(name: object, choices: Iterable[str]) -> str:
    """ "did you mean 'fr'? " for the choice nearest a misspelt name (difflib's similarity at least 0.6, the
    spelling mistakes of a word or two), or "" where none is near; it goes before the list of choices."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(choice) for choice in choices], n=1, cutoff=0.6)
    return f"did you mean '{close[0]}'? " if close else ""
