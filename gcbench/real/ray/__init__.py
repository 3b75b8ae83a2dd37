"""The Ray backend: one actor per worker (cluster.py), a job streaming its messages (streams.py), the actor's
data from the object store (actors.py), and starting or joining Ray (start.py)."""
