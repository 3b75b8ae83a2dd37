"""Styles stay distinguishable with every scheme in one figure (scenarios/scheme_family.yaml draws 13 variants),
and a scheme the style module has never heard of (a newly registered one) still gets a stable look of its own."""

from __future__ import annotations

import os
import subprocess
import sys

import matplotlib.colors as mcolors
import pandas as pd
import pytest

from gcbench.coding import available_schemes
from gcbench.plot.style import SCHEMES, SHARED_COLOUR, scheme_colour, variant_styles

UNKNOWN = ("zz_new_code", "another_new_code", "x")  # names no registry or style list holds
CURATED = (*SCHEMES, *SHARED_COLOUR)


def one_variant_each(names) -> pd.DataFrame:
    return pd.DataFrame({"variant": [f"{n} variant" for n in names], "scheme": list(names), "policy": "decodable"})


def test_an_uncurated_scheme_gets_a_valid_colour_no_curated_scheme_has():
    """Not a hash into the curated palette: that put frc, bgc, expander, sgc, bcc and heterogeneous on three
    colours, and a new scheme would wear an old one's."""
    curated = {tuple(scheme_colour(name)) for name in CURATED}
    for name in UNKNOWN:
        colour = scheme_colour(name)
        assert mcolors.is_color_like(colour) and all(0 <= c <= 1 for c in colour)
        assert tuple(colour) not in curated, name


@pytest.mark.slow  # (seconds: the everyday lane keeps its cheaper siblings)
def test_an_uncurated_schemes_colour_is_the_same_in_every_process():
    """crc32 of the name, not Python's hash(), which a fresh process salts differently."""
    probe = f"from gcbench.plot.style import scheme_colour; print([tuple(scheme_colour(n)) for n in {UNKNOWN!r}])"
    seen = {
        subprocess.run(
            [sys.executable, "-c", probe],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, "PYTHONHASHSEED": seed},
        ).stdout
        for seed in ("1", "2")
    }
    assert seen == {f"{[tuple(scheme_colour(n)) for n in UNKNOWN]}\n"}


@pytest.mark.parametrize("extra", [(), UNKNOWN])
def test_no_two_schemes_in_one_figure_look_alike(extra):
    styles = variant_styles(one_variant_each([*available_schemes(), *extra]))
    looks = {(tuple(s["color"]), str(s["linestyle"]), s["marker"]) for s in styles.values()}
    assert len(looks) == len(styles)


def test_a_curated_colour_is_shared_by_at_most_two_schemes():
    colours = pd.Series([tuple(scheme_colour(n)) for n in CURATED]).value_counts()
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


def test_a_figure_draws_an_uncurated_scheme_in_its_colour():
    from gcbench.plot.figures import training_curves

    fig = training_curves(trained({"FR": "fr", "new": UNKNOWN[0]}), None, "sim")
    colours = {tuple(mcolors.to_rgb(line.get_color())) for ax in fig.axes for line in ax.get_lines()}
    assert tuple(scheme_colour(UNKNOWN[0])) in colours and tuple(scheme_colour("fr")) in colours
