"""Encoded images (PNG, JPEG) decoded to pixel arrays, so tests check what was drawn."""

from __future__ import annotations

import warnings

import mapnik
import numpy as np
from rasterio.errors import NotGeoreferencedWarning
from rasterio.io import MemoryFile

import cartotheca  # noqa: F401  (PROJ_DATA before mapnik/rasterio)

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def pixels(data: bytes) -> np.ndarray:
    """An encoded image as rows × columns × RGBA, whatever bands it was encoded with."""
    image = mapnik.Image.from_string(data)
    return np.frombuffer(image.to_string(), dtype=np.uint8).reshape(image.height(), image.width(), 4)


def bands(data: bytes) -> np.ndarray:
    """An encoded image's bands as encoded (grey + alpha, RGB, RGB + alpha ...), bands × rows ×
    columns: what a client decoding the file sees, with no conversion to RGBA."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", NotGeoreferencedWarning)  # a map image has no georeference
        with MemoryFile(data) as memory, memory.open() as image:
            return image.read()


def png_bands(data: bytes) -> np.ndarray:
    """``bands`` of data that must be a PNG."""
    assert data[:8] == PNG_SIGNATURE, data[:64]
    return bands(data)
