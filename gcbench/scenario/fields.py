"""The scenario file's fields: every section a strict config (unknown keys are errors), checked by itself.

The checks across fields (checks.py) read these; the Scenario (schema.py) is these fields with those checks.
See docs/scenarios.md.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import ConfigDict, Field, PositiveInt, field_validator, model_validator

from gcbench.coding import SchemeParameterError, plain, scheme_class
from gcbench.compression import Compression, Compressor, NoCompression, is_valid_compression
from gcbench.models import Config
from gcbench.models.distributions import Distribution
from gcbench.models.failures import Failures, NoFailures
from gcbench.models.network import Network
from gcbench.models.straggling import NoStraggling, Straggling
from gcbench.models.topology import Topology
from gcbench.models.traces import Trace
from gcbench.policies import Decodable, Policy
from gcbench.scenario.paths import MAX_INT

DTYPE_BYTES = {"float16": 2, "bfloat16": 2, "float32": 4, "float64": 8}
Seed = Annotated[int, Field(ge=0, le=MAX_INT)]


class Gradient(Config):
    """The gradient a worker uploads: its length and dtype set the message size in bytes."""

    length: Annotated[int, Field(ge=1, le=2**40)] = 11_200_000
    dtype: Literal["float16", "bfloat16", "float32", "float64"] = "float32"


class Compute(Config):
    """Compute time of a worker: per-partition draws (or a trace), its load, its speed, and an overhead.

    ``load: scale`` draws one time per worker and iteration and multiplies it by
    the load (the model of Tandon et al.); ``sum`` draws every partition
    independently. A worker's time is divided by its speed. ``overhead`` adds
    one draw per worker and iteration that neither the load nor the speed
    scales (Tandon et al.'s second model, T = l·Δ + E); it is modelled time, so
    real mode sleeps it, and the workers table counts it in ``injected_delay``.
    ``fixed`` adds one draw per worker and iteration that the load does not scale
    but the speed (and straggling's slowdown) does: compute a real worker does
    anyway, so real mode measures it and never sleeps it. ``shared`` multiplies every worker's compute in an
    iteration by one draw (slowness the workers share); real mode measures it too. ``cores``: the cores the
    workers share (several worker processes on one machine): an iteration's jobs start together and share them
    as a processor-sharing queue does, each computing at min(1, cores / computing) of its speed while that many
    compute, so a job's time depends on how many compute beside it (gcbench/models/contention.py).
    """

    per_partition: Distribution | None = None
    trace: Trace | None = None
    load: Literal["scale", "sum"] = "scale"
    speeds: list[Annotated[float, Field(ge=1e-6, le=1e6)]] | None = None
    # each node's speed (a topology's; null: 1): its workers' compute is divided by it, beside their own speeds
    node_speeds: list[Annotated[float, Field(ge=1e-6, le=1e6)]] | None = None
    overhead: Distribution | None = None
    # seconds of every job that its load does not scale but its speed does (loading the weights, encoding): part of
    # the compute a real worker measures, so real mode never sleeps it (unlike overhead); gcbench calibrate fits it
    fixed: Distribution | None = None
    # a factor, one draw per iteration (draw row), multiplying every worker's compute in it: slowness the workers
    # share (contention on a machine, its other load); its mean is best near 1. gcbench calibrate fits it
    shared: Distribution | None = None
    # the cores the workers share, processor-sharing each iteration's compute (null: each worker has its own);
    # gcbench calibrate writes the measured machine's
    cores: Annotated[int, Field(ge=1, le=1_000_000)] | None = None

    @model_validator(mode="after")
    def _one_source(self) -> Compute:
        if (self.per_partition is None) == (self.trace is None):
            raise ValueError("give exactly one of per_partition and trace")
        return self


class Master(Config):
    """The master's own time between iterations, as the simulator models it (a real master takes its own).

    ``between_iterations``: seconds from an iteration's stop to the next one's start (abandoning the
    stragglers, decoding, the optimiser's step, publishing the weights), one draw per iteration of a
    synchronous policy; null: none. Asynchronous policies model none (their updates overlap the workers' jobs).
    """

    between_iterations: Distribution | None = None


class Variant(Config):
    """One thing to compare: a scheme with its parameters, and an aggregation policy.

    Besides these fields a variant takes any parameter its scheme declares
    (``Scheme.defaults``: ``m`` for cce_cr, ``seed`` for cr, ...); the scheme
    validates their values, and checks.py refuses keys the scheme does not take.
    """

    # the extra keys are the scheme's parameters, so a new scheme needs no field here
    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)

    label: str | None = None
    scheme: str
    s: Annotated[int, Field(ge=0)] = 0
    policy: Policy = Field(default_factory=Decodable)
    # how the workers compress their messages (gcbench compressors); null: none, unless the scenario's
    # compression field gives a default (a loaded scenario has put it here)
    compression: Compression | None = None

    @model_validator(mode="before")
    @classmethod
    def _plain_scheme_params(cls, data: Any) -> Any:
        """The scheme's parameters (kept as given) with numpy numbers as Python's, so run.json stays JSON; and,
        where the variant leaves s out and its scheme's s follows from its other parameters (sr_sgc's s'), that
        s."""
        if not isinstance(data, dict):
            return data
        data = {key: value if key in cls.model_fields else plain(value) for key, value in data.items()}
        if "s" not in data:
            try:
                derived = scheme_class(str(data.get("scheme"))).derived_s(
                    {k: v for k, v in data.items() if k not in cls.model_fields}
                )
            except SchemeParameterError:  # (an unknown scheme: the checks name it)
                derived = None
            if derived is not None:
                data["s"] = derived
        return data

    def scheme_params(self) -> dict[str, Any]:
        """The scheme parameters this variant gives (its keys beyond the fields above).

        A null is the scheme's default, as it always was: run.json files written
        before schemes owned their parameters say ``m: null, seed: null``.
        """
        return {key: value for key, value in (self.model_extra or {}).items() if value is not None}

    @property
    def compressor(self) -> Compressor:
        """The compressor its workers' messages go through (``none`` where it gives none)."""
        return self.compression if self.compression is not None else NoCompression()

    @property
    def sent_compressed(self) -> Compressor | None:
        """The compressor its workers apply to their messages, or None where they send them as they are."""
        return None if self.compressor.name == "none" else self.compressor

    def display_label(self) -> str:
        if self.label:
            return self.label
        params = "".join(f",{k}={v}" for k, v in self.scheme_params().items())
        scheme = f"{self.scheme}(s={self.s}{params})" if self.scheme != "uncoded" else "uncoded"
        if not self.policy.needs_master:  # allreduce names the hook it runs, its own or its compression's
            try:
                hook, rank = self.policy.hook_for(self.compressor)
            except ValueError:  # (the scenario's checks say why)
                hook, rank = self.policy.hook, self.policy.rank
            return f"{scheme}/{self.policy.model_copy(update={'hook': hook, 'rank': rank}).display_name}"
        label = f"{scheme}/{self.policy.display_name}"
        return label if self.compressor.name == "none" else f"{label}/{self.compressor.display_name}"


class Training(Config):
    """What a run trains, and how: real mode always trains; the simulator only with ``in_simulator``.

    ``in_simulator``: `gcbench simulate` computes real partition gradients in process while the models say how
    long each job took (gcbench/sim/training.py), so loss and accuracy are recorded against simulated time.
    ``target_accuracy``: the summary reports the simulated seconds to the first evaluation reaching it.
    """

    dataset: Literal["cifar10", "synthetic"] = "cifar10"
    data_dir: str | None = None
    cache_dir: str | None = None
    # gcbench.training.models.MODELS (torch: not importable here); tests/test_scenario_schema.py holds them equal
    model: Literal["small_cnn", "resnet18", "softmax"] = "small_cnn"
    batch_size: PositiveInt = 256
    learning_rate: Annotated[float, Field(gt=0)] = 0.05
    momentum: Annotated[float, Field(ge=0, lt=1)] = 0.9
    weight_decay: Annotated[float, Field(ge=0)] = 5e-4
    eval_every: PositiveInt = 50
    checkpoint_every: PositiveInt = 100
    device: str = "auto"  # auto: CUDA when available
    # the DDP baseline's process group: auto is NCCL where each rank has a GPU of its own, else gloo (docs/gpu.md)
    ddp_backend: Literal["auto", "gloo", "nccl"] = "auto"
    timeout: Annotated[float, Field(gt=0)] = 120.0  # seconds any single wait may take
    in_simulator: bool = False  # gcbench simulate trains for real, in simulated time
    target_accuracy: Annotated[float, Field(gt=0, le=1)] | None = None  # test accuracy whose time the summary reports

    @field_validator("device")
    @classmethod
    def _known_device(cls, device: str) -> str:
        if not re.fullmatch(r"auto|cpu|cuda(:\d+)?", device):
            raise ValueError(f"must be auto, cpu, cuda or cuda:N, not '{device}'")
        return device


class ScenarioFields(Config):
    """A whole experiment's fields, each checked by itself: the cluster, its models, the variants, and sweeps."""

    name: str = Field(min_length=1, max_length=100)
    description: str = ""
    workers: Annotated[int, Field(ge=1, le=4096)]
    iterations: Annotated[int, Field(ge=1, le=10**7)]
    seeds: list[Seed] = Field(default=[0], min_length=1)
    gradient: Gradient = Gradient()
    compute: Compute
    straggling: Straggling = NoStraggling()
    failures: Failures = NoFailures()
    network: Network = Network()
    # the nodes the workers run on (null: a node a worker, as a cluster of one-worker machines)
    topology: Topology | None = None
    master: Master = Master()
    # every variant's compression that gives none of its own (gcbench compressors; docs/compression.md)
    compression: Compression = Field(default_factory=NoCompression)
    stale_work: Literal["abandon", "finish"] = "abandon"
    engine: Literal["auto", "event", "vectorised"] = "auto"  # auto: vectorised for synchronous policies
    variants: list[Variant] = Field(min_length=1)
    sweep: dict[str, list[Any]] = {}
    training: Training = Training()
    # the real runs gcbench calibrate fitted this scenario to (gcbench plot calls its simulations calibrated)
    calibrated_from: list[str] = []

    @model_validator(mode="before")
    @classmethod
    def _scheduled_failures_alone(cls, data: Any) -> Any:
        """``failures: {schedule: [...]}`` without a model: the crash model with only the scheduled crashes."""
        if isinstance(data, dict) and isinstance(data.get("failures"), dict):
            failures = data["failures"]
            if "model" not in failures and "schedule" in failures:
                return {**data, "failures": {"model": "crash", **failures}}
        return data

    @model_validator(mode="before")
    @classmethod
    def _default_compression(cls, data: Any) -> Any:
        """The scenario's compression, where given, is each variant's that gives none: put there, so a variant
        carries what it runs (its label, its tables, run.json)."""
        if not isinstance(data, dict) or not isinstance(data.get("variants"), list):
            return data
        default = data.get("compression")
        if default is None or default == "none" or not is_valid_compression(default):
            return data  # (an invalid default is the scenario field's error, said once)
        variants = [
            {**variant, "compression": default} if isinstance(variant, dict) and variant.get("compression") is None
            else variant
            for variant in data["variants"]
        ]  # fmt: skip
        return {**data, "variants": variants}

    @field_validator("name")
    @classmethod
    def _a_folder_name(cls, name: str) -> str:
        # the name becomes results/<name>-<time>/: it must stay one folder inside results/
        if re.search(r"[/\\:\x00-\x1f]", name) or ".." in name or name.startswith(".") or name != name.strip():
            raise ValueError(
                "must be a plain folder name (it names the results directory): no '/', '\\', ':', '..', "
                f"leading dot or surrounding spaces, not {name!r}"
            )
        return name

    @field_validator("sweep", mode="before")
    @classmethod
    def _plain_sweep_values(cls, sweep: Any) -> Any:
        # swept values become result columns and run.json: numpy numbers as Python's
        if not isinstance(sweep, dict):
            return sweep
        return {key: plain(values) if isinstance(values, list) else values for key, values in sweep.items()}

    @field_validator("seeds")
    @classmethod
    def _distinct_seeds(cls, seeds: list[int]) -> list[int]:
        if len(set(seeds)) != len(seeds):
            raise ValueError("give each seed once (a repeated seed repeats the same run)")
        return seeds
