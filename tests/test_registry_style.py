"""Every registered scheme documents itself the same way (STYLE.md: one fixed docstring block)."""

import pytest

from gcbench.coding import available_schemes, scheme_class

FACTS = ("tolerates", "load", "upload", "decoding")


@pytest.mark.parametrize("name", available_schemes())
def test_docstring_block_and_facts_agree(name):
    cls = scheme_class(name)
    assert set(cls.facts) == set(FACTS), f"{name} must declare {FACTS}"
    doc = cls.__doc__ or ""
    for fact in FACTS + ("reference",):
        assert f"- {fact}:" in doc, f"{name}'s docstring lacks its '{fact}' line"
    assert cls.reference, f"{name} needs a reference"
