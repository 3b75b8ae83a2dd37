"""What real mode needs from this machine: the [real] extra installed (the device: gcbench.training.device).

Both are checked before a real run does anything else (reading data, starting
Ray), so a missing piece costs one sentence instead of a traceback or a Ray
start. The extra is looked up, not imported: Ray reads settings from the
environment when it is imported (see ``gcbench.real.ray.start.start_ray``).
"""

from __future__ import annotations

import importlib.util

from gcbench.errors import GcbenchError

REAL_MODULES = ("torch", "torchvision", "ray")
TRAINING_MODULES = ("torch", "torchvision")  # what training needs without Ray: the torch and local backends
INSTALL = "pip install -e '.[real]' in a clone of gcbench"


def missing_real_modules(modules: tuple[str, ...] = REAL_MODULES) -> list[str]:
    """The modules of the [real] extra (or those of it named) that cannot be imported here."""
    missing = []
    for name in modules:
        try:
            found = importlib.util.find_spec(name) is not None
        except (ImportError, ValueError):  # a parent package that fails, or a module blocked in sys.modules
            found = False
        if not found:
            missing.append(name)
    return missing


def require_real_extra(
    needs: str = "real runs", otherwise: str = "or simulate with --sim", modules: tuple[str, ...] = REAL_MODULES
) -> None:
    """Refuse what trains (a real run, or training in the simulator) without the [real] extra's ``modules``
    (Ray only where the run needs it), saying how to install it."""
    if missing := missing_real_modules(modules):
        raise GcbenchError(
            f"{needs} need the [real] extra ({', '.join(missing)} cannot be imported): install it with {INSTALL}, "
            f"{otherwise}."
        )
