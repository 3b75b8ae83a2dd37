"""The DistributedDataParallel baseline (``policy: allreduce``), beside the master on any backend: the
driver's side of a variant (run.py) and one rank's process (rank.py)."""
