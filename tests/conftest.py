"""Shared test settings: Hypothesis profiles (ci is the default, thorough for local runs).

ci is derandomized (the same examples on every run, no example database), so a
red CI is never luck; everyday (what `pytest -m "not slow"` takes) is ci with 10
examples a test instead of 40; thorough searches at random, keeping its database
in the untracked .hypothesis/. Every failure either ever found becomes an @example.
"""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    max_examples=40,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
    print_blob=True,
)
settings.register_profile("thorough", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
# the everyday lane (`pytest -m "not slow"`): the ci profile's examples, fewer of them; CI runs all 40
settings.register_profile("everyday", parent=settings.get_profile("ci"), max_examples=10)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


@pytest.fixture
def shared_data() -> Path:
    """../shared/data, or a skip saying why (a user's clone has no ../shared)."""
    if not SHARED_DATA.is_dir():
        pytest.skip(f"{SHARED_DATA} is absent: the shared development data is only on gcbench's dev machines")
    return SHARED_DATA


@pytest.fixture(scope="session")
def local_ray():
    """One local Ray instance for every real-mode test (starting one takes seconds)."""
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    from gcbench.real.ray.start import LOOPBACK_ONLY, local_ray_options

    os.environ.setdefault(LOOPBACK_ONLY, "0")  # as gcbench run's own: loopback only (read when ray is imported)
    ray = pytest.importorskip("ray", reason="ray is part of the [real] extra")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True, **local_ray_options())
    yield ray
    ray.shutdown()


# what starts Ray or trains a network through the command line: minutes in all, so not the everyday lane
SLOW_MODULES = {"test_real_resume.py"}


def pytest_configure(config):
    """The everyday lane takes the everyday profile, unless HYPOTHESIS_PROFILE names one."""
    if "HYPOTHESIS_PROFILE" not in os.environ and config.getoption("markexpr", "").strip() == "not slow":
        settings.load_profile("everyday")


# The modules that take longest (`pytest --durations`, on two test processes): they are collected first, so that
# `pytest -n 2 --dist loadfile`, which hands whole modules out in collection order, starts them first and the short
# ones fill in at the end, rather than one process waiting on the other's last long module. A hint for the
# scheduler only: a module missing here runs all the same, in its usual place.
LONGEST_FIRST = (
    "test_torch_cluster.py",
    "test_real_resume.py",
    "test_real_ray.py",
    "test_ddp_allreduce.py",
    "test_real_failures.py",
    "test_torchrun.py",
    "test_scheme_conformance.py",
    "test_real_turns.py",
    "test_plot_cli.py",
    "test_partial_schemes.py",
)


def pytest_collection_modifyitems(config, items):
    """`pytest -m "not slow"` is the everyday lane (under two minutes); CI runs everything. The longest modules
    first (LONGEST_FIRST), each module's tests in their own order."""
    for item in items:
        if "local_ray" in item.fixturenames or item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)
    rank = {name: index for index, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))
