"""Real mode: the scenario's schemes and policies training a network in wall time, on a backend of the cluster
registry (ray/, torch/: the one master on their workers; local/: one process), with the DDP baseline beside the
master (ddp/), over what they share here (docs/architecture.md, "Real mode's layout")."""
