"""What `gcbench schemes` prints: the scheme table and one scheme in detail."""

from __future__ import annotations

from typing import Any

import numpy as np
from rich import box
from rich.console import Console
from rich.table import Table

from gcbench.coding import SchemeParameterError, available_schemes, make_scheme, scheme_class
from gcbench.errors import GcbenchError


def wide_console() -> Console:
    """A console that does not squeeze tables when output goes to a file or pipe."""
    console = Console()
    return console if console.is_terminal else Console(width=160)


def print_scheme_table(console: Console | None = None) -> None:
    """One row per registered scheme, from the facts each scheme class declares."""
    console = console or wide_console()
    table = Table(title="Gradient-coding schemes", box=box.SIMPLE_HEAD)
    for column in ("name", "reference", "load", "upload", "tolerates", "exact"):
        table.add_column(column, no_wrap=column == "name")
    for name in available_schemes():
        cls = scheme_class(name)
        facts = cls.facts
        exact = "exact" if cls.exact else "approximate"
        row = (name, cls.reference, facts["load"], facts["upload"], facts["tolerates"], exact)
        table.add_row(*row)
    console.print(table)
    console.print("Load: partitions per worker per step. Upload: fraction of a gradient per message.")
    console.print("Show one instance: gcbench schemes cr --n 12 --s 3")


def scheme_options(name: str, args: list[str]) -> dict[str, Any]:
    """``["--m", "2", "--seed=4"]`` -> {"m": 2, "seed": 4}: the parameters scheme ``name`` declares, YAML-read.

    Options come from the registry (``Scheme.defaults``), so a new scheme's
    parameters need no change here.
    """
    from gcbench.scenario.loading import parse_yaml

    cls, params, tokens = scheme_class(name), {}, list(args)
    while tokens:
        token = tokens.pop(0)
        if not token.startswith("--") or token == "--":
            raise GcbenchError(f"unexpected argument '{token}'; give {name}'s parameters as --NAME VALUE.")
        key, equals, text = token[2:].partition("=")
        if key not in cls.defaults:
            raise SchemeParameterError(f"--{key} does not apply to {name}; it takes {_takes(cls)}.")
        if not equals:
            if not tokens or tokens[0].startswith("--"):
                raise GcbenchError(f"--{key} needs a value, e.g. --{key} {cls.defaults[key]}.")
            text = tokens.pop(0)
        params[key] = parse_yaml(text, f"--{key}")
    return params


def scheme_options_help() -> str:
    """Which schemes declare which parameters, with their defaults: ``--m: cce_cr, cce_fr (default 2)``."""
    takers: dict[tuple[str, str], list[str]] = {}
    for name in available_schemes():
        for key, value in scheme_class(name).defaults.items():
            takers.setdefault((key, str(value)), []).append(name)  # str: a default may be a list
    uses = [f"--{key}: {', '.join(names)} (default {value})" for (key, value), names in takers.items()]
    return f"Scheme parameters, after NAME: {'; '.join(uses) or 'none'}."


def print_scheme(name: str, n: int, s: int, params: dict[str, Any], console: Console | None = None) -> None:
    """Properties, assignment and coefficients, and worst condition number of one instance."""
    console = console or wide_console()
    scheme = make_scheme(name, n=n, s=s, **params)
    report = scheme.worst_condition()
    scope = "every" if report.exhaustive else f"{report.sets_checked} sampled"
    console.print(f"[bold]{scheme!r}[/bold]  {'exact' if scheme.exact else 'approximate'}")
    console.print(f"construction: {scheme.construction}")
    pipelined = f" per step, holding {scheme.held} (round robin, the rest cached)" if scheme.pipelined else ""
    console.print(
        f"n={scheme.n} workers, k={scheme.k} partitions, s={scheme.s}, m={scheme.m}; "
        f"load {scheme.load} partitions/worker{pipelined}, upload {scheme.upload:g} gradient/message, "
        f"tolerates {scheme.tolerance} straggler(s)"
    )
    console.print(
        f"worst decoding condition number over {scope} straggler set(s) of size {scheme.s}: "
        f"{report.worst:.3g} (stragglers {list(report.worst_stragglers)})"
    )
    console.print(_coefficient_table(scheme))


def _coefficient_table(scheme) -> Table:
    title = "coefficients (worker x partition)" if scheme.m == 1 else "assignment (worker x partition)"
    table = Table(title=title, box=box.SIMPLE_HEAD, padding=(0, 1), pad_edge=False)
    table.add_column("worker", justify="right")
    for j in range(scheme.k):
        table.add_column(str(j), justify="right", min_width=5, no_wrap=True)
    for worker in range(scheme.n):
        coefficients = scheme.coefficients[list(scheme.messages(worker))]
        held = set(scheme.partitions(worker))
        cells = [_cell(coefficients[:, :, j], j in held, scheme.m) for j in range(scheme.k)]
        table.add_row(str(worker), *cells)
    return table


def _cell(values: np.ndarray, held: bool, m: int) -> str:
    if not held:
        return "·"
    return f"{values.flat[0]:.2f}" if m == 1 and values.size == 1 else "■"


def _takes(cls) -> str:
    return ", ".join(f"--{p} (default {v})" for p, v in cls.defaults.items()) or "no extra options"
