"""`gcbench policies`: every registered aggregation policy with its parameters."""

from __future__ import annotations

from typing import TYPE_CHECKING

from gcbench.cli.configs import config_parameters, summary_line
from gcbench.cli.console import user_errors, wide_console

if TYPE_CHECKING:
    from rich.console import Console


@user_errors
def policies() -> None:
    """List the registered aggregation policies with their parameters."""
    print_policy_table()


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
        table.add_row(name, synchronous, "\n".join(config_parameters(cls, POLICIES.tag)), summary_line(cls))
    console.print(table)
    console.print("In a scenario: policy: decodable, or policy: {name: fastest_k, k: 10} (docs/scenarios.md).")
