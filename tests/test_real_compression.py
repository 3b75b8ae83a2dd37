"""Compressed messages on the real backends: Ray and torch workers compress what they send (error feedback in
their own process), the master decompresses each message and then decodes. A compressor that commutes with a
linear decode (random-k with the iteration's shared indices) gives exactly the exact gradient compressed."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch", reason="torch is part of the [real] extra")

from gcbench.compression import COMPRESSORS, Key  # noqa: E402

from realhelpers import current_weights, make_run, reference_gradient, relative_error, scenario  # noqa: E402


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["ray", "torch"])
def test_a_coded_scheme_with_randomk_decodes_the_exact_gradient_compressed(backend, request):
    """cyclic-MDS s = 1 on 4 workers, one of them 0.5 s late every iteration: the master decodes from the other
    three (weights far from 1), yet the stepped gradient is random-k of the single-process gradient, keyed by
    the run's seed and the iteration's mini-batch."""
    if backend == "ray":
        request.getfixturevalue("local_ray")
    compression = {"name": "randomk", "ratio": 0.1}
    slow = {"model": "fixed", "workers": [0], "delay": 0.5}
    run = make_run(scenario({"scheme": "cyclic_mds", "s": 1, "compression": compression}, slow), backend=backend)
    compressor = COMPRESSORS.get("randomk")(ratio=0.1)
    try:
        for t in range(2):
            weights = current_weights(run)
            step = run.step(t)
            assert step.exact and 0 not in step.arrivals
            expected = torch.from_numpy(compressor.round_trip(reference_gradient(run, weights, t).numpy(), Key(0, t)))
            assert relative_error(step.gradient, expected) < 1e-4
            assert relative_error(step.gradient, reference_gradient(run, weights, t)) > 0.5  # it was compressed
    finally:
        run.shutdown()


@pytest.mark.slow
def test_a_restarted_torch_worker_has_lost_its_error_feedback_memory_and_says_so(caplog):
    """Top-k keeps each worker's residual in its process: killed between iterations, the worker's replacement
    starts a new memory, and the run's log says so once; training goes on. (wait_all: the next iteration waits for
    the replacement, however long a loaded machine takes to start it.)"""
    import os
    import signal

    variant = {"scheme": "uncoded", "policy": "wait_all", "compression": {"name": "topk", "ratio": 0.1}}
    run = make_run(scenario(variant, iterations=5), backend="torch")
    try:
        run.step(0)
        run.step(1)
        os.kill(run.cluster.sessions[2].pid, signal.SIGKILL)
        with caplog.at_level("WARNING", logger="gcbench"):
            for t in range(2, 5):
                step = run.step(t)
                assert step.exact and step.loss == step.loss and 2 in step.arrivals
        lost = [r.getMessage() for r in caplog.records if "compression error-feedback memory" in r.getMessage()]
        assert len(lost) == 1 and lost[0].startswith("gcbench: worker 2 lost its compression error-feedback memory")
    finally:
        run.shutdown()
