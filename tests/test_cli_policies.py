"""`gcbench policies`: every registered policy, with its parameters, from the registry."""

import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.models import Registry
from gcbench.policies import POLICIES

runner = CliRunner()


def table() -> str:
    result = runner.invoke(app, ["policies"])
    assert result.exit_code == 0, result.output
    return result.output


def row(output: str, name: str) -> str:
    """The table row that starts with ``name``, with its continuation lines."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.split()[:1] == [name])
    end = next((i for i in range(start + 1, len(lines)) if lines[i][:20].strip()), len(lines))
    return " ".join(" ".join(lines[start:end]).split())


@pytest.mark.parametrize("name", POLICIES.names())
def test_every_registered_policy_is_listed_with_its_description(name):
    cls = POLICIES.get(name)
    listed = row(table(), name)
    first_words = " ".join(cls.__doc__.split()[:4]).replace("``", "")
    assert first_words in listed
    assert listed.split()[1] == ("yes" if cls.synchronous else "no")


def test_parameters_show_their_types_bounds_and_defaults():
    output = table()
    fastest_k = row(output, "fastest_k")
    assert "k: int >= 1 (required)" in fastest_k and "fallback: wait | approximate (default wait)" in fastest_k
    assert "deadline: float > 0 (required)" in row(output, "deadline")
    assert row(output, "decodable").split()[1:2] == ["yes"]


@pytest.mark.parametrize("name", ["k_async", "k_batch_async", "async"])
def test_the_asynchronous_policies_internal_switch_is_not_listed_as_a_parameter(name):
    """``distinct`` is each class's mode (k_async: distinct workers; k_batch_async: any), not a user's choice."""
    listed = row(table(), name)
    assert "distinct:" not in listed
    assert ("k: int >= 1 (required)" in listed) == (name != "async")


def test_a_newly_registered_policy_is_listed_without_touching_the_cli(monkeypatch):
    from typing import ClassVar, Literal

    from gcbench.models import Config, internal

    scratch = Registry("policy", "name")
    for cls in POLICIES.classes():
        scratch.register(cls)

    class EveryOther(Config):
        """Stop at every other message (a test double)."""

        name: Literal["every_other"] = "every_other"
        offset: int = 0
        every: int = internal(2)  # the class's own rule: not a parameter to list
        synchronous: ClassVar[bool] = True

    scratch.register(EveryOther)
    monkeypatch.setattr("gcbench.policies.POLICIES", scratch)  # the table reads it when it prints
    listed = row(table(), "every_other")
    assert "offset: int (default 0) Stop at every other message (a test double)." in listed
    assert "every:" not in listed
