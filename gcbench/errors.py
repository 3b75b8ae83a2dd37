"""Errors a user can cause; the CLI prints them as one sentence and exits with 2."""


class GcbenchError(Exception):
    """An error caused by user input (bad parameters, bad files, missing data)."""
