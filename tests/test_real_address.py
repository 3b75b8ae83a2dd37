"""Joining an existing Ray cluster (--address) keeps token authentication on."""

from __future__ import annotations

import sys
import types

import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.errors import GcbenchError  # noqa: E402
from gcbench.real.ray.start import start_ray  # noqa: E402


def fake_ray(calls: dict, fail: bool = False) -> types.ModuleType:
    import os

    ray = types.ModuleType("ray")
    ray.is_initialized = lambda: False

    def init(**options):
        calls.update(options, auth_mode=os.environ.get("RAY_AUTH_MODE"))
        if fail:
            raise ConnectionError("Failed to connect to Ray cluster at 10.0.0.1:6379")

    ray.init = init
    return ray


def no_auth_mode(monkeypatch) -> None:
    """RAY_AUTH_MODE unset now, and restored after the test even though start_ray sets it."""
    monkeypatch.setenv("RAY_AUTH_MODE", "unset")
    monkeypatch.delenv("RAY_AUTH_MODE")


def test_joining_a_cluster_uses_token_authentication(monkeypatch):
    calls: dict = {}
    no_auth_mode(monkeypatch)
    monkeypatch.setitem(sys.modules, "ray", fake_ray(calls))
    start_ray("10.0.0.1:6379")
    assert calls["address"] == "10.0.0.1:6379" and calls["auth_mode"] == "token"


def test_a_users_auth_mode_is_respected(monkeypatch):
    calls: dict = {}
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")
    monkeypatch.setitem(sys.modules, "ray", fake_ray(calls))
    start_ray("10.0.0.1:6379")
    assert calls["auth_mode"] == "disabled"


def test_an_unreachable_cluster_is_one_sentence_naming_the_token(monkeypatch):
    no_auth_mode(monkeypatch)
    monkeypatch.setitem(sys.modules, "ray", fake_ray({}, fail=True))
    with pytest.raises(GcbenchError, match=r"cannot start or reach Ray at 10.0.0.1:6379: .*auth_token"):
        start_ray("10.0.0.1:6379")
