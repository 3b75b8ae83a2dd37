"""A real run's life, in the order it happens: the checks before it starts (requirements.py, scenario.py for a new
run, resume.py for an interrupted one), its setup and outcome (setup.py: ``new_run``, ``resumed_run``, ``train``),
the runs of its (variant, seed)s taking turns (session.py), each one trained a block at a time (training_run.py:
the interface; variant_run.py: the one master on a cluster; standalone.py: one variant alone, for the library)
and saved at each block's end (checkpoint.py). Backends are reached through the cluster registry
(gcbench/real/backend.py), never by name; the DDP baseline is the one run class named here (standalone.py)."""
