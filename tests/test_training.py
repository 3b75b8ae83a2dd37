"""The training layer, in process and without Ray: its models, and exact decoding of real partition gradients.

A worker's job here is the real workers' own code (``shard_gradient`` on the shard it holds, then the
scheme's encoding), so this is the check the simulator will rely on when it trains: under every exact scheme,
the gradient decoded from any n - s workers equals the single-process gradient of the whole mini-batch.
"""

from __future__ import annotations

import typing

import pytest

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.coding import available_schemes, make_scheme, scheme_class  # noqa: E402
from gcbench.scenario.schema import Training  # noqa: E402
from gcbench.training.batches import PartitionSampler  # noqa: E402
from gcbench.training.data import synthetic  # noqa: E402
from gcbench.training.gradients import FlatModel, load_flat_parameters, partition_gradient, shard_gradient  # noqa: E402
from gcbench.training.models import MODELS, build_model  # noqa: E402

DATA = synthetic(train=256, test=32)
CPU = torch.device("cpu")
N, BATCH = 4, 32
EXACT_SCHEMES = [name for name in available_schemes() if scheme_class(name).exact]


def test_the_scenario_schema_names_exactly_the_registered_models():
    """The schema may not import torch, so it lists the names itself; they must be the registry's."""
    assert set(typing.get_args(Training.model_fields["model"].annotation)) == set(MODELS)


def test_softmax_is_one_linear_layer_on_the_pixels():
    model = build_model("softmax", DATA.classes, 0)
    assert [type(m).__name__ for m in model] == ["Flatten", "Linear"]
    assert sum(p.numel() for p in model.parameters()) == 3 * 32 * 32 * 10 + 10


def parameter_sets(name: str) -> list[tuple[int, dict]]:
    """Every (s, parameters) the scheme takes for n = 4 workers."""
    return [(s, params) for s, params in scheme_class(name).valid_parameter_sets(N) if s < N]


# softmax is cheap: every parameter set of every exact scheme; the CNN: the most stragglers each scheme takes
CASES = [("softmax", name, s, params) for name in EXACT_SCHEMES for s, params in parameter_sets(name)]
CASES += [("small_cnn", name, *max(parameter_sets(name), key=lambda entry: entry[0])) for name in EXACT_SCHEMES]


def decoded_gradient(scheme, worker_model, shards, sampler, t: int, stragglers: set[int]) -> torch.Tensor:
    """Every responding worker computes its partitions from its shards and encodes; the master decodes."""
    received = {}
    for w in range(scheme.n):
        if w in stragglers:
            continue
        grads = {j: shard_gradient(worker_model, shards[j], sampler, t, j, CPU)[0] for j in scheme.partitions(w)}
        received[w] = scheme.encode(w, grads)
    d = sum(p.numel() for p in worker_model.parameters())
    return torch.as_tensor(scheme.decode(received, d=d))


@pytest.mark.parametrize(("model_name", "name", "s", "params"), CASES, ids=lambda value: str(value))
def test_an_exact_scheme_decodes_the_single_process_gradient(model_name, name, s, params):
    """Two steps of training: the first s workers straggle (whole workers: none for M-SGC, whose guarantee spans
    rounds), the decoded gradient is the whole mini-batch's."""
    scheme = make_scheme(name, n=N, s=s, **params)
    sampler = PartitionSampler(len(DATA.train_labels), scheme.k, BATCH, seed=0)
    shards = sampler.shard_data(DATA.train_images, DATA.train_labels)
    training = Training(dataset="synthetic", model=model_name, batch_size=BATCH, device="cpu")
    master = FlatModel(build_model(model_name, DATA.classes, 0), training)
    worker_model, reference = build_model(model_name, DATA.classes, 0), build_model(model_name, DATA.classes, 0)
    for t in range(2):
        for model in (worker_model, reference):
            load_flat_parameters(model, master.flat.detach())
        got = decoded_gradient(scheme, worker_model, shards, sampler, t, stragglers=set(range(scheme.tolerance)))
        batch = sampler.batch(t)
        expected, _ = partition_gradient(
            reference, DATA.train_images[batch], DATA.train_labels[batch], sampler.batch_size, CPU
        )
        assert float((got - expected).norm() / expected.norm()) < 1e-4, (name, s, t)
        master.step(got)


def test_softmax_learns_the_synthetic_classes():
    """Cheap, but a real model: 60 full-batch steps on the synthetic patterns beat chance by far."""
    from gcbench.training.evaluation import evaluate_master

    training = Training(dataset="synthetic", model="softmax", batch_size=64, learning_rate=0.02, device="cpu")
    model = build_model("softmax", DATA.classes, 0)
    flat = FlatModel(model, training)
    sampler = PartitionSampler(len(DATA.train_labels), 1, 64, seed=0)
    for t in range(60):
        batch = sampler.batch(t)
        flat.step(partition_gradient(model, DATA.train_images[batch], DATA.train_labels[batch], 64, CPU)[0])
    assert evaluate_master(model, DATA, 64) > 0.5


def test_gcbench_run_trains_softmax_on_the_local_backend(tmp_path):
    from typer.testing import CliRunner

    from gcbench.cli import app
    from gcbench.results import read_results

    path = tmp_path / "tiny.yaml"
    path.write_text(
        "name: tiny\nworkers: 4\niterations: 3\ncompute: {per_partition: {distribution: exponential, rate: 10}}\n"
        "variants: [{scheme: uncoded}]\ntraining: {dataset: synthetic, batch_size: 32, eval_every: 3, device: cpu}\n"
    )
    out = tmp_path / "local"
    result = CliRunner().invoke(app, ["run", str(path), "--backend", "local", "--model", "softmax", "--out", str(out)])
    assert result.exit_code == 0, result.output
    iterations, _, meta = read_results(out)
    assert meta["scenario"]["training"]["model"] == "softmax"
    assert len(iterations) == 3 and iterations["loss"].notna().all() and iterations["accuracy"].notna().sum() == 1


def test_a_warm_up_pass_leaves_the_model_as_it_was_and_its_next_gradient_unchanged():
    """A network with BatchNorm, as ResNet-18 has (its running statistics are buffers a forward pass in
    training mode moves): after the warm-up every parameter and buffer is what it was, no gradient is left,
    and the next partition gradient is bit for bit the one a model without a warm-up computes."""
    from torch import nn

    from gcbench.training.gradients import warm_up

    def network() -> nn.Module:
        torch.manual_seed(0)
        return nn.Sequential(nn.Conv2d(3, 8, 3), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(), nn.Linear(8 * 30 * 30, 10))

    warmed, fresh = network(), network()
    images, labels = DATA.train_images[:4], DATA.train_labels[:4]
    warm_up(warmed, images, labels, 4, CPU)
    for (name, a), b in zip(warmed.state_dict().items(), fresh.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    assert all(p.grad is None for p in warmed.parameters())
    after, _ = partition_gradient(warmed, DATA.train_images[4:8], DATA.train_labels[4:8], 4, CPU)
    expected, _ = partition_gradient(fresh, DATA.train_images[4:8], DATA.train_labels[4:8], 4, CPU)
    assert torch.equal(after, expected)
