"""Compute-time distributions (seconds per partition, before speed factors and straggling).

Every distribution samples with a numpy Generator, so one seed gives one stream.
Parameters are finite and each distribution's mean is at most MAX_SECONDS (a
Pareto without a mean, shape <= 1, bounds its median instead and needs shape >=
0.1), so no draw overflows to infinity.

What calibration needs of a distribution (gcbench/twin/fit.py) each one knows of
itself, or declares that it cannot: ``scaled(ratio)``, the distribution of ratio
times a draw (every one); ``frozen()``, its quantiles, CDF and mean (where
``freezable``); ``fit(x, censored)``, its maximum-likelihood parameters from
seconds of which some are lower bounds (where ``fittable``).
tests/test_distribution_conformance.py holds every registered one to these.
scipy is imported inside the methods that need it: `gcbench simulate` starts
without it.
"""

from __future__ import annotations

import math
from typing import Annotated, ClassVar, Literal

import numpy as np
from pydantic import Field, PositiveFloat, model_validator

from gcbench.models._config import MAX_SECONDS, Config, Seconds
from gcbench.models._registry import Registry

DISTRIBUTIONS = Registry("distribution", "distribution")


class _Bounded(Config):
    """A distribution whose typical size (its mean) stays below the duration ceiling."""

    # one sample after another from the generator, in C order: rows drawn a block at a time from one generator
    # are the rows of one draw of them all (tests/test_draw_blocks.py holds every distribution to it)
    blockwise: ClassVar[bool] = True
    fittable: ClassVar[bool] = False  # calibration may choose it: ``fit`` gives its parameters from measurements
    freezable: ClassVar[bool] = True  # ``frozen`` gives its quantiles, CDF and mean
    resamples: ClassVar[bool] = False  # it replays measurements rather than generalising beyond them

    def scaled(self, ratio: float) -> _Bounded:
        """The distribution of ``ratio`` times a draw of this one."""
        raise NotImplementedError

    def frozen(self):
        """Its quantiles (``ppf``), CDF (``cdf``) and ``mean()``, as a scipy frozen distribution does."""
        raise NotImplementedError(f"a {self.distribution} distribution cannot be evaluated")

    @classmethod
    def fit(cls, x: np.ndarray, censored: np.ndarray) -> dict:
        """Maximum-likelihood parameters from seconds ``x`` (``censored[i]``: x[i] is a lower bound), as a scenario
        dict; ValueError where these samples cannot give them."""
        raise NotImplementedError(f"{cls.__name__} cannot be fitted")

    def typical(self) -> tuple[str, float]:
        return "mean", self.mean()

    @model_validator(mode="after")
    def _below_ceiling(self):
        what, value = self.typical()
        if not value <= MAX_SECONDS:
            raise ValueError(
                f"{self.distribution}: its {what} must be at most {MAX_SECONDS:.0e} s; "
                f"these parameters give {value:.3g} s"
            )
        return self


@DISTRIBUTIONS.register
class Deterministic(_Bounded):
    """Always ``value`` seconds."""

    distribution: Literal["deterministic"]
    value: Seconds

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return np.full(size, self.value)

    def mean(self) -> float:
        return self.value

    def scaled(self, ratio: float) -> Deterministic:
        return self.model_copy(update={"value": self.value * ratio})

    def frozen(self):
        return Resampled(np.array([self.value]))


@DISTRIBUTIONS.register
class Exponential(_Bounded):
    """Exponential with rate ``rate`` (mean 1/rate)."""

    distribution: Literal["exponential"]
    rate: PositiveFloat

    fittable: ClassVar[bool] = True

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return rng.exponential(1.0 / self.rate, size)

    def mean(self) -> float:
        return _ratio(1.0, self.rate)

    def scaled(self, ratio: float) -> Exponential:
        return self.model_copy(update={"rate": self.rate / ratio})

    def frozen(self):
        from scipy import stats

        return stats.expon(scale=1 / self.rate)

    @classmethod
    def fit(cls, x: np.ndarray, censored: np.ndarray) -> dict:
        return {"distribution": "exponential", "rate": float(_events(censored) / x.sum())}


@DISTRIBUTIONS.register
class ShiftedExponential(_Bounded):
    """``shift`` plus an exponential with rate ``rate`` (Lee et al.; Tandon et al.)."""

    distribution: Literal["shifted_exponential"]
    shift: Seconds
    rate: PositiveFloat

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        times = rng.exponential(1.0 / self.rate, size)
        times += self.shift  # (in place: the same sums as shift + times, without a second array)
        return times

    fittable: ClassVar[bool] = True

    def mean(self) -> float:
        return self.shift + _ratio(1.0, self.rate)

    def scaled(self, ratio: float) -> ShiftedExponential:
        return self.model_copy(update={"shift": self.shift * ratio, "rate": self.rate / ratio})

    def frozen(self):
        from scipy import stats

        return stats.expon(loc=self.shift, scale=1 / self.rate)

    @classmethod
    def fit(cls, x: np.ndarray, censored: np.ndarray) -> dict:
        events = _events(censored)
        shift = float(x[~censored].min())  # the likelihood grows with the shift up to the smallest complete sample
        excess = np.maximum(x - shift, 0.0).sum()
        if excess <= 0:
            raise ValueError("no spread above the shift")
        return {"distribution": "shifted_exponential", "shift": shift, "rate": float((events - 1) / excess)}


@DISTRIBUTIONS.register
class Pareto(_Bounded):
    """Pareto (type I) with minimum ``scale`` and tail index ``shape``: heavy tails."""

    distribution: Literal["pareto"]
    scale: PositiveFloat
    shape: Annotated[float, Field(ge=0.1)]  # below, a draw can overflow to infinity

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return self.scale * (1.0 + rng.pareto(self.shape, size))

    def mean(self) -> float:
        return self.scale * self.shape / (self.shape - 1.0) if self.shape > 1 else float("inf")

    def typical(self) -> tuple[str, float]:
        """The mean, or the median 2^(1/shape) x scale when there is no mean."""
        return ("mean", self.mean()) if self.shape > 1 else ("median", _product(self.scale, 2.0 ** (1.0 / self.shape)))

    def scaled(self, ratio: float) -> Pareto:
        return self.model_copy(update={"scale": self.scale * ratio})

    def frozen(self):
        from scipy import stats

        return stats.pareto(self.shape, scale=self.scale)  # (Pareto I: numpy's Lomax plus one, times the scale)

    # not fittable: a tail index fitted to a few hundred jobs is mostly noise, and calibration judges a fit at the
    # order statistics a policy reads, where the lognormal and the Weibull already bend as far


@DISTRIBUTIONS.register
class LogNormal(_Bounded):
    """exp(N(mu, sigma^2)): ``mu`` and ``sigma`` of the underlying normal."""

    distribution: Literal["lognormal"]
    mu: float
    sigma: PositiveFloat

    fittable: ClassVar[bool] = True

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return rng.lognormal(self.mu, self.sigma, size)

    def mean(self) -> float:
        return _exp(self.mu + self.sigma**2 / 2)

    def scaled(self, ratio: float) -> LogNormal:
        return self.model_copy(update={"mu": self.mu + float(np.log(ratio))})

    def frozen(self):
        from scipy import stats

        return stats.lognorm(self.sigma, scale=np.exp(self.mu))

    @classmethod
    def fit(cls, x: np.ndarray, censored: np.ndarray) -> dict:
        from scipy import stats

        _events(censored)
        sigma, _, scale = stats.lognorm.fit(_censored_data(x, censored), floc=0)
        return {"distribution": "lognormal", "mu": float(np.log(scale)), "sigma": float(sigma)}


@DISTRIBUTIONS.register
class Weibull(_Bounded):
    """Weibull with ``shape`` k and ``scale`` lambda."""

    distribution: Literal["weibull"]
    shape: PositiveFloat
    scale: PositiveFloat

    fittable: ClassVar[bool] = True

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return self.scale * rng.weibull(self.shape, size)

    def mean(self) -> float:
        return _product(self.scale, _exp(math.lgamma(1.0 + 1.0 / self.shape)))

    def scaled(self, ratio: float) -> Weibull:
        return self.model_copy(update={"scale": self.scale * ratio})

    def frozen(self):
        from scipy import stats

        return stats.weibull_min(self.shape, scale=self.scale)

    @classmethod
    def fit(cls, x: np.ndarray, censored: np.ndarray) -> dict:
        from scipy import stats

        _events(censored)
        shape, _, scale = stats.weibull_min.fit(_censored_data(x, censored), floc=0)
        return {"distribution": "weibull", "shape": float(shape), "scale": float(scale)}


@DISTRIBUTIONS.register
class Empirical(_Bounded):
    """Resample, with replacement, from measured ``samples`` (seconds)."""

    distribution: Literal["empirical"]
    samples: list[Seconds] = Field(min_length=1)

    fittable: ClassVar[bool] = True
    resamples: ClassVar[bool] = True
    KEPT: ClassVar[int] = 200  # quantiles a fit keeps (the scenario file stays readable)

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return rng.choice(np.asarray(self.samples, dtype=float), size=size)

    def mean(self) -> float:
        return float(np.mean(self.samples))

    def scaled(self, ratio: float) -> Empirical:
        return self.model_copy(update={"samples": [v * ratio for v in self.samples]})

    def frozen(self):
        return Resampled(np.asarray(self.samples, dtype=float))

    @classmethod
    def fit(cls, x: np.ndarray, censored: np.ndarray) -> dict:
        """The measurements themselves (``KEPT`` of their quantiles where there are more); never censored ones,
        which resampling would replay as if complete."""
        if censored.any():
            raise ValueError("resampling cannot replay censored measurements")
        probabilities = (np.arange(cls.KEPT) + 0.5) / cls.KEPT
        values = np.quantile(x, probabilities) if len(x) > cls.KEPT else np.sort(x)
        return {"distribution": "empirical", "samples": [float(v) for v in values]}


class Resampled:
    """The quantiles (numpy's inverted CDF), CDF and mean of resampling ``samples``."""

    def __init__(self, samples: np.ndarray) -> None:
        self.samples = np.sort(samples)

    def ppf(self, p):
        return np.quantile(self.samples, p, method="inverted_cdf")

    def cdf(self, x):
        return np.searchsorted(self.samples, x, side="right") / len(self.samples)

    def mean(self) -> float:
        return float(self.samples.mean())


def _events(censored: np.ndarray) -> int:
    """The complete samples, at least two (ValueError otherwise)."""
    events = int(np.count_nonzero(~censored))
    if events < 2:
        raise ValueError("too few complete samples")
    return events


def _censored_data(x: np.ndarray, censored: np.ndarray):
    from scipy import stats

    return stats.CensoredData.right_censored(x, censored) if censored.any() else x


def _ratio(a: float, b: float) -> float:
    try:
        return a / b
    except (OverflowError, ZeroDivisionError):
        return float("inf")


def _product(a: float, b: float) -> float:
    return a * b if math.isfinite(a * b) else float("inf")


def _exp(x: float) -> float:
    try:
        return math.exp(x)
    except OverflowError:
        return float("inf")


class Component(Config):
    """One part of a mixture: its weight and its distribution."""

    weight: PositiveFloat
    of: SimpleDistribution


@DISTRIBUTIONS.register
class Mixture(Config):
    """Draw from component i with probability weight_i / sum(weights)."""

    distribution: Literal["mixture"]
    components: list[Component] = Field(min_length=1)
    blockwise: ClassVar[bool] = False  # every choice first, then each component's samples: the size decides the order

    def _probabilities(self) -> np.ndarray:
        w = np.array([c.weight for c in self.components])
        return w / w.sum()

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        which = rng.choice(len(self.components), size=size, p=self._probabilities())
        out = np.empty(np.shape(which))
        for i, component in enumerate(self.components):
            draws = component.of.sample(rng, size)
            out = np.where(which == i, draws, out)
        return out

    fittable: ClassVar[bool] = False  # (a mixture is a modelling choice: calibration fits one family per part)
    freezable: ClassVar[bool] = False  # (its quantiles have no closed form: calibration never reads them)

    def mean(self) -> float:
        return float(sum(p * c.of.mean() for p, c in zip(self._probabilities(), self.components, strict=True)))

    def scaled(self, ratio: float) -> Mixture:
        return self.model_copy(update={"components": [c.model_copy(update={"of": c.of.scaled(ratio)})
                                                      for c in self.components]})  # fmt: skip

    def frozen(self):
        raise NotImplementedError("a mixture distribution cannot be evaluated")

    @model_validator(mode="after")
    def _finite_weights(self) -> Mixture:
        if not np.isfinite(sum(c.weight for c in self.components)):
            raise ValueError("mixture weights must be finite")
        return self


# a mixture's components are simple: a mixture of mixtures is one mixture
SimpleDistribution = DISTRIBUTIONS.union(exclude=["mixture"])
Distribution = DISTRIBUTIONS.union()
Component.model_rebuild()
Mixture.model_rebuild()
