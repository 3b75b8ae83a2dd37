"""`gcbench schemes`: the scheme table, or one scheme in detail; its help lists the parameters schemes declare."""

from __future__ import annotations

from math import comb
from typing import TYPE_CHECKING, Annotated, Any

import typer
from typer.core import TyperCommand

from gcbench.cli.console import user_errors, wide_console
from gcbench.errors import GcbenchError

if TYPE_CHECKING:
    import numpy as np
    from rich.console import Console
    from rich.table import Table


class SchemesCommand(TyperCommand):
    """`gcbench schemes`, whose help lists the parameters the registered schemes declare."""

    def format_help(self, ctx: Any, formatter: Any) -> None:
        self.epilog = scheme_options_help()
        super().format_help(ctx, formatter)


# a scheme's own parameters (--m, --seed, ...) are not options of the command: they
# come from the registry, so unknown options reach the command as extra arguments
CONTEXT = {"allow_extra_args": True, "ignore_unknown_options": True}


@user_errors
def schemes(
    ctx: typer.Context,
    name: Annotated[str | None, typer.Argument(help="Show one scheme instance instead of the table.")] = None,
    n: Annotated[int, typer.Option("--n", help="Workers.")] = 12,
    s: Annotated[
        int | None,
        typer.Option("--s", help="Stragglers tolerated (default 1; a sequential scheme's follows from B, W, lam)."),
    ] = None,
    nodes: Annotated[
        int | None,
        typer.Option(
            "--nodes",
            help="Whole-node losses: the workers on this many nodes, which sets of lost nodes still decode exactly.",
        ),  # fmt: skip
    ] = None,
    placement: Annotated[
        str | None,
        typer.Option(
            "--placement",
            help="With --nodes: spread, pack, by_code (the one that survives the most "
            "losses), or each worker's node, comma-separated (0,1,2,0,1,2); default: all three compared.",
        ),  # fmt: skip
    ] = None,
) -> None:
    """List the registered gradient-coding schemes, or show one instance in detail.

    After NAME, give any parameter the scheme declares as --NAME VALUE (e.g. --m 2 for cce_cr, --seed 4 for cr).
    With --nodes K, show instead how many whole-node losses the instance survives on K nodes.
    """
    if name is not None and name.startswith("-"):
        raise GcbenchError(f"give the scheme name before its parameters, e.g. gcbench schemes cce_cr {name} 2.")
    if name is None:
        if placement is not None:
            raise GcbenchError("--placement places one scheme's workers: name it, e.g. gcbench schemes fr --nodes 3.")
        if ctx.args:
            raise GcbenchError(f"{ctx.args[0]} is a scheme parameter: name the scheme first, e.g. gcbench schemes cr.")
        if nodes is not None:
            print_node_loss_table(n, 1 if s is None else s, nodes)
            return
        print_scheme_table()
        return
    params = scheme_options(name, ctx.args)
    if s is None:
        from gcbench.coding import scheme_class

        derived = scheme_class(name).derived_s(params)
        s = 1 if derived is None else derived
    if nodes is not None:
        print_node_losses(name, n, s, params, nodes, placement)
        return
    if placement is not None:
        raise GcbenchError("--placement places the workers on nodes: give --nodes too, e.g. --nodes 3.")
    print_scheme(name, n, s, params)


def print_scheme_table(console: Console | None = None) -> None:
    """One row per registered scheme, from the facts each scheme class declares."""
    from rich import box
    from rich.table import Table

    from gcbench.coding import available_schemes, scheme_class

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
    from gcbench.coding import SchemeParameterError, scheme_class
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
    from gcbench.coding import available_schemes, scheme_class

    takers: dict[tuple[str, str], list[str]] = {}
    for name in available_schemes():
        for key, value in scheme_class(name).defaults.items():
            takers.setdefault((key, str(value)), []).append(name)  # str: a default may be a list
    uses = [f"--{key}: {', '.join(names)} (default {value})" for (key, value), names in takers.items()]
    return f"Scheme parameters, after NAME: {'; '.join(uses) or 'none'}."


def _sets(report, size: int) -> str:
    """The straggler sets a report scanned, in words: every one of the size, or the sample."""
    if report.exhaustive:
        return f"every straggler set of size {size}"
    return f"{report.sets_checked} sampled straggler sets of size {size}"


def print_scheme(name: str, n: int, s: int, params: dict[str, Any], console: Console | None = None) -> None:
    """Properties, assignment and coefficients, and worst condition number of one instance."""
    from gcbench.coding import make_scheme

    console = console or wide_console()
    scheme = make_scheme(name, n=n, s=s, **params)
    report = scheme.worst_condition()
    console.print(f"[bold]{scheme!r}[/bold]  {'exact' if scheme.exact else 'approximate'}")
    console.print(f"construction: {scheme.construction}", highlight=False, soft_wrap=True)
    pipelined = f" per step, holding {scheme.held} (round robin, the rest cached)" if scheme.pipelined else ""
    console.print(
        f"n={scheme.n} workers, k={scheme.k} partitions, s={scheme.s}, m={scheme.m}; "
        f"load {scheme.load} partitions/worker{pipelined}, upload {scheme.upload:g} gradient/message, "
        + (
            f"tolerates {scheme.facts['tolerates']} stragglers across rounds ({scheme.tolerance} whole workers "
            "missing from all of one job's messages)"
            if scheme.sequential
            else f"tolerates {scheme.tolerance} straggler{'' if scheme.tolerance == 1 else 's'}"
        )
    )
    console.print(
        f"worst decoding condition number over {_sets(report, scheme.tolerance)}: "
        f"{report.worst:.3g} (stragglers {list(report.worst_stragglers)})"
    )
    amplification = scheme.error_amplification()
    sets = _sets(amplification, scheme.tolerance)
    if not scheme.exact:
        error = (
            f"worst {amplification.residual_worst:.3g} (stragglers {list(amplification.residual_stragglers)}), mean "
            f"{amplification.residual_mean:.3g}"
            if amplification.residual_worst > EXACT_RESIDUAL
            else "0: every set of this size decodes exactly (an approximate code's error shows with more stragglers)"
        )
        console.print(
            f"decoding error (the residual ||W R - T||_F the results record; 1.0 is one partition's gradient left "
            f"out of the sum of {scheme.k}) over {sets}: {error}",
            highlight=False,
            soft_wrap=True,
        )
    console.print(
        f"error amplification (the decoding weights' Frobenius norm: how much the decode enlarges errors carried by "
        f"the messages, such as compression's; not the decode's own error) over {sets}: worst "
        f"{amplification.worst:.3g} (stragglers {list(amplification.worst_stragglers)}), mean "
        f"{amplification.mean:.3g}. For scale: uncoded training, all {scheme.n} messages with weight 1, has "
        f"{amplification.uncoded:.3g}",
        highlight=False,
        soft_wrap=True,
    )
    if scheme.k > MAX_TABLE_PARTITIONS:
        console.print(f"(the coefficient table of its {scheme.k} partitions is too wide to print; "
                      "gcbench.coding.make_scheme(...).coefficients holds it)")  # fmt: skip
    else:
        console.print(_coefficient_table(scheme))


PLACEMENTS = ("spread", "pack", "by_code")


def print_node_losses(name: str, n: int, s: int, params: dict[str, Any], nodes: int, placement: str | None,
                      console: Console | None = None) -> None:  # fmt: skip
    """How many whole-node losses one instance survives on ``nodes`` nodes, under a placement or each of
    PLACEMENTS: the losses survived whatever nodes go, a smallest set that breaks it, and per number of lost nodes
    the share of sets that still decode exactly (gcbench/coding/node_loss.py)."""
    from rich import box
    from rich.table import Table

    from gcbench.coding import make_scheme
    from gcbench.coding.node_loss import by_code, survival
    from gcbench.models.topology import Topology

    console = console or wide_console()
    scheme = make_scheme(name, n=n, s=s, **params)
    _check_nodes(n, nodes)
    chosen = PLACEMENTS if placement is None else (placement,)
    results = {}
    for each in chosen:
        if each == "by_code":
            results[each] = by_code(scheme, nodes)
        elif each in ("spread", "pack"):
            results[each] = survival(scheme, Topology(nodes=nodes, placement=each).node_of(n))
        else:
            results["given"] = survival(scheme, _explicit_placement(each, n, nodes))
    exact = "" if scheme.exact else " (an approximate code: only exact decodes count; the residual column says how far)"
    console.print(f"[bold]{scheme!r}[/bold] on {nodes} nodes: the sets of lost nodes after which the workers left "
                  f"decode exactly{exact}", highlight=False, soft_wrap=True)  # fmt: skip
    for label, result in results.items():
        placed = " ".join(str(k) for k in result.node_of)
        if result.survives < 0:
            verdict = "never exact, even with every node up"
        else:
            plural = "" if result.survives == 1 else "s"
            verdict = "survives no node loss" if result.survives == 0 else (
                f"survives any {result.survives} lost node{plural}"
            )  # fmt: skip
            if result.worst is not None:
                verdict += f"; losing {_node_list(result.worst)} breaks it"
        console.print(f"{label} (worker -> node: {placed}): {verdict}", highlight=False, soft_wrap=True)
    table = Table(box=box.SIMPLE_HEAD)
    table.add_column("lost nodes", justify="right")
    table.add_column("sets", justify="right")
    for label in results:
        table.add_column(f"{label}: decode exactly", justify="right")
        if not scheme.exact:
            table.add_column(f"{label}: mean residual", justify="right")
    for k in range(nodes):
        row = [str(k), str(comb(nodes, k))]
        for result in results.values():
            row.append(f"{result.shares[k]:.0%}")
            if not scheme.exact:
                row.append(f"{result.residuals[k]:.3g}")
        table.add_row(*row)
    console.print(table)


def print_node_loss_table(n: int, s: int, nodes: int, console: Console | None = None) -> None:
    """Every registered scheme that takes n workers and s stragglers, on ``nodes`` nodes: the node losses it
    survives under spread, pack and by_code, with the share of the next size's sets that still decode, and where
    by_code puts the workers."""
    from rich import box
    from rich.table import Table

    from gcbench.coding import SchemeParameterError, available_schemes, make_scheme
    from gcbench.coding.node_loss import by_code, survival
    from gcbench.models.topology import Topology

    _check_nodes(n, nodes)
    console = console or wide_console()
    table = Table(title=f"Whole-node losses survived: {n} workers on {nodes} nodes, s = {s}", box=box.SIMPLE_HEAD)
    for column in ("scheme", "spread", "pack", "by_code", "by_code's placement (worker -> node)"):
        table.add_column(column, no_wrap=column == "scheme")
    refused = []
    for name in available_schemes():
        try:
            scheme = make_scheme(name, n=n, s=s)
        except SchemeParameterError:
            refused.append(name)
            continue
        results = [survival(scheme, Topology(nodes=nodes, placement=p).node_of(n)) for p in ("spread", "pack")]
        results.append(by_code(scheme, nodes))
        same = [p for p, r in zip(("spread", "pack"), results, strict=False) if r.node_of == results[2].node_of]
        placed = f"= {same[0]}" if same else " ".join(map(str, results[2].node_of))
        table.add_row(name, *(_survived(r) for r in results), placed)
    console.print(table)
    refusing = f" Not for these n and s: {', '.join(refused)}." if refused else ""
    console.print("Each cell: the node losses survived whichever nodes are lost, and, with one more node lost, the "
                  "share of those sets that still decode exactly (an approximate code counts only its exact decodes)."
                  + refusing, highlight=False, soft_wrap=True)  # fmt: skip


def _survived(result) -> str:
    if result.survives < 0:
        return "never exact"
    more = result.survives + 1
    if more >= len(result.shares):
        return str(result.survives)
    return f"{result.survives} ({more} lost: {result.shares[more]:.0%})"


def _check_nodes(n: int, nodes: int) -> None:
    from gcbench.coding.node_loss import MAX_SETS
    from gcbench.models.topology import MAX_NODES

    if not 1 <= nodes <= min(n, MAX_NODES) or 2**nodes > MAX_SETS:
        most = min(n, MAX_NODES, MAX_SETS.bit_length() - 1)
        raise GcbenchError(f"--nodes {nodes}: give 1 to {most} nodes for {n} workers (every node holds one or more, "
                           f"and each of the 2^K sets of lost nodes is checked).")  # fmt: skip


def _node_list(nodes: tuple[int, ...]) -> str:
    """(0,) -> node 0; (0, 1) -> nodes 0 and 1; (0, 1, 2) -> nodes 0, 1 and 2."""
    if len(nodes) == 1:
        return f"node {nodes[0]}"
    return f"nodes {', '.join(map(str, nodes[:-1]))} and {nodes[-1]}"


def _explicit_placement(text: str, n: int, nodes: int) -> list[int]:
    """``--placement 0,1,2,0,1,2``: each worker's node, checked."""
    try:
        node_of = [int(part) for part in text.split(",")]
    except ValueError:
        raise GcbenchError(f"--placement {text}: give spread, pack, by_code, or each worker's node separated by "
                           "commas (0,1,2,0,1,2).") from None  # fmt: skip
    if len(node_of) != n:
        raise GcbenchError(f"--placement {text}: names {len(node_of)} workers' nodes, and there are {n} workers.")
    outside = [k for k in node_of if not 0 <= k < nodes]
    if outside:
        raise GcbenchError(f"--placement {text}: names node {outside[0]}, and the nodes are 0 to {nodes - 1}.")
    empty = sorted(set(range(nodes)) - set(node_of))
    if empty:
        raise GcbenchError(f"--placement {text}: puts no worker on node {empty[0]}; every node needs one.")
    return node_of


MAX_TABLE_PARTITIONS = 24  # columns a terminal shows legibly
EXACT_RESIDUAL = 1e-9  # a residual below this is rounding: the set decodes exactly


def _coefficient_table(scheme) -> Table:
    from rich import box
    from rich.table import Table

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
    if m != 1 or values.size != 1:
        return "■"
    value = float(values.flat[0])
    # (a held partition's coefficient too small for two decimals shows its size, not a 0.00 that reads as exact)
    return f"{value:.0e}" if value != 0 and abs(value) < 0.005 else f"{value:.2f}"


def _takes(cls) -> str:
    return ", ".join(f"--{p} (default {v})" for p, v in cls.defaults.items()) or "no extra options"
