"""Compute-time distributions (seconds per partition, before speed factors and straggling).

Every distribution samples with a numpy Generator, so one seed gives one stream.
Parameters are finite and each distribution's mean is at most MAX_SECONDS (a
Pareto without a mean, shape <= 1, bounds its median instead and needs shape >=
0.1), so no draw overflows to infinity.
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


@DISTRIBUTIONS.register
class Exponential(_Bounded):
    """Exponential with rate ``rate`` (mean 1/rate)."""

    distribution: Literal["exponential"]
    rate: PositiveFloat

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return rng.exponential(1.0 / self.rate, size)

    def mean(self) -> float:
        return _ratio(1.0, self.rate)


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

    def mean(self) -> float:
        return self.shift + _ratio(1.0, self.rate)


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


@DISTRIBUTIONS.register
class LogNormal(_Bounded):
    """exp(N(mu, sigma^2)): ``mu`` and ``sigma`` of the underlying normal."""

    distribution: Literal["lognormal"]
    mu: float
    sigma: PositiveFloat

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return rng.lognormal(self.mu, self.sigma, size)

    def mean(self) -> float:
        return _exp(self.mu + self.sigma**2 / 2)


@DISTRIBUTIONS.register
class Weibull(_Bounded):
    """Weibull with ``shape`` k and ``scale`` lambda."""

    distribution: Literal["weibull"]
    shape: PositiveFloat
    scale: PositiveFloat

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return self.scale * rng.weibull(self.shape, size)

    def mean(self) -> float:
        return _product(self.scale, _exp(math.lgamma(1.0 + 1.0 / self.shape)))


@DISTRIBUTIONS.register
class Empirical(_Bounded):
    """Resample, with replacement, from measured ``samples`` (seconds)."""

    distribution: Literal["empirical"]
    samples: list[Seconds] = Field(min_length=1)

    def sample(self, rng: np.random.Generator, size) -> np.ndarray:
        return rng.choice(np.asarray(self.samples, dtype=float), size=size)

    def mean(self) -> float:
        return float(np.mean(self.samples))


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

    def mean(self) -> float:
        return float(sum(p * c.of.mean() for p, c in zip(self._probabilities(), self.components, strict=True)))

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
