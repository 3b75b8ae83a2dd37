"""Fit a measured part (a sample of seconds, some right-censored) with a registered distribution, chosen by how
well it predicts the order statistics the policies read (docs/calibration.md, "Fit").

The candidates are the registered distributions that declare themselves fittable, each fitting, scaling and
evaluating itself (gcbench/models/distributions.py); nothing here switches on a distribution's name.

Each candidate family is fitted by maximum likelihood, censored jobs counting as "at least this long" (closed
forms for the exponentials; scipy's censored fit for the lognormal and the Weibull). A family is judged by 2-fold
cross-validation over the iterations: fitted on one half, its quantiles at the order statistics' median ranks
(the median of the k-th fastest of n, k = 1..n) and its mean are compared with the other half's (Kaplan-Meier
where jobs were censored); the score is the largest relative error. The family with the smallest score is fitted
again on every sample. ``empirical`` (resampling the measurements) competes only where nothing was censored,
and wins only with a score below 0.8 of the best family's (a family generalises beyond the measured range).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import stats

from gcbench.errors import GcbenchError
from gcbench.models.distributions import DISTRIBUTIONS

# the registered distributions that fit themselves, in the order they are tried (a tie goes to the first)
FAMILIES = tuple(name for name in DISTRIBUTIONS.names() if getattr(DISTRIBUTIONS.get(name), "fittable", False))
MIN_SAMPLES = 8
EMPIRICAL_MARGIN = 0.8  # a resampling fit is chosen only with a score below this fraction of the best family's


@dataclass(frozen=True)
class Fit:
    """A fitted part: the scenario's distribution (a dict its schema reads) and how it was judged."""

    distribution: dict
    score: float  # cross-validated largest relative error over the order statistics and the mean
    scores: dict[str, float]  # every family's
    samples: int
    censored: int
    ks: float  # Kolmogorov-Smirnov statistic of the fit against the uncensored samples
    mean: float  # the samples' mean (Kaplan-Meier's where censored)

    def comment(self, what: str, source: str) -> str:
        others = ", ".join(f"{name} {score:.3f}" for name, score in sorted(self.scores.items(), key=lambda kv: kv[1]))
        censored = f", {self.censored} censored" if self.censored else ""
        return (
            f"{what}: {self.distribution['distribution']} fitted to {self.samples} samples{censored} of {source}; "
            f"order-statistic error (2-fold CV) {self.score:.3f} [{others}]; KS {self.ks:.3f}; "
            f"measured mean {self.mean:.4g} s"
        )


def fit_part(samples, censored=None, n: int = 1, families=FAMILIES, what: str = "a part") -> Fit:
    """The best of ``families`` for these seconds (``censored[i]``: sample i is a lower bound), judged at the order
    statistics of ``n`` draws (n = 1: the median and p90)."""
    x = np.asarray(samples, dtype=float)
    c = np.zeros(len(x), dtype=bool) if censored is None else np.asarray(censored, dtype=bool)
    keep = np.isfinite(x) & (x > 0)
    x, c = x[keep], c[keep]
    if np.count_nonzero(~c) < MIN_SAMPLES:
        raise GcbenchError(
            f"too few measurements of {what} to fit ({np.count_nonzero(~c)} complete; at least {MIN_SAMPLES})."
        )
    if np.ptp(x[~c]) == 0 and not c.any():
        value = float(x[0])
        return Fit(
            {"distribution": "deterministic", "value": value}, 0.0, {"deterministic": 0.0}, len(x), 0, 0.0, value
        )
    ranks = order_statistic_ranks(n)
    halves = np.arange(len(x)) % 2 == 0
    scores = {}
    for family in families:
        try:  # (a family that cannot take these samples, empirical with censored ones say, says so by ValueError)
            errors = [
                _error(fitted(family, x[train], c[train]), x[~train], c[~train], ranks) for train in (halves, ~halves)
            ]
        except (ValueError, FloatingPointError, RuntimeError):
            continue
        scores[family] = float(np.mean(errors))
    if not scores:
        raise GcbenchError(f"no distribution could be fitted to the measurements of {what}.")
    best = min(scores, key=scores.get)
    parametric = {name: score for name, score in scores.items() if not DISTRIBUTIONS.get(name).resamples}
    if best not in parametric and parametric and scores[best] > EMPIRICAL_MARGIN * min(parametric.values()):
        best = min(parametric, key=parametric.get)  # resampling wins only where no family comes close
    distribution = fitted(best, x, c)
    return Fit(distribution, scores[best], scores, len(x), int(c.sum()), _ks(distribution, x, c), measured_mean(x, c))


def order_statistic_ranks(n: int) -> np.ndarray:
    """The probabilities at which to judge a fit: the median rank of each order statistic of n draws, the
    median of Beta(k, n - k + 1); for one draw, its median and p90 (a p99 of half the samples is their noise)."""
    if n <= 1:
        return np.array([0.5, 0.9])
    k = np.arange(1, n + 1)
    return stats.beta.median(k, n - k + 1)


def fitted(family: str, x: np.ndarray, c: np.ndarray) -> dict:
    """Maximum-likelihood parameters of ``family`` (censored samples as lower bounds), as a scenario dict."""
    cls = DISTRIBUTIONS.get(family)
    if not getattr(cls, "fittable", False):
        raise ValueError(f"a {family} distribution cannot be fitted")
    return cls.fit(x, c)


def model_of(distribution: dict):
    """The registered distribution a scenario dict describes."""
    return DISTRIBUTIONS.get(distribution["distribution"]).model_validate(distribution)


def scaled(distribution: dict, ratio: float) -> dict:
    """The distribution of ``ratio`` times a draw of ``distribution`` (every registered one scales)."""
    return model_of(distribution).scaled(ratio).model_dump(mode="json", exclude_none=True)


def frozen(distribution: dict):
    """The quantiles, CDF and mean of a scenario dict's distribution (ValueError where it cannot give them)."""
    model = model_of(distribution)
    if not getattr(model, "freezable", True):
        raise ValueError(f"cannot evaluate a {distribution['distribution']} distribution")
    return model.frozen()


def measured_quantiles(x: np.ndarray, c: np.ndarray, p: np.ndarray) -> np.ndarray:
    """Quantiles of the measurements at ``p`` (Kaplan-Meier's where censored; NaN beyond what it can tell)."""
    if not c.any():
        return np.quantile(x, p, method="inverted_cdf")
    survival = stats.ecdf(stats.CensoredData.right_censored(x, c)).sf
    cdf = 1.0 - survival.probabilities
    index = np.searchsorted(cdf, np.asarray(p) - 1e-12, side="left")
    out = np.full(len(np.atleast_1d(p)), np.nan)
    inside = index < len(cdf)
    out[inside] = survival.quantiles[index[inside]]
    return out


def measured_mean(x: np.ndarray, c: np.ndarray) -> float:
    """The mean of the measurements (Kaplan-Meier's restricted mean where censored)."""
    if not c.any():
        return float(x.mean())
    survival = stats.ecdf(stats.CensoredData.right_censored(x, c)).sf
    edges = np.concatenate([[0.0], survival.quantiles])
    heights = np.concatenate([[1.0], survival.probabilities])[:-1]
    return float(np.sum(np.diff(edges) * heights))


def _error(distribution: dict, x: np.ndarray, c: np.ndarray, ranks: np.ndarray) -> float:
    """Largest relative error of the fit's quantiles at ``ranks`` (where the held-out samples tell them) and of
    its mean (where none of them was censored)."""
    model = frozen(distribution)
    measured = measured_quantiles(x, c, ranks)
    known = np.isfinite(measured) & (measured > 0)
    errors = list(np.abs(model.ppf(ranks[known]) - measured[known]) / measured[known])
    if not c.any():
        errors.append(abs(model.mean() - x.mean()) / x.mean())
    return float(max(errors)) if errors else np.inf


def _ks(distribution: dict, x: np.ndarray, c: np.ndarray) -> float:
    """Kolmogorov-Smirnov statistic of the fit against the measurements' CDF (Kaplan-Meier's where censored, over
    the range it tells)."""
    model = frozen(distribution)
    if not c.any():
        ordered = np.sort(x)
        cdf = np.asarray(model.cdf(ordered), dtype=float)
        steps = np.arange(1, len(ordered) + 1) / len(ordered)
        return float(max(np.max(steps - cdf), np.max(cdf - (steps - 1 / len(ordered)))))
    survival = stats.ecdf(stats.CensoredData.right_censored(x, c)).sf
    after = 1.0 - survival.probabilities  # the measured CDF at and just after each event time
    before = np.concatenate([[0.0], after[:-1]])
    cdf = np.asarray(model.cdf(survival.quantiles), dtype=float)
    return float(max(np.max(np.abs(after - cdf)), np.max(np.abs(before - cdf))))
