"""The torch.distributed backend: a worker process per worker on this machine (cluster.py, launcher.py), the
process's life (worker.py), and ranks on other machines under torchrun (torchrun.py). The channels, sessions
and zygote it shares with the DDP baseline are gcbench/real/processes/."""
