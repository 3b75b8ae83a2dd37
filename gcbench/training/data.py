"""Image-classification data as uint8 tensors: CIFAR-10 (several layouts) or a synthetic stand-in.

CIFAR-10 is decoded once and cached as a tensor file, so later runs load it in
a second. Accepted copies: torchvision's ``cifar-10-batches-py`` folder (or its
parent), an image-folder layout ``train/<class>/*.jpg`` and ``test/<class>/*.jpg``,
or a ``.tar.gz`` of that layout.
"""

from __future__ import annotations

import hashlib
import io
import pickle
import tarfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from gcbench.errors import GcbenchError

if TYPE_CHECKING:
    from gcbench.scenario.schema import Scenario

CLASSES = ("airplane", "automobile", "bird", "cat", "deer", "dog", "frog", "horse", "ship", "truck")
DEFAULT_CACHE = Path.home() / ".cache" / "gcbench"
HOW_TO_PROVIDE = (
    "give --data-dir torchvision's cifar-10-batches-py folder, an image folder with train/<class>/*.jpg and "
    "test/<class>/*.jpg, or a .tar.gz of that folder"
)
DECODE_EVERY = 10_000  # images between two progress lines while a copy is decoded


@dataclass(frozen=True)
class Dataset:
    """Images (N, 3, 32, 32) uint8 and labels (N,) int64, for training and test."""

    train_images: np.ndarray
    train_labels: np.ndarray
    test_images: np.ndarray
    test_labels: np.ndarray

    @property
    def classes(self) -> int:
        return int(self.train_labels.max()) + 1


def load_data(scenario: Scenario, say: Callable[[str], None] | None = None) -> Dataset:
    """The dataset the scenario's training section names: synthetic, or CIFAR-10 from its data_dir (or a copy
    downloaded before into its cache_dir). ``say``: progress lines while a copy is decoded (its first use)."""
    training = scenario.training
    if training.dataset == "synthetic":
        return synthetic()
    return cifar10(find_cifar10(training), cache_folder(training), say)


def cache_folder(training) -> Path:
    """Where decoded copies are cached (training.cache_dir, default ~/.cache/gcbench)."""
    return Path(training.cache_dir).expanduser() if training.cache_dir else DEFAULT_CACHE


def find_cifar10(training) -> Path:
    """The CIFAR-10 copy a run reads: training.data_dir, else one torchvision downloaded into the cache folder
    before; refused in one sentence where there is none. gcbench downloads nothing itself: a run that reached
    for the network would work on one machine and hang or fail on the next."""
    if training.data_dir is not None:
        return check_data_dir(training.data_dir)
    downloaded = cache_folder(training) / "cifar-10-batches-py"
    if downloaded.is_dir():
        return downloaded
    raise GcbenchError(
        f"no CIFAR-10 copy (training.data_dir, or --data-dir, is not set, {downloaded} does not exist, and gcbench "
        f'downloads nothing): {HOW_TO_PROVIDE}; or fetch it there once with python -c "from torchvision.datasets '
        f"import CIFAR10; CIFAR10('{cache_folder(training)}', download=True)\"; or run without data, --dataset "
        "synthetic."
    )


def synthetic(train: int = 4096, test: int = 1024, seed: int = 0) -> Dataset:
    """CIFAR-shaped and learnable: each class is a fixed random pattern plus noise."""
    rng = np.random.default_rng(seed)
    patterns = rng.integers(0, 256, (len(CLASSES), 3, 32, 32))

    def draw(count: int) -> tuple[np.ndarray, np.ndarray]:
        labels = rng.integers(0, len(CLASSES), count)
        noise = rng.normal(0, 60, (count, 3, 32, 32))
        return np.clip(patterns[labels] + noise, 0, 255).astype(np.uint8), labels.astype(np.int64)

    return Dataset(*draw(train), *draw(test))


def check_data_dir(data_dir: str | Path) -> Path:
    """The local CIFAR-10 copy's path, refused in one sentence where nothing is there."""
    data_dir = Path(data_dir)
    if not data_dir.exists():
        relative = "" if data_dir.is_absolute() else (
            f"; a relative path is taken from the current directory, so it means {data_dir.resolve()}"
        )  # fmt: skip
        raise GcbenchError(
            f"training.data_dir (the scenario's field, or --data-dir): {data_dir} does not exist{relative}; "
            f"{HOW_TO_PROVIDE}."
        )
    return data_dir


def cifar10(data_dir: Path, cache_dir: Path = DEFAULT_CACHE, say: Callable[[str], None] | None = None) -> Dataset:
    """CIFAR-10 from a local copy, decoded once and cached in ``cache_dir`` (later runs load it in a second)."""
    data_dir = check_data_dir(data_dir)
    cache = cache_dir / f"cifar10-{_fingerprint(data_dir)}.npz"
    if cache.is_file():
        with np.load(cache) as stored:
            return Dataset(*(stored[k] for k in ("train_images", "train_labels", "test_images", "test_labels")))
    if say is not None:
        say(f"decoding CIFAR-10 from {data_dir} (its first use; cached in {cache_dir} for later runs)")
    dataset = _decode(data_dir, say)
    cache_dir.mkdir(parents=True, exist_ok=True)
    np.savez(cache, **dataset.__dict__)
    return dataset


def _fingerprint(path: Path) -> str:
    stat = path.stat()
    return hashlib.sha256(f"{path.resolve()}:{stat.st_size}:{stat.st_mtime_ns}".encode()).hexdigest()[:16]


def _decode(path: Path, say: Callable[[str], None] | None = None) -> Dataset:
    if path.is_file() and path.name.endswith((".tar.gz", ".tgz")):
        return _from_tarball(path, say)
    batches = path if path.name == "cifar-10-batches-py" else path / "cifar-10-batches-py"
    if (batches / "data_batch_1").is_file():
        return _from_python_batches(batches)
    if (path / "train").is_dir() and (path / "test").is_dir():
        return _from_image_folder(path, say)
    raise GcbenchError(f"--data-dir {path}: no CIFAR-10 layout found there; {HOW_TO_PROVIDE}.")


def _from_python_batches(folder: Path) -> Dataset:
    train = [_load_batch(folder / f"data_batch_{i}") for i in range(1, 6)]
    test_images, test_labels = _load_batch(folder / "test_batch")
    return Dataset(
        np.concatenate([t[0] for t in train]),
        np.concatenate([t[1] for t in train]).astype(np.int64),
        test_images,
        test_labels.astype(np.int64),
    )


def _load_batch(path: Path) -> tuple[np.ndarray, np.ndarray]:
    """One python-format batch file: images (N, 3, 32, 32) and labels, unpickled with only numpy's arrays allowed."""
    try:
        with open(path, "rb") as handle:
            batch = BatchUnpickler(handle, encoding="latin1").load()
        data, labels = np.asarray(batch["data"], dtype=np.uint8), np.asarray(batch["labels"], dtype=np.int64)
        images = data.reshape(-1, 3, 32, 32)
    except RefusedGlobal as refused:
        raise GcbenchError(
            f"{path}: refused to unpickle it, as it names {refused}: a genuine CIFAR-10 batch holds only numpy "
            "arrays, lists, strings and numbers, so this file is crafted or damaged."
        ) from None
    except Exception as error:  # anything a damaged file makes the decoding raise is the file's fault
        raise GcbenchError(f"{path}: not a CIFAR-10 python batch ({type(error).__name__}: {error}).") from None
    if len(images) != len(labels):
        raise GcbenchError(f"{path}: not a CIFAR-10 python batch ({len(images)} images but {len(labels)} labels).")
    return images, labels


def _numpy_globals() -> dict[tuple[str, str], object]:
    """The globals a CIFAR-10 batch pickle names, as numpy 1 and 2 (and every pickle protocol) write them."""
    import codecs

    try:
        from numpy._core import multiarray, numeric  # numpy 2
    except ImportError:  # numpy 1
        from numpy.core import multiarray, numeric
    allowed: dict[tuple[str, str], object] = {("numpy", "ndarray"): np.ndarray, ("numpy", "dtype"): np.dtype}
    for core in ("core", "_core"):
        allowed[(f"numpy.{core}.multiarray", "_reconstruct")] = multiarray._reconstruct
        allowed[(f"numpy.{core}.numeric", "_frombuffer")] = numeric._frombuffer
    allowed[("_codecs", "encode")] = codecs.encode  # how Python 3 pickles bytes with protocol 2
    return allowed


class BatchUnpickler(pickle.Unpickler):
    """An unpickler for CIFAR-10's python batches that loads numpy arrays and nothing else.

    pickle.load runs whatever callable a file names, so a crafted data folder
    could run code; a batch only holds a dict of lists, strings, numbers and one
    uint8 array, which need no global but numpy's array reconstruction.
    """

    ALLOWED = _numpy_globals()

    def find_class(self, module: str, name: str) -> object:
        if (module, name) in self.ALLOWED:
            return self.ALLOWED[(module, name)]
        raise RefusedGlobal(f"{module}.{name}")


class RefusedGlobal(pickle.UnpicklingError):
    """A pickle named a global BatchUnpickler does not load (its text is the global's dotted name)."""


def _image_array(data: bytes) -> np.ndarray:
    from PIL import Image

    with Image.open(io.BytesIO(data)) as image:
        return np.asarray(image.convert("RGB"), dtype=np.uint8).transpose(2, 0, 1)


def _collect(entries, say: Callable[[str], None] | None = None) -> Dataset:
    """entries: (split, class name, bytes) triples, in any order; sorted for a stable dataset. ``say``: a line
    every DECODE_EVERY images decoded."""
    splits: dict[str, list] = {"train": [], "test": []}
    for split, name, key, data in entries:
        if split in splits and name in CLASSES:
            splits[split].append((CLASSES.index(name), key, data))
    total, done, arrays = sum(len(items) for items in splits.values()), 0, []
    for split in ("train", "test"):
        items = sorted(splits[split], key=lambda item: (item[0], item[1]))
        if not items:
            raise GcbenchError(f"the CIFAR-10 copy has no {split} images; {HOW_TO_PROVIDE}.")
        images = []
        for _, _, data in items:
            images.append(_image_array(data))
            done += 1
            if say is not None and (done % DECODE_EVERY == 0 or done == total):
                say(f"  decoded {done} of {total} images")
        arrays += [np.stack(images), np.array([c for c, _, _ in items], dtype=np.int64)]
    return Dataset(*arrays)


def _from_image_folder(root: Path, say: Callable[[str], None] | None = None) -> Dataset:
    return _collect(
        ((p.parent.parent.name, p.parent.name, p.name, p.read_bytes()) for p in sorted(root.glob("*/*/*"))
         if p.is_file()), say)  # fmt: skip


def _from_tarball(path: Path, say: Callable[[str], None] | None = None) -> Dataset:
    def entries():
        with tarfile.open(path, "r:gz") as archive:
            for member in archive:
                parts = Path(member.name).parts
                if member.isfile() and len(parts) >= 3:
                    yield parts[-3], parts[-2], parts[-1], archive.extractfile(member).read()

    return _collect(entries(), say)
