"""Latency, straggling, failure and network models shared by the simulator and real mode.

Each model is a typed, validated config (the YAML form) that also samples: the
simulator draws virtual times from it, real mode sleeps the same draws in wall time.
The base of every config and the registry of each kind are public here, for the
layers that declare configs of their own (policies, the scenario).
"""

from gcbench.models._config import MAX_SECONDS, Config, Seconds, internal, is_internal
from gcbench.models._registry import Registry

__all__ = ["MAX_SECONDS", "Config", "Registry", "Seconds", "internal", "is_internal"]
