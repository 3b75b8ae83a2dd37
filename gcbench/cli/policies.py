"""`gcbench policies`: every registered aggregation policy with its parameters."""

from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

from gcbench.cli.console import user_errors, wide_console

if TYPE_CHECKING:
    from rich.console import Console

_BOUNDS = (("ge", ">="), ("gt", ">"), ("le", "<="), ("lt", "<"))


@user_errors
def policies() -> None:
    """List the registered aggregation policies with their parameters."""
    print_policy_table()


def type_text(annotation: Any, metadata: list[Any]) -> str:
    """``int >= 1``, ``float > 0``, ``wait | approximate``: a field's type as a user writes it."""
    if typing.get_origin(annotation) is typing.Literal:
        return " | ".join(str(choice) for choice in typing.get_args(annotation))
    name = getattr(annotation, "__name__", str(annotation))
    bounds = [f"{sign} {getattr(m, attr)}" for m in metadata for attr, sign in _BOUNDS if hasattr(m, attr)]
    return " ".join([name, *bounds])


def policy_parameters(cls: type) -> list[str]:
    """``k: int >= 1 (required)``, ``fallback: wait | approximate (default wait)``: required ones first; neither
    the registry's tag nor a field the class declares internal (gcbench.models.internal)."""
    from gcbench.models import is_internal
    from gcbench.policies import POLICIES

    fields = [(name, f) for name, f in cls.model_fields.items() if name != POLICIES.tag and not is_internal(f)]
    fields.sort(key=lambda item: not item[1].is_required())
    return [
        f"{name}: {type_text(field.annotation, field.metadata)} "
        f"({'required' if field.is_required() else f'default {_yaml(field.default)}'})"
        for name, field in fields
    ]


def summary_line(cls: type) -> str:
    """The first paragraph of a class's docstring, on one line, without reST quotes."""
    paragraph = (cls.__doc__ or "").strip().split("\n\n")[0]
    return " ".join(paragraph.split()).replace("``", "")


def print_policy_table(console: Console | None = None) -> None:
    """One row per registered policy, from its class: name, synchronous?, parameters, what it does."""
    from rich import box
    from rich.table import Table

    from gcbench.policies import POLICIES

    console = console or wide_console()
    table = Table(title="Aggregation policies", box=box.SIMPLE_HEAD)
    for column in ("name", "synchronous", "parameters", "what it does"):
        table.add_column(column, no_wrap=column in ("name", "synchronous"))
    for name in POLICIES.names():
        cls = POLICIES.get(name)
        synchronous = "yes" if cls.synchronous else "no"
        table.add_row(name, synchronous, "\n".join(policy_parameters(cls)), summary_line(cls))
    console.print(table)
    console.print("In a scenario: policy: decodable, or policy: {name: fastest_k, k: 10} (docs/scenarios.md).")


def _yaml(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)
