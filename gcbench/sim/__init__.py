"""The simulator: SimPy and vectorised engines over the shared models and policies."""
