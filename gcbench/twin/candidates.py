"""The candidates `gcbench recommend` weighs (docs/recommend.md): every registered scheme, s and policy that
applies to a scenario's workers, each a variant the scenario's checks accept.

- ``uncoded`` with ``wait_all`` (the reference every speedup is over) and, as approximate candidates, with
  ``fastest_k`` for k = n − 1 down to n − max_s;
- every other scheme at s = 1 .. max_s with ``decodable``, its own parameters at their defaults except a load
  parameter ``d``, set to s + 1 so an approximate code computes what an exact one at s does;
- with training in the simulator, also ``k_async`` at those k (its updates are not iterations, so only a time to
  accuracy ranks it);
- where the scenario has a topology, each of those at each placement (spread, pack, by_code), labelled
  ``name @placement``: a code is a choice of scheme, s and where its workers run;
- a sequential scheme (``sr_sgc``, ``m_sgc``), where ``schemes`` names it, at every admissible (B, W, lambda)
  with B <= max_burst, W <= max_window (default ``MAX_BURST``, ``MAX_WINDOW``) and its s (sr_sgc's s' =
  ceil(B lambda / (W - 1 + B)), m_sgc's lambda) at most max_s (the paper's search, on the scenario's own
  cluster).

A scheme whose constraints exclude a combination (``fr`` needs (s + 1) | n, ``bcc`` b(s + 1) <= n, ...) is left
out of it, as is one the scenario's checks refuse.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from gcbench.coding import available_schemes, scheme_class
from gcbench.errors import GcbenchError
from gcbench.policies import POLICIES, Decodable, WaitAll
from gcbench.scenario.build import scheme_for
from gcbench.scenario.schema import Scenario, Variant

DEFAULT_MAX_S = 4  # stragglers tolerated, at most, unless --max-s says otherwise (and below n)
ENUMERATED = ("wait_all", "decodable", "fastest_k", "k_async")  # the policies recommend chooses parameters for
ASYNCHRONOUS = ("k_async",)  # ranked only by a time to accuracy: the scenario must train in the simulator
KINDS = ("exact", "approximate", "stale")
REFERENCE = "uncoded"  # the label of uncoded with wait_all: every speedup is over it
MAX_BURST, MAX_WINDOW = 2, 5  # a sequential scheme's bursts and windows recommend tries, at most, by default
PLACEMENTS = ("spread", "pack", "by_code")  # where a scenario with a topology has each candidate's workers run


@dataclass(frozen=True)
class Candidate:
    variant: Variant
    exact: bool  # an exact scheme under a policy that waits until it decodes (else approximate)
    load: float  # partitions per worker per step, the most any worker computes
    m: int  # slices per gradient: a message is 1/m of one
    pipelined: bool  # computes one partition a step, decoding from cached (stale) partition gradients
    delay: int = 0  # rounds from a job's dispatch to its decode (a sequential scheme's B), 0 for the rest
    placement: str | None = None  # where its workers run (topology.placement; None: the scenario's own)

    def scenario(self, scenario: Scenario, iterations: int | None = None) -> Scenario:
        """The scenario running this candidate alone (at its placement)."""
        single = with_variants(scenario, [self.variant], iterations)
        return single if self.placement is None else with_placement(single, self.placement)

    @property
    def kind(self) -> str:
        """exact (each update the full, fresh gradient), approximate, or stale (a pipelined code: decoded from
        partition gradients up to s steps old; a sequential one: each job's exact gradient, applied B rounds
        late); without training each kind is ranked apart (KINDS order)."""
        stale = self.pipelined or self.delay > 0
        return "stale" if stale else "exact" if self.exact else "approximate"


def check_scheme_names(schemes: list[str] | None) -> None:
    """--schemes names registered schemes only (checked before the cluster is read: a typo is said first)."""
    known = available_schemes()
    unknown = [name for name in schemes or [] if name not in known]
    if unknown:
        raise GcbenchError(f"--schemes: unknown scheme {', '.join(unknown)}; gcbench schemes lists {', '.join(known)}.")


def enumerate_candidates(scenario: Scenario, schemes: list[str] | None = None, max_s: int | None = None,
                         policies: list[str] | None = None, max_burst: int = MAX_BURST, max_window: int = MAX_WINDOW,
                         placements: list[str] | None = None) -> list[Candidate]:  # fmt: skip
    """The candidates for ``scenario``'s workers, filtered by scheme and policy names and the largest s (and, for
    a sequential scheme, the largest B and W); refused in one sentence where a name is unknown or nothing is
    left. Where the scenario has a topology, each candidate at each of ``placements`` (default PLACEMENTS; the
    reference at the scenario's own): a candidate is then a scheme, s, a policy and a placement."""
    n = scenario.workers
    known = available_schemes()
    # a sequential scheme's (B, W, lambda) search is tens of candidates, each a round at a time: asked for by name
    schemes = [name for name in known if not scheme_class(name).sequential] if schemes is None else schemes
    check_scheme_names(schemes)
    trains = scenario.training.in_simulator
    allowed = [p for p in ENUMERATED if trains or p not in ASYNCHRONOUS]
    policies = allowed if policies is None else policies
    wrong = [p for p in policies if p not in allowed]
    if wrong:
        why = "" if trains or not set(wrong) <= set(ASYNCHRONOUS) else " (asynchronous ones with training only)"
        enumerated = ", ".join(p for p in allowed if p in POLICIES.names())
        more = "" if trains else f" (and {', '.join(ASYNCHRONOUS)} where the scenario trains in the simulator)"
        raise GcbenchError(
            f"--policies: recommend cannot choose {', '.join(wrong)}{why}; it enumerates {enumerated}{more}."
        )
    top = min(DEFAULT_MAX_S if max_s is None else max_s, n - 1)
    if top < 0:
        raise GcbenchError(f"--max-s must be at least 0, got {max_s}.")
    try:  # what the scenario refuses of every candidate is its own problem, not a candidate's constraint
        with_variants(scenario, [Variant(label=REFERENCE, scheme="uncoded", policy={"name": "wait_all"})])
    except ValueError as error:
        raise GcbenchError(f"the scenario cannot run the candidates: {_first_problem(error)}.") from None
    placed = _placements(scenario, placements)
    found = []
    for name in schemes:
        for variant in _variants(name, n, top, policies, (max_burst, max_window)):
            candidate = _candidate(scenario, variant)
            if candidate is None:
                continue
            if candidate.variant.display_label() == REFERENCE or not placed:
                found.append(candidate)
                continue
            for placement in placed:
                label = f"{candidate.variant.display_label()} @{placement}"
                found.append(replace(candidate, variant=candidate.variant.model_copy(update={"label": label}),
                                     placement=placement))  # fmt: skip
    if not found:
        raise GcbenchError(
            f"no candidate is left for {n} workers with --schemes {', '.join(schemes)}, --policies "
            f"{', '.join(policies)} and s up to {top}; widen the filters."
        )
    return found


def _placements(scenario: Scenario, placements: list[str] | None) -> list[str]:
    """The placements each candidate is tried at: none without a topology (refused where asked for)."""
    if scenario.topology is None:
        if placements:
            raise GcbenchError("--placements places the workers on the scenario's nodes, and it has no topology; "
                               "give one (--set topology.nodes=2, for example).")  # fmt: skip
        return []
    placements = list(PLACEMENTS) if placements is None else placements
    wrong = [p for p in placements if p not in PLACEMENTS]
    if wrong:
        raise GcbenchError(f"--placements: {', '.join(wrong)} is not one of {', '.join(PLACEMENTS)}.")
    return placements


def with_placement(scenario: Scenario, placement: str) -> Scenario:
    """The scenario with its workers placed so (topology.placement)."""
    topology = scenario.topology.model_copy(update={"placement": placement})
    return scenario.model_copy(update={"topology": topology})


def _variants(name: str, n: int, top: int, policies: list[str], bounds: tuple[int, int]) -> list[Variant]:
    out = []
    if name == "uncoded":
        if "wait_all" in policies:
            out.append(Variant(label=REFERENCE, scheme=name, policy={"name": "wait_all"}))
        for j in range(1, top + 1):
            for policy in ("fastest_k", "k_async"):
                if policy in policies:
                    label = f"uncoded/{policy.replace('_k', '')}-{n - j}"
                    out.append(Variant(label=label, scheme=name, policy={"name": policy, "k": n - j}))
        return out
    if "decodable" not in policies:
        return out
    cls = scheme_class(name)
    if cls.sequential:
        found = (_sequential(cls, burst, window, lam) for burst, window, lam in cls.search_space(n, *bounds))
        return [variant for variant in found if variant.s <= top]
    defaults = scheme_class(name).defaults
    for s in range(1, top + 1):
        params = {"d": s + 1} if "d" in defaults else {}
        label = f"{name}(s={s}" + "".join(f",{k}={v}" for k, v in params.items()) + ")"
        out.append(Variant(label=label, scheme=name, s=s, **params))
    return out


def _sequential(cls, burst: int, window: int, lam: int) -> Variant:
    s = cls.derived_s({"burst": burst, "window": window, "lam": lam})
    label = f"{cls.name}(s={s},burst={burst},window={window},lam={lam})"
    return Variant(label=label, scheme=cls.name, s=s, burst=burst, window=window, lam=lam)


def _candidate(scenario: Scenario, variant: Variant) -> Candidate | None:
    """The variant as a candidate, or None where its scheme's constraints or the scenario's checks refuse it."""
    try:
        single = with_variants(scenario, [variant])
        scheme = scheme_for(single, single.variants[0])
    except (GcbenchError, ValueError):
        return None
    policy = variant.policy  # decodable and wait_all, waiting on, never stop before the messages decode
    exact = scheme.exact and isinstance(policy, Decodable | WaitAll) and policy.fallback == "wait"
    load = max(scheme.step_load(w) for w in range(scenario.workers)) * scheme.partition_share
    m = int(getattr(scheme, "m", 1) or 1)
    return Candidate(single.variants[0], exact, float(load), m, scheme.pipelined, scheme.delay)


def with_variants(scenario: Scenario, variants: list[Variant], iterations: int | None = None) -> Scenario:
    """The scenario running ``variants`` (and ``iterations``) instead of its own, without its sweep, checked as a
    scenario file would be (ValueError where it refuses them)."""
    data = scenario.model_dump(mode="json")
    data.update(variants=[v.model_dump(mode="json") for v in variants], sweep={})
    if iterations is not None:
        data["iterations"] = iterations
    return Scenario.model_validate(data)


def uncoded_candidate(scenario: Scenario) -> Candidate:
    """Uncoded training waiting for every worker: the reference every speedup is over."""
    candidate = _candidate(scenario, Variant(label=REFERENCE, scheme="uncoded", policy={"name": "wait_all"}))
    if candidate is None:
        raise GcbenchError("the scenario refuses uncoded training with wait_all, the reference of every speedup.")
    return candidate


def _first_problem(error: ValueError) -> str:
    """A validation error's first problem, as one clause."""
    problems = getattr(error, "errors", None)
    text = str(problems()[0]["msg"]) if callable(problems) else str(error)
    return text.removeprefix("Value error, ").rstrip(".")
