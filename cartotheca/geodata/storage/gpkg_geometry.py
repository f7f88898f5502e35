"""cartotheca.geodata.storage.gpkg_geometry: GeoPackage geometry blobs to shapely, vectorised.

A GeoPackage blob is an 8-byte header ("GP", version, flags, srs_id), an optional envelope
whose size the flags give, then standard WKB. Python's sqlite3 cannot load SpatiaLite here, so
the headers are cut off in numpy over one contiguous Arrow buffer, and shapely parses the WKB.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pyarrow as pa
import shapely

# Envelope size in bytes by the flags' envelope indicator (bits 1-3): none, xy, xyz, xym, xyzm.
ENVELOPE_BYTES = np.array([0, 32, 48, 48, 64, 0, 0, 0], dtype=np.int64)
HEADER_BYTES = 8


def wkb_offsets(data: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Size of the GeoPackage header (with envelope) of each blob starting at ``starts``."""
    flags = data[starts + 3].astype(np.int64)
    return HEADER_BYTES + ENVELOPE_BYTES[(flags >> 1) & 0b111]


def to_wkb_array(blobs: Sequence[bytes | None]):
    """The WKB parts of GeoPackage blobs as an Arrow binary array (nulls stay null)."""
    array = pa.array(blobs, type=pa.binary())
    n = len(array)
    if n == 0 or array.null_count == n:
        return array
    offsets = np.frombuffer(array.buffers()[1], dtype=np.int32)[array.offset: array.offset + n + 1]
    offsets = offsets.astype(np.int64)
    data = np.frombuffer(array.buffers()[2], dtype=np.uint8)
    lengths = np.diff(offsets)
    valid = lengths >= HEADER_BYTES
    if array.null_count:
        valid &= np.asarray(array.is_valid(), dtype=bool)
    header = np.zeros(n, dtype=np.int64)
    header[valid] = wkb_offsets(data, offsets[:-1][valid])
    header = np.minimum(header, lengths)
    # Drop each blob's header bytes. Header sizes take only a few values (8, 40, 56, 72), so
    # the bytes to drop are marked one size at a time with a 2-D index.
    drop = np.zeros(len(data), dtype=bool)
    starts = offsets[:-1]
    for size in np.unique(header[header > 0]).tolist():
        chosen = starts[header == size]
        drop[(chosen[:, None] + np.arange(size)).ravel()] = True
    new_data = data[~drop]
    new_offsets = (offsets - np.concatenate(([0], np.cumsum(header)))).astype(np.int32)
    validity = array.buffers()[0]
    if array.offset and validity is not None:
        # An offset slice's validity bitmap is not byte-aligned: rebuild it.
        validity = pa.array(np.asarray(array.is_valid(), dtype=bool)).buffers()[1]
    return pa.Array.from_buffers(pa.binary(), n, [validity, pa.py_buffer(new_offsets),
                                                  pa.py_buffer(np.ascontiguousarray(new_data))],
                                 null_count=array.null_count)


def decode(blobs: Sequence[bytes | None]) -> np.ndarray:
    """Shapely geometries (None for null) of GeoPackage geometry blobs."""
    if len(blobs) == 0:
        return np.empty(0, dtype=object)
    wkb = to_wkb_array(blobs).to_numpy(zero_copy_only=False)
    return shapely.from_wkb(np.asarray(wkb, dtype=object), on_invalid="ignore")


def encode(geometries: np.ndarray, srs_id: int) -> list[bytes | None]:
    """GeoPackage blobs (little-endian header with an xy envelope) of shapely geometries; used
    by tests and small writers, the bulk path is GDAL's."""
    out: list[bytes | None] = []
    bounds = shapely.bounds(geometries)
    wkbs = shapely.to_wkb(geometries, byte_order=1, flavor="iso")
    for geom, wkb, box in zip(geometries, wkbs, bounds, strict=True):
        if geom is None:
            out.append(None)
            continue
        empty = shapely.is_empty(geom)
        flags = 0b1 | (0b10000 if empty else 0) | (0 if empty else 0b10)
        header = b"GP\x00" + bytes([flags]) + int(srs_id).to_bytes(4, "little", signed=True)
        envelope = b"" if empty else np.asarray([box[0], box[2], box[1], box[3]], "<f8").tobytes()
        out.append(header + envelope + wkb)
    return out
