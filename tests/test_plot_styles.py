"""Styles stay distinguishable with every scheme in one figure (scenarios/scheme_family.yaml draws 13 variants)."""

from __future__ import annotations

import pandas as pd

from gcbench.coding import available_schemes
from gcbench.plot.style import SCHEMES, SHARED_COLOUR, scheme_colour, variant_styles


def every_scheme_once() -> pd.DataFrame:
    names = available_schemes()
    return pd.DataFrame({"variant": [f"{n} variant" for n in names], "scheme": names, "policy": "decodable"})


def test_every_registered_scheme_has_a_chosen_colour():
    """Not a hashed one: a hash put frc, bgc, expander, sgc, bcc and heterogeneous on three colours."""
    assert set(available_schemes()) <= set(SCHEMES) | set(SHARED_COLOUR)


def test_no_two_schemes_in_one_figure_look_alike():
    styles = variant_styles(every_scheme_once())
    looks = {(tuple(s["color"]), str(s["linestyle"]), s["marker"]) for s in styles.values()}
    assert len(looks) == len(styles)


def test_a_colour_is_shared_by_at_most_two_schemes():
    colours = pd.Series([tuple(scheme_colour(n)) for n in available_schemes()]).value_counts()
    assert colours.max() <= 2


def test_a_pipelined_code_has_its_base_codes_colour_and_another_dash():
    frame = pd.DataFrame(
        {"variant": ["FR", "pipelined FR"], "scheme": ["fr", "pipelined_fr"], "policy": ["decodable"] * 2}
    )
    fr, pipelined = variant_styles(frame).values()
    assert fr["color"] == pipelined["color"]
    assert (fr["linestyle"], fr["marker"]) != (pipelined["linestyle"], pipelined["marker"])


def trained(variants: dict[str, str]) -> pd.DataFrame:
    """Ten iterations per variant, accuracy every fifth, each variant at its own speed (so no curve hides another)."""
    rows = []
    for rank, (variant, scheme) in enumerate(variants.items()):
        for i in range(10):
            accuracy = 0.1 * i + 0.01 * rank if i % 5 == 4 else float("nan")
            loss = 2.0 - 0.1 * i - 0.01 * rank
            row = {"variant": variant, "scheme": scheme, "policy": "decodable", "seed": 0, "iteration": i}
            rows.append({**row, "end": (i + 1) * (1 + rank), "loss": loss, "accuracy": accuracy})
    return pd.DataFrame(rows)


def test_the_training_legend_shows_the_markers_that_tell_a_shared_colour_apart():
    from gcbench.plot.figures import training_curves

    fig = training_curves(trained({"FR": "fr", "pipelined FR": "pipelined_fr"}), None, "sim")
    handles = fig.legends[0].legend_handles
    assert [h.get_marker() for h in handles] == ["o", "s"]
