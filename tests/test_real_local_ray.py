"""How gcbench starts a local Ray instance: loopback only and no metrics exporter, unless the user says otherwise.

The real processes are checked with ss in tests/test_real_resume.py (slow);
these check what start_ray hands Ray, fast.
"""

from __future__ import annotations

import os
import sys
import types

import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.real.ray.start import start_ray  # noqa: E402

SETTINGS = (
    "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER",
    "RAY_enable_metrics_collection",
    "RAY_AUTH_MODE",
    "RAY_timeout_ms_task_wait_for_death_info",
)


@pytest.fixture
def ray_calls(monkeypatch) -> dict:
    """A stand-in ray module recording ray.init's options and, as Ray reads them at import, the settings."""
    for name in SETTINGS:  # unset now, restored after the test even though start_ray sets them
        monkeypatch.setenv(name, "unset")
        monkeypatch.delenv(name)
    calls: dict = {}
    ray = types.ModuleType("ray")
    ray.is_initialized = lambda: False
    ray.init = lambda **options: calls.update(options, environment={k: os.environ.get(k) for k in SETTINGS})
    monkeypatch.setitem(sys.modules, "ray", ray)
    return calls


def test_a_local_instance_is_loopback_only_without_metrics_export(ray_calls):
    start_ray(None)
    assert ray_calls["environment"]["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "0"
    config = {"enable_metrics_collection": False, "timeout_ms_task_wait_for_death_info": 0}
    assert ray_calls["_system_config"] == config  # a worker's exit is noticed at once, not after a second
    assert ray_calls["include_dashboard"] is False


def test_a_users_ray_settings_are_respected(ray_calls, monkeypatch):
    monkeypatch.setenv("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "1")
    monkeypatch.setenv("RAY_enable_metrics_collection", "1")
    monkeypatch.setenv("RAY_timeout_ms_task_wait_for_death_info", "1000")
    start_ray(None)
    assert ray_calls["environment"]["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] == "1"
    assert "_system_config" not in ray_calls


def test_joining_a_cluster_changes_none_of_its_settings_but_token_authentication(ray_calls):
    start_ray("10.0.0.1:6379")
    assert ray_calls["environment"]["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] is None
    assert "_system_config" not in ray_calls and ray_calls["environment"]["RAY_AUTH_MODE"] == "token"
