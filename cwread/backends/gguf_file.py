"""The little of the GGUF format that preparing the default model needs: read a file's
metadata and tensors, turn Q4_1, Q8_0, F16 and F32 blocks into floats and floats into Q8_0,
write a file back with its metadata as it was.

Written here rather than taken from gguf, llama.cpp's Python library: the `train` extra's
GGUF converter ships its own newer copy of that package under the same name, which the PyPI
release would overwrite (and break the converter). The layouts are ggml's (ggml-common.h);
test_prepared_gguf checks this reader against gguf's where both are installed.
"""

from __future__ import annotations

import mmap
import struct
from dataclasses import dataclass
from pathlib import Path

import numpy as np

MAGIC = b"GGUF"
ALIGNMENT_KEY = "general.alignment"
FILE_TYPE_KEY = "general.file_type"
MOSTLY_Q8_0 = 7  # llama.cpp's file type of a model whose matrices are Q8_0

# metadata value types
STRING, ARRAY = 8, 9
SCALARS = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}
UINT32, FLOAT32 = 4, 6

# tensor types (ggml_type) and their blocks: (values, bytes)
F32, F16, Q4_1, Q8_0 = 0, 1, 3, 8
BLOCKS = {F32: (1, 4), F16: (1, 2), Q4_1: (32, 20), Q8_0: (32, 34)}


class GGUFError(ValueError):
    """A file this reader does not take: not GGUF, another version, a type it cannot read."""


@dataclass(frozen=True)
class Tensor:
    """A tensor's entry: `shape` in ggml's order (the row's length first), `kind` its ggml type,
    `data` its bytes (a view of the mapped file)."""

    name: str
    shape: tuple[int, ...]
    kind: int
    data: memoryview

    @property
    def rows(self) -> tuple[int, int]:
        """(rows, values a row): a matrix as numpy holds it."""
        return int(np.prod(self.shape[1:], dtype=np.int64)), self.shape[0]


@dataclass(frozen=True)
class GGUF:
    """A GGUF file read: its version, its metadata (key: (type, value); arrays as lists) and
    the metadata section's bytes as they are, and its tensors in file order."""

    version: int
    metadata: dict[str, tuple[int, object]]
    metadata_bytes: bytes
    value_at: dict[str, int]  # where each key's value starts in metadata_bytes
    tensors: tuple[Tensor, ...]

    def value(self, key: str, default=None):
        entry = self.metadata.get(key)
        return default if entry is None else entry[1]


class _Cursor:
    def __init__(self, buffer) -> None:
        self.buffer, self.at = buffer, 0

    def take(self, fmt: str):
        value = struct.unpack_from(fmt, self.buffer, self.at)[0]
        self.at += struct.calcsize(fmt)
        return value

    def string(self) -> str:
        size = self.take("<Q")
        if size > len(self.buffer) - self.at:
            raise GGUFError("a string runs past the end of the file")
        text = bytes(self.buffer[self.at : self.at + size]).decode("utf-8", errors="replace")
        self.at += size
        return text

    def value(self, kind: int):
        if kind in SCALARS:
            return self.take(SCALARS[kind])
        if kind == STRING:
            return self.string()
        if kind == ARRAY:
            inner, count = self.take("<I"), self.take("<Q")
            if inner in SCALARS:  # read at once: a vocabulary's scores are 49,152 floats
                size = struct.calcsize(SCALARS[inner]) * count
                values = np.frombuffer(self.buffer, SCALARS[inner], count, self.at).tolist()
                self.at += size
                return values
            return [self.value(inner) for _ in range(count)]
        raise GGUFError(f"unknown metadata type {kind}")


def read_gguf(path: Path) -> GGUF:
    """The file at `path`, mapped (tensor data is read when used); GGUFError if it is not a
    GGUF this reader takes."""
    with open(path, "rb") as f:
        try:
            buffer = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ))
        except ValueError:  # an empty file cannot be mapped
            raise GGUFError(f"{path.name} is empty") from None
    try:
        return _parse(buffer)
    except struct.error:
        raise GGUFError(f"{path.name} ends inside its header") from None


def _parse(buffer: memoryview) -> GGUF:
    cursor = _Cursor(buffer)
    if bytes(buffer[:4]) != MAGIC:
        raise GGUFError("no GGUF header")
    cursor.at = 4
    version, n_tensors, n_keys = cursor.take("<I"), cursor.take("<Q"), cursor.take("<Q")
    if version not in (2, 3):
        raise GGUFError(f"GGUF version {version} is not read here")
    start = cursor.at
    metadata, value_at = {}, {}
    for _ in range(n_keys):
        key, kind = cursor.string(), cursor.take("<I")
        value_at[key] = cursor.at - start
        metadata[key] = (kind, cursor.value(kind))
    metadata_bytes = bytes(buffer[start : cursor.at])
    entries = []
    for _ in range(n_tensors):
        name = cursor.string()
        dims = cursor.take("<I")
        shape = tuple(cursor.take("<Q") for _ in range(dims))
        kind, offset = cursor.take("<I"), cursor.take("<Q")
        entries.append((name, shape, kind, offset))
    alignment = int(metadata.get(ALIGNMENT_KEY, (UINT32, 32))[1])
    data_start = _aligned(cursor.at, alignment)
    tensors = []
    for name, shape, kind, offset in entries:
        if kind not in BLOCKS:
            raise GGUFError(f"{name} is of ggml type {kind}, which is not read here")
        values, size = BLOCKS[kind]
        count = int(np.prod(shape, dtype=np.int64))
        nbytes = count // values * size
        begin = data_start + offset
        if count % values or begin + nbytes > len(buffer):
            raise GGUFError(f"{name} runs past the end of the file")
        tensors.append(Tensor(name, shape, kind, buffer[begin : begin + nbytes]))
    return GGUF(version, metadata, metadata_bytes, value_at, tuple(tensors))


def _aligned(offset: int, alignment: int) -> int:
    return offset + (-offset % alignment)


def to_floats(tensor: Tensor) -> np.ndarray:
    """The tensor's values as float32, shaped (rows, values a row)."""
    rows, width = tensor.rows
    raw = np.frombuffer(tensor.data, dtype=np.uint8)
    if tensor.kind == F32:
        flat = raw.view("<f4").astype(np.float32)
    elif tensor.kind == F16:
        flat = raw.view("<f2").astype(np.float32)
    elif tensor.kind == Q8_0:  # block_q8_0: d (f16), 32 int8
        blocks = raw.reshape(-1, 34)
        d = blocks[:, :2].copy().view("<f2").astype(np.float32)
        flat = (blocks[:, 2:].view(np.int8).astype(np.float32) * d).ravel()
    elif tensor.kind == Q4_1:  # block_q4_1: d, m (f16), 16 bytes: low nibbles the first 16 values
        blocks = raw.reshape(-1, 20)
        d = blocks[:, 0:2].copy().view("<f2").astype(np.float32)
        m = blocks[:, 2:4].copy().view("<f2").astype(np.float32)
        qs = blocks[:, 4:]
        nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=1).astype(np.float32)
        flat = (nibbles * d + m).ravel()
    else:  # read_gguf refuses other types
        raise GGUFError(f"ggml type {tensor.kind} is not read here")
    return flat.reshape(rows, width)


def to_q8_0(values: np.ndarray) -> bytes:
    """float32 rows as ggml's Q8_0 blocks, rounded as quantize_row_q8_0_ref rounds (half away
    from zero, the scale from the block's largest magnitude / 127, kept as f16)."""
    blocks = np.ascontiguousarray(values, dtype=np.float32).reshape(-1, 32)
    d = np.abs(blocks).max(axis=1, keepdims=True) / 127
    with np.errstate(divide="ignore"):
        inverse = np.where(d == 0, 0, 1 / d)
    scaled = blocks * inverse
    q = (np.sign(scaled) * np.floor(np.abs(scaled) + 0.5)).astype(np.int8)  # C's roundf
    out = np.empty((len(blocks), 34), dtype=np.uint8)
    out[:, :2] = d.astype("<f2").view(np.uint8)
    out[:, 2:] = q.view(np.uint8)
    return out.tobytes()


def metadata_entry(key: str, value: str | int | float) -> bytes:
    """One metadata entry's bytes: a string, a uint32 or a float32."""
    name = key.encode()
    head = struct.pack("<Q", len(name)) + name
    if isinstance(value, str):
        text = value.encode()
        return head + struct.pack("<IQ", STRING, len(text)) + text
    if isinstance(value, int):
        return head + struct.pack("<II", UINT32, value)
    return head + struct.pack("<If", FLOAT32, value)


def write_gguf(path: Path, metadata_bytes: bytes, n_keys: int, tensors: list[tuple[str, tuple[int, ...], int, bytes]], alignment: int = 32) -> None:
    """A GGUF v3 file: the metadata section as given (`n_keys` entries), then each (name,
    shape, ggml type, bytes) tensor, its data aligned as llama.cpp reads it."""
    infos, offset = [], 0
    for name, shape, kind, data in tensors:
        encoded = name.encode()
        infos.append(struct.pack("<Q", len(encoded)) + encoded + struct.pack("<I", len(shape))
                     + struct.pack(f"<{len(shape)}Q", *shape) + struct.pack("<IQ", kind, offset))  # fmt: skip
        offset = _aligned(offset + len(data), alignment)
    header = MAGIC + struct.pack("<IQQ", 3, len(tensors), n_keys) + metadata_bytes + b"".join(infos)
    with open(path, "wb") as f:
        f.write(header + b"\0" * (-len(header) % alignment))
        for _, _, _, data in tensors:
            f.write(data)
            f.write(b"\0" * (-len(data) % alignment))


def with_file_type(gguf: GGUF, file_type: int) -> tuple[bytes, int]:
    """The metadata section as read with its general.file_type (a uint32) set to `file_type`,
    appended where it has none; and its number of entries."""
    entry = gguf.metadata.get(FILE_TYPE_KEY)
    if entry is None:
        return gguf.metadata_bytes + metadata_entry(FILE_TYPE_KEY, file_type), len(gguf.metadata) + 1
    if entry[0] != UINT32:
        raise GGUFError(f"{FILE_TYPE_KEY} is not a uint32")
    at = gguf.value_at[FILE_TYPE_KEY]
    return gguf.metadata_bytes[:at] + struct.pack("<I", file_type) + gguf.metadata_bytes[at + 4 :], len(gguf.metadata)
