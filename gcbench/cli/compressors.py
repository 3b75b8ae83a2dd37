"""`gcbench compressors`: every registered compressor with its parameters and what it claims."""

from __future__ import annotations

from gcbench.cli.configs import config_parameters, summary_line
from gcbench.cli.console import user_errors, wide_console

LISTED_LENGTH = 1_000_000  # the gradient length the listing states bits per parameter at
COSTS = ("compress_cost", "decompress_cost")  # every compressor's, said once below the table


@user_errors
def compressors() -> None:
    """List the registered compressors of workers' messages, with their parameters and properties."""
    from rich import box
    from rich.table import Table

    from gcbench.compression import COMPRESSORS

    console = wide_console()
    table = Table(title="Compressors", box=box.SIMPLE_HEAD)
    for column in ("name", "parameters", "bits/param", "unbiased", "linear", "error feedback", "reference",
                   "what it does"):  # fmt: skip
        table.add_column(column, no_wrap=column in ("name", "parameters", "bits/param", "unbiased", "linear"))
    for name in COMPRESSORS.names():
        cls = COMPRESSORS.get(name)
        compressor = cls()
        parameters = [line for line in config_parameters(cls, COMPRESSORS.tag) if line.split(":")[0] not in COSTS]
        yes = lambda flag: "yes" if flag else "no"  # noqa: E731
        table.add_row(
            name,
            "\n".join(parameters),
            f"{compressor.bits_per_parameter(LISTED_LENGTH):.3g}",
            yes(compressor.unbiased),
            yes(compressor.linear),
            yes(compressor.feedback),
            cls.reference,
            summary_line(cls),
        )
    console.print(table)
    console.print(
        f"bits/param, unbiased, linear and error feedback with the defaults, at {LISTED_LENGTH:,} parameters; linear: "
        "compressing commutes with a linear decode (the decoded gradient is the compressed exact one)."
    )
    console.print(
        "Every compressor also takes compress_cost and decompress_cost (seconds per parameter the simulator "
        "charges a message; default 0). In a scenario: compression: {name: topk, ratio: 0.01}, scenario-wide or "
        "per variant (docs/compression.md)."
    )
