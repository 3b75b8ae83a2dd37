"""Latency, straggling, failure and network models shared by the simulator and real mode.

Each model is a typed, validated config (the YAML form) that also samples: the
simulator draws virtual times from it, real mode sleeps the same draws in wall time.
"""
