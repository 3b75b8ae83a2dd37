"""Errors a user can cause; the CLI prints them as one sentence and exits with 2. ``did_you_mean`` names the
registered name nearest a misspelt one."""

from __future__ import annotations

from collections.abc import Iterable


class GcbenchError(Exception):
    """An error caused by user input (bad parameters, bad files, missing data)."""


def did_you_mean(name: object, choices: Iterable[str]) -> str:
    """ "did you mean 'fr'? " for the choice nearest a misspelt name, or "" where none is near; it goes before
    the list of choices. Near: difflib's similarity at least 0.75, a letter or two dropped, doubled or swapped
    ('probabilty', 'qsdg', 'torhc'); at 0.6 'seed' was taken for 'scheme'."""
    import difflib

    close = difflib.get_close_matches(str(name), [str(choice) for choice in choices], n=1, cutoff=0.75)
    return f"did you mean '{close[0]}'? " if close else ""
