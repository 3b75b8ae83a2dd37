"""Every registry documents its members the same way, and every name list is derived from a registry.

Like Hypothesis's tests/nocover/test_argument_validation.py, these iterate the
registries, so a newly registered member is checked without touching this file.
"""

import re
import typing

import pytest

from gcbench.coding import available_schemes, scheme_class
from gcbench.compression import COMPRESSORS, Compression
from gcbench.models.distributions import DISTRIBUTIONS, Distribution, SimpleDistribution
from gcbench.models.failures import FAILURES, Failures
from gcbench.models.straggling import STRAGGLING, Straggling
from gcbench.policies import POLICIES, Policy
from gcbench.scenario.loading import _TAGS

FACTS = ("tolerates", "load", "upload", "decoding")
REGISTRIES = {"distribution": DISTRIBUTIONS, "straggling": STRAGGLING, "failures": FAILURES, "policy": POLICIES,
              "compressor": COMPRESSORS}  # fmt: skip
UNIONS = {"distribution": Distribution, "straggling": Straggling, "failures": Failures, "policy": Policy,
          "compressor": Compression}  # fmt: skip
MEMBERS = [(kind, name) for kind, registry in REGISTRIES.items() for name in registry.names()]
SNAKE_CASE = re.compile(r"[a-z][a-z0-9]*(_[a-z0-9]+)*")


@pytest.mark.parametrize("name", available_schemes())
def test_docstring_block_and_facts_agree(name):
    cls = scheme_class(name)
    assert set(cls.facts) == set(FACTS), f"{name} must declare {FACTS}"
    doc = cls.__doc__ or ""
    for fact in FACTS + ("reference",):
        assert f"- {fact}:" in doc, f"{name}'s docstring lacks its '{fact}' line"
    assert cls.reference, f"{name} needs a reference"


@pytest.mark.parametrize("name", available_schemes())
def test_a_schemes_test_parameters_name_only_what_it_declares(name):
    cls = scheme_class(name)
    assert SNAKE_CASE.fullmatch(name) and all(SNAKE_CASE.fullmatch(key) for key in cls.defaults)
    assert set(cls.hypothesis_ranges) <= set(cls.defaults), f"{name} draws a parameter it does not declare"
    for n in range(1, 7):
        for s, params in cls.valid_parameter_sets(n):
            assert 0 <= s < n and set(params) <= set(cls.defaults), f"{name}: ({s}, {params}) at n={n}"


@pytest.mark.parametrize(("kind", "name"), MEMBERS, ids=[f"{kind}-{name}" for kind, name in MEMBERS])
def test_every_registered_member_has_a_snake_case_name_and_a_docstring(kind, name):
    cls = REGISTRIES[kind].get(name)
    assert SNAKE_CASE.fullmatch(name), f"{kind} {name!r} must be snake_case"
    # its own docstring (pydantic would show a base's), whose first paragraph is a sentence
    summary = (vars(cls).get("__doc__") or "").strip().split("\n\n")[0]
    assert summary.endswith("."), f"{kind} {name} ({cls.__name__}) needs a docstring saying what it does"


@pytest.mark.parametrize("kind", REGISTRIES)
def test_the_yaml_union_is_the_registry(kind):
    union = typing.get_args(UNIONS[kind])[0]
    assert list(typing.get_args(union)) == REGISTRIES[kind].classes()


def test_a_mixture_component_is_any_distribution_but_a_mixture():
    members = typing.get_args(typing.get_args(SimpleDistribution)[0])
    assert list(members) == [DISTRIBUTIONS.get(name) for name in DISTRIBUTIONS.names() if name != "mixture"]


def test_error_locations_drop_exactly_the_registered_names():
    assert _TAGS == {name for _, name in MEMBERS}
