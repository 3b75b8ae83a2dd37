"""The local backend: one process trains the whole mini-batch (train.py), one run per seed (backend.py); the
baseline the distributed runs are compared with."""
