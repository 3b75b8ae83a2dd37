"""gcbench: benchmark gradient coding and aggregation policies for straggler-tolerant training."""

__version__ = "0.1.0"
