"""What a Ray actor adds to the worker logic every backend runs (gcbench/real/wallclock/gradient_worker.py): its data
comes from the object store.

The cluster hands ``load`` each partition's object reference inside a list, so Ray passes it unresolved;
the actor fetches the shards itself, from the references the cluster holds for the whole run, so a
restarted actor gets its data again without the driver sending it.
"""

from __future__ import annotations

from gcbench.real.wallclock import gradient_worker


class GradientWorker(gradient_worker.GradientWorker):
    """Wrapped with ray.remote(concurrency_groups={"control": 1}, max_restarts=-1) by the cluster. Named as
    the class it extends, so its processes are still ``ray::GradientWorker`` (docs/security.md)."""

    def receive(self, shards: dict[int, list]) -> None:
        import ray

        super().receive({j: ray.get(refs[0]) for j, refs in shards.items()})
