"""Training: the models, data, partition gradients and evaluation that real mode and the simulator share.

Nothing here knows about a backend or a clock: a cluster (Ray or torch.distributed
workers, or the SimPy cluster when a scenario trains) calls these to compute real partition gradients,
and the master to step and evaluate. It imports torch, so only a run that trains
imports it; this package root stays empty so ``gcbench.training.device`` is cheap.
"""
