"""`gcbench run --resume DIR`: read the run.json of an interrupted real run, refusing a damaged one in one sentence;
what a resume records of where each run went on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from gcbench.cluster import real_backends
from gcbench.errors import GcbenchError
from gcbench.scenario.loading import format_problem
from gcbench.scenario.schema import Scenario

REQUIRED = ("mode", "scenario_file", "scenario", "backend")
STATUSES = ("running", "interrupted", "stopped", "complete")


def read_run_json(run_dir: Path) -> dict[str, Any]:
    """run.json as a mapping with what a resume needs, or a GcbenchError that says what is wrong with it."""
    path = run_dir / "run.json"
    if not path.is_file():
        raise GcbenchError(f"--resume {run_dir}: not a real-run directory (no run.json).")
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as error:
        raise _damaged(path, f"it cannot be read as text ({type(error).__name__})") from None
    except json.JSONDecodeError as error:
        raise _damaged(
            path, f"it is not valid JSON ({error.msg} at line {error.lineno}, column {error.colno})"
        ) from None
    except RecursionError:
        raise _damaged(path, "it is not valid JSON (nested too deeply)") from None
    if not isinstance(meta, dict):
        raise _damaged(path, f"it holds a JSON {_json_type(meta)}, not an object")
    if meta.get("mode") != "real":
        raise GcbenchError(f"--resume {run_dir}: only real runs resume; this one is '{str(meta.get('mode'))[:40]}'.")
    missing = [key for key in REQUIRED if key not in meta]
    if missing:
        raise _damaged(path, f"it lacks {', '.join(repr(key) for key in missing)}")
    _check_types(meta, path)
    return meta


def _check_types(meta: dict[str, Any], path: Path) -> None:
    if not isinstance(meta["scenario_file"], str):
        raise _damaged(path, "its 'scenario_file' must be a string")
    backends = [f"'{entry.name}'" for entry in real_backends()]
    if meta["backend"] not in [entry.name for entry in real_backends()]:
        raise _damaged(path, f"its 'backend' must be {', '.join(backends[:-1])} or {backends[-1]}")
    if not isinstance(meta["scenario"], dict):
        raise _damaged(path, f"its 'scenario' must be an object, not a JSON {_json_type(meta['scenario'])}")
    if not isinstance(meta.get("resumes", []), list) or not all(isinstance(r, dict) for r in meta.get("resumes", [])):
        raise _damaged(path, "its 'resumes' must be a list of objects")
    if meta.get("status", "running") not in STATUSES:
        raise _damaged(path, f"its 'status' must be one of {', '.join(STATUSES)}")


def resumed_scenario(meta: dict[str, Any], run_dir: Path) -> Scenario:
    """The scenario as the run ran it, validated like a scenario file."""
    path = run_dir / "run.json"
    try:
        return Scenario.model_validate(meta["scenario"])
    except ValidationError as error:
        problems = error.errors()
        more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
        raise _damaged(path, f"its scenario is not valid: {format_problem(problems[0])}{more}") from None
    except (ValueError, TypeError, RecursionError) as error:
        raise _damaged(path, f"its scenario is not valid: {str(error)[:200]}") from None


def _damaged(path: Path, why: str) -> GcbenchError:
    return GcbenchError(f"--resume: {path} is damaged ({why}); gcbench cannot tell how to continue the run.")


def _json_type(value: Any) -> str:
    names = {list: "array", str: "string", bool: "boolean", int: "number", float: "number", type(None): "null"}
    return names.get(type(value), "object")


def finished_before_status(meta: dict[str, Any], runs: list, out: Path) -> bool:
    """A run written before run.json had a status, finished: its tables hold more (late timings) than rebuilding
    them from its checkpoints would, so it is left as it is."""
    return "status" not in meta and (out / "iterations.parquet").is_file() and all(run.finished for run in runs)


def continued(run) -> dict[str, Any]:
    """Where a run went on, as run.json's ``resumes`` records it."""
    return {"variant": run.label, "seed": run.seed, "iteration": run.resumed_at}
