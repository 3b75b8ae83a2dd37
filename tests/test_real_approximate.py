"""The approximate, stochastic and random schemes on a local Ray instance: the gradient a real run steps with
is the scheme's own estimate, sum_j (1 + E_j) g_j with E = W R - T for the messages it used."""

from __future__ import annotations

import pytest

pytest.importorskip("torch", reason="torch is part of the [real] extra")
pytest.importorskip("ray", reason="ray is part of the [real] extra")

import torch  # noqa: E402

from gcbench.training.gradients import load_flat_parameters, partition_gradient  # noqa: E402
from gcbench.training.models import build_model  # noqa: E402

from realhelpers import DATA, current_weights, make_run, relative_error, scenario  # noqa: E402

pytestmark = [pytest.mark.usefixtures("local_ray"), pytest.mark.slow]

# the decode on Ray is the learner's, whatever the scheme (every new scheme trains through the same learner in
# the simulator, tests/test_approximate_end_to_end.py): one custom decoder, one stochastic, one exact random
# code, each a Ray start (20 to 40 s on the shared machine)
VARIANTS = [
    {"scheme": "is_gc", "s": 1, "d": 2},
    {"scheme": "sgc", "s": 1, "d": 2},
    {"scheme": "bcc", "s": 1, "b": 2},
]


def partition_gradients(run, weights: torch.Tensor, t: int) -> torch.Tensor:
    """Iteration t's gradient of each partition (k x d), single-process, at these weights."""
    model = build_model(run.scenario.training.model, DATA.classes, 0)
    load_flat_parameters(model, weights)
    rows = []
    for j in range(run.scheme.k):
        indices = run.sampler.indices(t, j)
        images, labels = DATA.train_images[indices], DATA.train_labels[indices]
        rows.append(partition_gradient(model, images, labels, run.sampler.batch_size, torch.device("cpu"))[0])
    return torch.stack(rows)


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v["scheme"])
def test_a_real_run_steps_with_the_schemes_estimate_and_records_its_residual(variant):
    """Worker 0 is 0.5 s late in every iteration: the master stops without it and decodes what it has."""
    run = make_run(scenario(variant, {"model": "fixed", "workers": [0], "delay": 0.5}))
    try:
        for t in range(2):
            weights = current_weights(run)
            step = run.step(t)
            assert 0 not in step.arrivals, "the late worker was waited for"
            used = [mid for w in sorted(step.arrivals) for mid in run.scheme.messages(w)]
            decoding = run.scheme.approximate_decoding(used)
            coefficients = torch.from_numpy(1.0 + decoding.error_coefficients[0]).to(weights.dtype)
            expected = coefficients @ partition_gradients(run, weights, t)
            assert relative_error(step.gradient, expected) < 1e-4
            assert (step.exact, step.residual) == pytest.approx(run.scheme.decode_quality(used))
    finally:
        run.shutdown()
