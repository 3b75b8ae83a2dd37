"""Checks that involve more than one field: each problem is one sentence naming its field."""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from gcbench.coding import SchemeParameterError, is_integer, make_scheme, scheme_class
from gcbench.errors import did_you_mean
from gcbench.models import MAX_SECONDS
from gcbench.scenario.fields import DTYPE_BYTES, ScenarioFields, Variant

# Schemes that check their decoding conditioning when built scan up to 2,000
# straggler sets, each an SVD of about n x n: measured here at 2.4 s for
# cyclic_mds at n = 128, 38 s at n = 256 and minutes at n = 4096 (two shared
# cores). Beyond this many workers gcbench refuses them before building them.
MAX_CHECKED_WORKERS = 128
# The simulator holds a run's draws (iterations x workers, or x k results) in memory.
MAX_RUN_CELLS = 10**8
# only the event engine computes gradients (gcbench.sim.engines.engine_for says the same)
VECTORISED_CANNOT_TRAIN = (
    "engine: vectorised computes no gradients, and training.in_simulator is true; use engine: auto or event"
)


def cross_field_problems(scenario: ScenarioFields) -> list[str]:
    n = scenario.workers
    problems = []
    if scenario.compute.speeds is not None and len(scenario.compute.speeds) != n:
        problems.append(f"compute.speeds: needs one speed per worker ({n}), got {len(scenario.compute.speeds)}")
    fixed = getattr(scenario.straggling, "workers", None) or []
    if any(w >= n for w in fixed):
        problems.append(f"straggling.workers: worker ids must be < workers ({n})")
    if scenario.topology is not None:
        problems += scenario.topology.problems(n)
    problems += node_level_problems(scenario)
    problems += network_problems(scenario)
    problems += contention_problems(scenario)
    variants = variant_problems(n, list(enumerate(scenario.variants)))
    return problems + size_problems(scenario) + variants + ([] if variants else training_problems(scenario))


def node_level_problems(scenario: ScenarioFields) -> list[str]:
    """Straggling and failures drawn per node need the topology's nodes, and a node's workers in step: the
    iterations of a synchronous policy (an asynchronous one's jobs start on each worker's own clock); the nodes a
    fixed model lists exist; and the schedule's and the node speeds' own problems."""
    problems = []
    topology = scenario.topology
    for field, model in (("straggling", scenario.straggling), ("failures", scenario.failures)):
        if getattr(model, "level", "worker") != "node":
            continue
        if topology is None:
            problems.append(f"{field}.level: node draws per node of the topology, and the scenario has none; give "
                            "one (topology: {nodes: 2}, for example)")  # fmt: skip
            continue
        for i, variant in enumerate(scenario.variants):
            if not variant.policy.synchronous:
                problems.append(
                    f"{field}.level: node strikes a node's workers in the same iteration, and variants[{i}]'s "
                    f"policy {variant.policy.name} starts each worker's jobs on its own clock; use level: worker "
                    "or a synchronous policy"
                )
                break
    listed = getattr(scenario.straggling, "nodes", None) or []
    outside = sorted(k for k in listed if topology is not None and k >= topology.nodes)
    if outside:
        problems.append(f"straggling.nodes: names node {outside[0]}, and the nodes are 0 to {topology.nodes - 1}")
    return problems + schedule_problems(scenario) + node_speed_problems(scenario)


def schedule_problems(scenario: ScenarioFields) -> list[str]:
    """A scheduled crash names a worker or a node the scenario has, in an iteration of the run."""
    problems, topology = [], scenario.topology
    for i, entry in enumerate(getattr(scenario.failures, "schedule", [])):
        where = f"failures.schedule[{i}]"
        if entry.iteration >= scenario.iterations:
            problems.append(f"{where}: crashes in iteration {entry.iteration}, and the run's iterations are 0 to "
                            f"{scenario.iterations - 1}")  # fmt: skip
        if entry.worker is not None and entry.worker >= scenario.workers:
            problems.append(f"{where}: names worker {entry.worker}, and the workers are 0 to {scenario.workers - 1}")
        if entry.node is not None and topology is None:
            problems.append(f"{where}: names node {entry.node}, and the scenario has no topology; give one "
                            f"(topology: {{nodes: {entry.node + 1}}}, for example) or name a worker")  # fmt: skip
        elif entry.node is not None and entry.node >= topology.nodes:
            problems.append(f"{where}: names node {entry.node}, and the nodes are 0 to {topology.nodes - 1}")
        elif (
            entry.node is not None
            and topology.placement != "by_code"  # (spread's counts: every node holds a worker)
            and not topology.problems(scenario.workers)
            and not (topology.node_of(scenario.workers) == entry.node).any()
        ):
            problems.append(f"{where}: names node {entry.node}, which holds no worker")
    return problems


def node_speed_problems(scenario: ScenarioFields) -> list[str]:
    """compute.node_speeds: a speed for each node of the topology, and not beside by_code for a code built from
    the speeds (each would need the other first)."""
    problems, topology = [], scenario.topology
    node_speeds = scenario.compute.node_speeds
    if node_speeds is not None and topology is None:
        problems.append("compute.node_speeds: gives each node of the topology a speed, and the scenario has none; "
                        f"give one (topology: {{nodes: {len(node_speeds)}}}, for example)")  # fmt: skip
    elif node_speeds is not None and len(node_speeds) != topology.nodes:
        problems.append(f"compute.node_speeds: needs one speed per node ({topology.nodes}), got {len(node_speeds)}")
    elif node_speeds is not None and topology.placement == "by_code":
        by_speed = [v.scheme for v in scenario.variants if "speeds" in scheme_class(v.scheme).defaults]
        if by_speed:
            problems.append(
                f"compute.node_speeds: {by_speed[0]} is built from the workers' speeds, and by_code places its "
                "workers by that code, so neither can come first; give an explicit placement"
            )
    return problems


def network_problems(scenario: ScenarioFields) -> list[str]:
    """Node settings need the topology's nodes, and node 0 (the master's) has no link of its own; the FIFO shared
    link and the fairly shared links are two models of one NIC, so a scenario takes one."""
    network, topology = scenario.network, scenario.topology
    problems = []
    if network.nodes and topology is None:
        problems.append("network.nodes: sets nodes' own links, and the scenario has no topology; give one "
                        f"(topology: {{nodes: {max(network.nodes) + 1}}}, for example)")  # fmt: skip
    elif network.nodes:
        outside = sorted(k for k in network.nodes if k >= topology.nodes)
        if outside:
            problems.append(f"network.nodes: names node {outside[0]}, and the nodes are 0 to {topology.nodes - 1}")
        master = network.nodes.get(0)
        if master is not None and (master.bandwidth is not None or master.downlink is not None):
            field = "bandwidth" if master.bandwidth is not None else "downlink"
            problems.append(
                "network.nodes: node 0 holds the master, so its workers' messages cross no link and it has no "
                f"{field} to set; set the master's own NIC with network.master.ingress and egress"
            )
    if network.shared_link and (topology is not None or network.master.ingress is not None):
        fair = "a topology" if topology is not None else "network.master.ingress"
        problems.append(
            f"network.shared_link: a FIFO link that sends one message at a time, and {fair} shares the links "
            "fairly, as TCP does; drop shared_link and set network.master.ingress for the master's NIC"
        )
    fair = topology is not None or network.master.ingress is not None or network.master.egress is not None
    if network.unfairness > 0 and not (fair or network.downlink is not None):
        problems.append(
            "network.unfairness: weighs the flows of a link that messages share, and every worker here has a link "
            "of its own; give a topology or network.master.ingress"
        )
    if network.burst > 0 and not (fair or network.downlink is not None):
        problems.append(
            "network.burst: a token bucket on each node's fairly shared links, and this network has none (a "
            "bandwidth alone gives each worker a link of its own at a fixed rate); give a topology"
        )
    return problems


def contention_problems(scenario: ScenarioFields) -> list[str]:
    """compute.cores shares the cores among an iteration's jobs, which start together: not a trace's times (measured
    under their own contention), nor an asynchronous policy's jobs (each starts as its worker is free)."""
    if scenario.compute.cores is None:
        return []
    if scenario.compute.trace is not None:
        return ["compute.cores: a trace's times were measured with their own contention; give cores with "
                "per_partition only"]  # fmt: skip
    for i, variant in enumerate(scenario.variants):
        if not variant.policy.synchronous:
            return [
                f"compute.cores: models an iteration's jobs starting together, and variants[{i}]'s policy "
                f"{variant.policy.name} starts each job as its worker is free; use a synchronous policy"
            ]
    return []


def training_problems(scenario: ScenarioFields) -> list[str]:
    """What training in the simulator needs: the event engine, and a batch that splits evenly into partitions."""
    training = scenario.training
    if not training.in_simulator:
        return []
    problems = []
    if scenario.engine == "vectorised":
        problems.append(VECTORISED_CANNOT_TRAIN)
    for i, variant in enumerate(scenario.variants):
        k = make_scheme(variant.scheme, n=scenario.workers, s=variant.s, **variant.scheme_params()).k
        if training.batch_size % k:
            fit = max(k, round(training.batch_size / k) * k)
            problems.append(
                f"training.batch_size: {training.batch_size} is not a multiple of the {k} data partitions of "
                f"variants[{i}], so they would not get as many samples each; use {fit}, for example"
            )
            break
    return problems


def size_problems(scenario: ScenarioFields) -> list[str]:
    """What would not fit: a run too large to hold in memory, a message slower than the duration ceiling."""
    problems = []
    widest = max([scenario.workers] + [getattr(v.policy, "k", 0) for v in scenario.variants])
    if scenario.iterations * widest > MAX_RUN_CELLS:
        problems.append(
            f"iterations: {scenario.iterations} iterations x {widest} workers (or results per update) exceed "
            f"{MAX_RUN_CELLS:,} per run, more than the simulator holds in memory"
        )
    network, n = scenario.network, scenario.workers
    size = scenario.gradient.length * DTYPE_BYTES[scenario.gradient.dtype]
    rates = [("network.bandwidth", network.bandwidth, size)]
    rates += [(f"network.nodes[{k}].bandwidth", node.bandwidth, size) for k, node in network.nodes.items()]
    rates.append(("network.master.ingress", network.master.ingress, size * n))  # (every worker's message on it)
    for field, rate, load in rates:
        if rate is not None and not load / rate <= MAX_SECONDS:
            what = f"a {size:,}-byte message" if load == size else f"{n} messages of {size:,} bytes"
            problems.append(
                f"{field}: {what} would take {load / rate:.3g} s, more than the {MAX_SECONDS:.0e} s any duration "
                "may last"
            )
            break
    return problems


def _s_derived(variant: Variant) -> bool:
    """Whether the variant's s follows from its scheme's other parameters (m_sgc's lam, sr_sgc's s')."""
    try:
        return scheme_class(variant.scheme).derived_s(variant.scheme_params()) == variant.s
    except SchemeParameterError:
        return False


def variant_problems(n: int, variants: list[tuple[int, Variant]]) -> list[str]:
    """Problems of the (index, variant) pairs given for n workers: their schemes, policies and labels."""
    problems = []
    labels = [v.display_label() for _, v in variants]
    for position, (i, variant) in enumerate(variants):
        where = f"variants[{i}]"
        if variant.s >= n and not _s_derived(variant):  # (a derived s: the scheme names its own parameter)
            problems.append(f"{where}.s: must be < workers ({n})")
            continue
        unknown = parameter_problem(variant)
        problem = None if unknown else scheme_problem(variant, n)
        if unknown or problem:
            problems.append(f"{where}.{unknown}" if unknown else f"{where}: {problem.rstrip('.')}")
        if not variant.policy.needs_master and variant.scheme != "uncoded":  # no master: nothing decodes
            problems.append(
                f"{where}.policy: allreduce (DistributedDataParallel) all-reduces every worker's whole gradient, "
                f"so it takes scheme: uncoded only, not {variant.scheme}"
            )
        if not variant.policy.needs_master:
            try:
                variant.policy.hook_for(variant.compressor)
            except ValueError as error:
                problems.append(f"{where}.compression: {error}")
        pipelined = problem is None and not unknown and scheme_class(variant.scheme).pipelined
        if pipelined and not variant.policy.synchronous:
            problems.append(
                f"{where}.policy: {variant.scheme} refreshes each worker's cached partition gradients once per "
                f"synchronous step, so it takes a synchronous policy, not {variant.policy.name}"
            )
        sequential = problem is None and not unknown and scheme_class(variant.scheme).sequential
        if sequential:
            problems += sequential_policy_problems(where, variant)
        k = getattr(variant.policy, "k", None)
        if k is not None and k > n and getattr(variant.policy, "distinct", True):
            problems.append(f"{where}.policy.k: must be <= workers ({n})")
        if labels.count(labels[position]) > 1 and labels.index(labels[position]) == position:
            problems.append(
                f"{where}.label: '{labels[position]}' names more than one variant; give each a distinct label"
            )
    return problems


def sequential_policy_problems(where: str, variant: Variant) -> list[str]:
    """A sequential scheme ends a round once its stragglers fit its model and the job due decodes: a synchronous
    policy that waits for that (never an approximate decode, never a fixed count of results)."""
    policy, name = variant.policy, variant.scheme
    if not policy.synchronous or policy.stops_at_a_count:
        return [
            f"{where}.policy: {name} ends a round once its stragglers fit its model and the job due decodes, so "
            f"it takes wait_all, decodable, deadline or relative_deadline, not {policy.name}"
        ]
    if policy.fallback == "approximate":
        return [f"{where}.policy.fallback: {name} decodes every job exactly, rounds after it began; use wait"]
    return []


def parameter_problem(variant: Variant) -> str | None:
    """A key the variant gives that is neither one of its fields nor a parameter its scheme declares."""
    try:
        declared = scheme_class(variant.scheme).defaults
    except SchemeParameterError:
        return None  # scheme_problem names the unknown scheme
    unknown = [key for key in variant.scheme_params() if key not in declared]
    if not unknown:
        return None
    takes = ", ".join(f"{key} (default {value!r})" for key, value in declared.items()) or "no parameters besides s"
    fields = ", ".join(type(variant).model_fields)
    hint = did_you_mean(unknown[0], [*type(variant).model_fields, *declared])
    return (f"{unknown[0]}: {hint}neither a variant field ({fields}) nor a parameter of {variant.scheme}, which "
            f"takes {takes}")  # fmt: skip


def scheme_problem(variant: Variant, n: int) -> str | None:
    try:
        if scheme_class(variant.scheme).checks_conditioning and n > MAX_CHECKED_WORKERS:
            return (
                f"{variant.scheme} checks its decoding conditioning when built, which takes minutes beyond "
                f"{MAX_CHECKED_WORKERS} workers, so gcbench takes it for at most {MAX_CHECKED_WORKERS} workers "
                f"(got {n}); use fr, cce_fr or ignore_stragglers for more"
            )
        make_scheme(variant.scheme, n=n, s=variant.s, **variant.scheme_params())
    except SchemeParameterError as error:
        return str(error)
    return None


def problems_beside_field_errors(data: dict[str, Any]) -> list[str]:
    """The variant checks, for the variants that are valid by themselves, when other fields are not.

    So a scenario's field errors and its variant errors come in one report, not two rounds.
    """
    n, raw = data.get("workers"), data.get("variants")
    if not is_integer(n) or not 1 <= n <= 4096 or not isinstance(raw, list):
        return []
    valid = []
    for i, item in enumerate(raw):
        try:
            valid.append((i, Variant.model_validate(item)))
        except ValidationError:
            continue
    return variant_problems(n, valid)
