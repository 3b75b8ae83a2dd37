"""The local backend as ``gcbench run`` sees it (registered as ``local``): one run per seed, the whole
mini-batch in this process, the scenario's variants not run; no cluster, so no conformance suite."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from gcbench.real.backend import RealBackend


class LocalBackend(RealBackend):
    """One process, no checkpoints; its workers' cores are the process's."""

    @classmethod
    def runs(cls, scenario, data, out: Path) -> list[Any]:
        from gcbench.real.local.local_run import LocalRun

        return [LocalRun(scenario, seed, data) for seed in scenario.seeds]

    @classmethod
    def planned(cls, scenario) -> int:
        return scenario.iterations * len(scenario.seeds)
