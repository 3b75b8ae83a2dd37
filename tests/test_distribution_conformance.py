"""Every registered distribution scales, evaluates and fits itself as calibration needs (gcbench/twin/fit.py), or
declares that it cannot: so adding one cannot silently break calibration. A registered distribution without an
example here fails the first test."""

from __future__ import annotations

import numpy as np
import pytest

from gcbench.models.distributions import DISTRIBUTIONS
from gcbench.twin.fit import FAMILIES, fitted, frozen, model_of, scaled

EXAMPLES = {
    "deterministic": {"distribution": "deterministic", "value": 0.2},
    "exponential": {"distribution": "exponential", "rate": 8.0},
    "shifted_exponential": {"distribution": "shifted_exponential", "shift": 0.05, "rate": 20.0},
    "pareto": {"distribution": "pareto", "scale": 0.1, "shape": 2.5},
    "lognormal": {"distribution": "lognormal", "mu": -2.0, "sigma": 0.4},
    "weibull": {"distribution": "weibull", "shape": 1.7, "scale": 0.15},
    "empirical": {"distribution": "empirical", "samples": [0.1, 0.12, 0.15, 0.2, 0.35]},
    "mixture": {"distribution": "mixture", "components": [
        {"weight": 3, "of": {"distribution": "exponential", "rate": 10.0}},
        {"weight": 1, "of": {"distribution": "deterministic", "value": 1.0}}]},
}  # fmt: skip
NAMES = DISTRIBUTIONS.names()


def test_every_registered_distribution_has_an_example_here():
    assert set(NAMES) == set(EXAMPLES), "add the new distribution to EXAMPLES: the conformance tests need one"


@pytest.mark.parametrize("name", NAMES)
def test_scaling_scales_every_draw(name):
    model, ratio = model_of(EXAMPLES[name]), 2.5
    bigger = model_of(scaled(EXAMPLES[name], ratio))
    draws, scaled_draws = model.sample(np.random.default_rng(3), 2000), bigger.sample(np.random.default_rng(3), 2000)
    np.testing.assert_allclose(scaled_draws, ratio * draws, rtol=1e-12)
    assert bigger.mean() == pytest.approx(ratio * model.mean(), rel=1e-12)


@pytest.mark.parametrize("name", NAMES)
def test_a_freezable_distribution_gives_the_quantiles_its_draws_have(name):
    model = model_of(EXAMPLES[name])
    if not model.freezable:
        with pytest.raises(ValueError, match="cannot evaluate"):
            frozen(EXAMPLES[name])
        return
    evaluated = frozen(EXAMPLES[name])
    draws = np.sort(model.sample(np.random.default_rng(4), 40_000))
    assert float(evaluated.mean()) == pytest.approx(model.mean(), rel=1e-9)
    cdf = np.asarray(evaluated.cdf(draws), dtype=float)
    steps = np.searchsorted(draws, draws, side="right") / len(draws)  # the draws' own CDF at each draw (ties too)
    assert np.max(np.abs(steps - cdf)) < 0.02  # Kolmogorov-Smirnov: its draws follow its CDF
    p = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(evaluated.ppf(p), np.quantile(draws, p, method="inverted_cdf"), rtol=0.05)


@pytest.mark.parametrize("name", NAMES)
def test_a_fittable_distribution_recovers_itself_and_the_others_say_they_cannot(name):
    cls = DISTRIBUTIONS.get(name)
    assert (name in FAMILIES) == cls.fittable  # calibration tries exactly the ones that fit themselves
    draws = model_of(EXAMPLES[name]).sample(np.random.default_rng(5), 5000)
    none = np.zeros(len(draws), dtype=bool)
    if not cls.fittable:
        with pytest.raises(ValueError, match="cannot be fitted"):
            fitted(name, draws, none)
        return
    again = frozen(fitted(name, draws, none))
    truth = frozen(EXAMPLES[name])
    p = np.array([0.1, 0.5, 0.9])
    np.testing.assert_allclose(again.ppf(p), truth.ppf(p), rtol=0.05)
    # censored at the 80th percentile: a family that fits censored samples still recovers its median
    cut = np.quantile(draws, 0.8)
    censored = draws > cut
    try:
        again = frozen(fitted(name, np.minimum(draws, cut), censored))
    except ValueError as refusal:  # (resampling cannot replay a lower bound, and says so)
        assert cls.resamples and "censored" in str(refusal)
        return
    assert float(again.ppf(0.5)) == pytest.approx(float(truth.ppf(0.5)), rel=0.05)
