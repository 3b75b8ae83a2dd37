"""run.json: what produced a results directory (scenario as loaded, seeds, versions, host)."""

from __future__ import annotations

import datetime
import os
import platform
import sys
from importlib import metadata
from pathlib import Path
from typing import Any

PACKAGES = ("gcbench", "numpy", "scipy", "simpy", "pandas", "pyarrow", "pydantic", "torch", "ray")


def versions() -> dict[str, str]:
    found = {"python": platform.python_version()}
    for name in PACKAGES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    return found


def run_metadata(mode: str, scenario_file: Path, points: list, extra: dict[str, Any]) -> dict[str, Any]:
    return {
        "mode": mode,
        "created": utc_now(),
        "command": " ".join(sys.argv),
        "scenario_file": str(scenario_file),
        "scenario": points[0].scenario.model_dump(mode="json"),
        "sweep_points": [p.values for p in points],
        # per variant label, the compressor its workers apply (the compression figure's colours)
        "compression": {v.display_label(): v.compressor.display_name for v in points[0].scenario.variants},
        "seeds": points[0].scenario.seeds,
        "versions": versions(),
        "host": {"name": platform.node(), "platform": platform.platform(), "cpus": os.cpu_count()},
        **extra,
    }


def new_run_directory(root: Path, name: str) -> Path:
    """results/<scenario name>-<UTC timestamp>, with a suffix if that exists already."""
    stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%d-%H%M%S")
    candidate = root / f"{name}-{stamp}"
    suffix = 1
    while candidate.exists():
        suffix += 1
        candidate = root / f"{name}-{stamp}-{suffix}"
    return candidate


def utc_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")


def resume_entry(continued_from: list[dict[str, Any]]) -> dict[str, Any]:
    """One resume of a real run, as run.json's ``resumes`` lists them: when, the command, where each run went on."""
    return {"when": utc_now(), "command": " ".join(sys.argv), "continued_from": continued_from, "wall_seconds": 0.0}
