"""The recorder moved to gcbench/results/recorder.py (the master records into it); kept importable here."""

from gcbench.results.recorder import RunRecorder

__all__ = ["RunRecorder"]
