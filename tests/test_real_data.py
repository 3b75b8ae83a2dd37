"""CIFAR-10's python batches are unpickled with numpy's arrays allowed and nothing else."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from gcbench.cli import app
from gcbench.errors import GcbenchError
from gcbench.training.data import cifar10

FILES = [f"data_batch_{i}" for i in range(1, 6)] + ["test_batch"]


def genuine_batch(index: int, images: int = 3) -> dict:
    """A batch as CIFAR-10's python release holds it (10,000 images per file there)."""
    rng = np.random.default_rng(index)
    return {
        "batch_label": f"batch {index} of 6",
        "labels": [int(c) for c in rng.integers(0, 10, images)],
        "data": rng.integers(0, 256, (images, 3072), dtype=np.uint8),
        "filenames": [f"image_{index}_{i}.png" for i in range(images)],
    }


def write_batches(folder: Path, dump) -> list[dict]:
    folder.mkdir(parents=True)
    batches = [genuine_batch(i) for i in range(len(FILES))]
    for name, batch in zip(FILES, batches, strict=True):
        (folder / name).write_bytes(dump(batch))
    return batches


def as_numpy_1_writes_it(batch: dict) -> bytes:
    """Protocol 2 naming numpy.core (numpy 1's name, which the original release's files use)."""
    return pickle.dumps(batch, protocol=2).replace(b"cnumpy._core.multiarray\n", b"cnumpy.core.multiarray\n")


@pytest.mark.parametrize(
    "dump",
    [lambda b: pickle.dumps(b, protocol=2), as_numpy_1_writes_it, lambda b: pickle.dumps(b, protocol=5)],
    ids=["protocol-2", "protocol-2-numpy-1-names", "protocol-5"],
)
def test_genuine_python_batches_load(tmp_path, dump):
    batches = write_batches(tmp_path / "cifar-10-batches-py", dump)
    data = cifar10(tmp_path, tmp_path / "cache")
    assert np.array_equal(data.train_images, np.concatenate([b["data"] for b in batches[:5]]).reshape(-1, 3, 32, 32))
    assert data.train_labels.tolist() == [c for b in batches[:5] for c in b["labels"]]
    assert np.array_equal(data.test_images, batches[5]["data"].reshape(-1, 3, 32, 32))
    assert data.test_labels.tolist() == batches[5]["labels"]


class RunsCode:
    """What a crafted batch holds: unpickling it calls os.system."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):
        return os.system, (f"touch {self.marker}",)


def crafted_folder(tmp_path: Path) -> tuple[Path, Path]:
    marker = tmp_path / "the-crafted-pickle-ran"
    folder = tmp_path / "data" / "cifar-10-batches-py"
    write_batches(folder, lambda b: pickle.dumps(b, protocol=2))
    (folder / "data_batch_1").write_bytes(pickle.dumps({**genuine_batch(0), "data": RunsCode(marker)}, protocol=2))
    assert pickle.loads((folder / "data_batch_1").read_bytes())["data"] == 0 and marker.exists()  # it runs code
    marker.unlink()
    return folder.parent, marker


def test_a_crafted_batch_that_would_run_code_is_refused(tmp_path):
    data_dir, marker = crafted_folder(tmp_path)
    with pytest.raises(GcbenchError, match=r"data_batch_1: refused to unpickle it, as it names posix\.system"):
        cifar10(data_dir, tmp_path / "cache")
    assert not marker.exists()


def test_gcbench_run_refuses_a_crafted_batch_with_one_sentence(tmp_path):
    pytest.importorskip("torch", reason="torch is part of the [real] extra")
    data_dir, marker = crafted_folder(tmp_path)
    scenario = tmp_path / "crafted.yaml"
    scenario.write_text(
        "name: crafted\nworkers: 4\niterations: 2\ncompute: {per_partition: {distribution: deterministic, value: 0.01}}"
        f"\nvariants: [{{scheme: uncoded}}]\ntraining: {{dataset: cifar10, data_dir: {data_dir}, "
        f"cache_dir: {tmp_path / 'cache'}, batch_size: 32, device: cpu}}\n"
    )
    result = CliRunner().invoke(app, ["run", str(scenario), "--backend", "local", "--out", str(tmp_path / "out")])
    assert result.exit_code == 2, result.output
    assert "refused to unpickle it, as it names posix.system: a genuine CIFAR-10 batch holds only numpy" in (
        result.output
    )
    assert "Traceback" not in result.output and not marker.exists()


def test_a_damaged_batch_is_one_sentence(tmp_path):
    folder = tmp_path / "cifar-10-batches-py"
    write_batches(folder, lambda b: pickle.dumps(b, protocol=2))
    (folder / "test_batch").write_bytes((folder / "test_batch").read_bytes()[:100])
    with pytest.raises(GcbenchError, match=r"test_batch: not a CIFAR-10 python batch \(UnpicklingError: "):
        cifar10(tmp_path, tmp_path / "cache")


def test_decoding_an_image_copy_says_so_as_it_goes_and_caches_it(tmp_path, monkeypatch):
    """The first use of a JPEG copy decodes 60,000 images (about 10 s): the run says what it does, then caches."""
    from PIL import Image

    import gcbench.training.data as data

    root = tmp_path / "cifar"
    for split, count in (("train", 5), ("test", 2)):
        for name in ("cat", "dog"):
            folder = root / split / name
            folder.mkdir(parents=True)
            for i in range(count):
                Image.new("RGB", (32, 32), (i, 0, 0)).save(folder / f"{i}.jpg")
    monkeypatch.setattr(data, "DECODE_EVERY", 4)
    lines: list[str] = []
    first = cifar10(root, tmp_path / "cache", lines.append)
    assert lines == [
        f"decoding CIFAR-10 from {root} (its first use; cached in {tmp_path / 'cache'} for later runs)",
        "  decoded 4 of 14 images", "  decoded 8 of 14 images", "  decoded 12 of 14 images",
        "  decoded 14 of 14 images",
    ]  # fmt: skip
    lines.clear()
    again = cifar10(root, tmp_path / "cache", lines.append)
    assert lines == [] and np.array_equal(first.train_images, again.train_images)  # from the cache, silently
