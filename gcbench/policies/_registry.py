"""The registered aggregation policies, by the name a scenario spells (``policy: {name: fastest_k}``)."""

from __future__ import annotations

from gcbench.models import Registry

POLICIES = Registry("policy", "name")
register_policy = POLICIES.register


def available_policies() -> list[str]:
    """Registered policy names, in registration order (synchronous ones first)."""
    return POLICIES.names()
