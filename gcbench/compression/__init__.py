"""Compressors of the messages workers send: a registry, numpy and torch alike; the master decompresses, then
decodes (docs/compression.md).

Public API::

    available_compressors()                  -> registered names
    COMPRESSORS.get(name)(**params)          -> a Compressor
    compressor.compress(vector, key, state)  -> a Payload (its nbytes travel)
    compressor.decompress(payload)           -> the vector
    MessageCompressor(compressor, seed, worker) -> a worker's compressing end, with error-feedback memory
"""

from gcbench.compression._base import KEY_BYTES, Compressor, Key, Payload, as_vector
from gcbench.compression._registry import COMPRESSORS, available_compressors, register_compressor

# isort: split
# registration order is listing order: casts, quantisers, sparsifiers, low rank
from gcbench.compression.casts import BFloat16, Float16, NoCompression

# isort: split
from gcbench.compression.quantisation import QSGD, ScaledSign

# isort: split
from gcbench.compression.sparsification import RandomK, TopK

# isort: split
from gcbench.compression.low_rank import PowerSGD

# isort: split
from gcbench.compression.memory import MessageCompressor
from gcbench.compression.union import Compression, compressor_from, is_valid_compression

__all__ = [
    "COMPRESSORS",
    "KEY_BYTES",
    "QSGD",
    "BFloat16",
    "Compression",
    "Compressor",
    "Float16",
    "Key",
    "NoCompression",
    "Payload",
    "PowerSGD",
    "RandomK",
    "ScaledSign",
    "MessageCompressor",
    "TopK",
    "as_vector",
    "available_compressors",
    "compressor_from",
    "is_valid_compression",
    "register_compressor",
]
