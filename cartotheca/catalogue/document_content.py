"""cartotheca.catalogue.document_content: what a document file really is, and its thumbnail.

The extension of an uploaded file is a claim; ``check_content`` reads the bytes and refuses a
file whose content is not of that kind (a renamed executable is not a PDF). Thumbnails are
drawn from images (GDAL through rasterio) and from a PDF's first page (PDFium).
"""

from __future__ import annotations

import codecs
import threading
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pypdfium2 as pdfium
import rasterio
from rasterio.enums import Resampling

from cartotheca.errors import InvalidInput

# GeoNode's document subtypes (clients choose a viewer by them: "image" is shown in an <img>,
# which is why GeoNode files TIFFs, which browsers cannot show, under "archive").
SUBTYPES = {
    "txt": "text", "log": "text", "csv": "text", "doc": "text", "docx": "text", "odt": "text",
    "ods": "text", "xls": "text", "xlsx": "text", "xml": "text", "sld": "text", "qml": "text",
    "bmp": "image", "gif": "image", "jpg": "image", "jpe": "image", "jpeg": "image", "png": "image",
    "tif": "archive", "tiff": "archive", "dwg": "archive", "dxf": "archive",
    "odp": "presentation", "ppt": "presentation", "pptx": "presentation", "pdf": "presentation",
    "zip": "archive", "gz": "archive", "tar": "archive", "tgz": "archive", "7z": "archive",
    "mp3": "audio", "wav": "audio", "mp4": "video", "ogg": "video", "webm": "video",
}
MIME_TYPES = {
    "txt": "text/plain", "log": "text/plain", "csv": "text/csv", "xml": "application/xml",
    "pdf": "application/pdf", "zip": "application/zip",
    "doc": "application/msword", "xls": "application/vnd.ms-excel",
    "ppt": "application/vnd.ms-powerpoint",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "pptx": "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    "odt": "application/vnd.oasis.opendocument.text",
    "ods": "application/vnd.oasis.opendocument.spreadsheet",
    "odp": "application/vnd.oasis.opendocument.presentation",
    "jpg": "image/jpeg", "jpeg": "image/jpeg", "jpe": "image/jpeg", "png": "image/png",
    "gif": "image/gif", "tif": "image/tiff", "tiff": "image/tiff", "bmp": "image/bmp",
}
IMAGE_EXTENSIONS = frozenset({"png", "jpg", "jpeg", "jpe", "gif", "tif", "tiff"})
MAX_THUMBNAIL_SOURCE_PIXELS = 200_000_000  # declared image size beyond which no thumbnail is drawn
SCAN_CHUNK = 1 << 20

OLE2 = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
TIFF = (b"II*\x00", b"MM\x00*", b"II+\x00", b"MM\x00+")  # classic and BigTIFF, both byte orders
BINARY_SIGNATURES = (b"%PDF-", b"PK\x03\x04", OLE2, b"\x89PNG", b"\xff\xd8\xff", b"GIF8", *TIFF)


def subtype_of(extension: str) -> str:
    return SUBTYPES.get(extension, "text")


def mime_type_of(extension: str) -> str:
    return MIME_TYPES.get(extension, "application/octet-stream")


def _head(path: Path, size: int = 2048) -> bytes:
    with path.open("rb") as handle:
        return handle.read(size)


def _pdf(path: Path) -> bool:
    # Readers accept a header anywhere in the first kilobyte (some generators write junk first).
    return b"%PDF-" in _head(path, 1024)


def _png(path: Path) -> bool:
    return _head(path, 8) == b"\x89PNG\r\n\x1a\n"


def _jpeg(path: Path) -> bool:
    return _head(path, 3) == b"\xff\xd8\xff"


def _gif(path: Path) -> bool:
    return _head(path, 6) in (b"GIF87a", b"GIF89a")


def _tiff(path: Path) -> bool:
    return _head(path, 4) in TIFF


def _bmp(path: Path) -> bool:
    return _head(path, 2) == b"BM"


def _zip(path: Path) -> bool:
    """A zip archive whose central directory can be read."""
    try:
        with zipfile.ZipFile(path) as archive:
            archive.infolist()
    except (zipfile.BadZipFile, OSError, ValueError, EOFError):
        return False
    return True


def _ooxml(kind: str) -> Callable[[Path], bool]:
    """An Office Open XML package of ``kind`` (wordprocessingml, spreadsheetml, presentationml):
    a zip with ``[Content_Types].xml`` declaring a main part of that kind."""

    def check(path: Path) -> bool:
        try:
            with zipfile.ZipFile(path) as archive:
                info = archive.getinfo("[Content_Types].xml")
                if info.file_size > 1 << 20:
                    return False
                with archive.open(info) as handle:
                    declared = handle.read(1 << 20)
        except (KeyError, zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError):
            return False
        return f"openxmlformats-officedocument.{kind}".encode() in declared

    return check


def _opendocument(mime: str) -> Callable[[Path], bool]:
    """An OpenDocument package: a zip whose ``mimetype`` member names ``mime``."""

    def check(path: Path) -> bool:
        try:
            with zipfile.ZipFile(path) as archive, archive.open("mimetype") as handle:
                return handle.read(256).strip() == mime.encode()
        except (KeyError, zipfile.BadZipFile, OSError, ValueError, EOFError, RuntimeError):
            return False

    return check


def _ole2(*streams: str) -> Callable[[Path], bool]:
    """A Compound File (legacy Office) holding one of ``streams`` (WordDocument for .doc,
    Workbook or Book for .xls): the names are in the directory sectors, UTF-16 encoded,
    wherever the file put them, so the file is scanned for them chunk by chunk."""
    needles = [s.encode("utf-16-le") for s in streams]

    def check(path: Path) -> bool:
        if _head(path, 8) != OLE2:
            return False
        overlap = max(len(n) for n in needles)
        tail = b""
        with path.open("rb") as handle:
            while chunk := handle.read(SCAN_CHUNK):
                window = tail + chunk
                if any(n in window for n in needles):
                    return True
                tail = window[-overlap:]
        return False

    return check


def _text(path: Path) -> bool:
    """Text: UTF-8 (or UTF-16 with its byte order mark), or a single-byte encoding; no NUL
    and no control characters other than whitespace, escape and form feed."""
    head = _head(path, 8)
    if head.startswith(BINARY_SIGNATURES):
        return False  # a PDF, image or container renamed to .txt is not text, however clean
    if head.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return _decodes(path, "utf-16")
    allowed = {9, 10, 12, 13, 27}
    controls = bytes(c for c in range(32) if c not in allowed) + b"\x7f"
    with path.open("rb") as handle:
        while chunk := handle.read(SCAN_CHUNK):
            if any(c in chunk for c in controls):
                return False
    return True


def _decodes(path: Path, encoding: str) -> bool:
    decoder = codecs.getincrementaldecoder(encoding)()
    try:
        with path.open("rb") as handle:
            while chunk := handle.read(SCAN_CHUNK):
                text = decoder.decode(chunk)
                if "\x00" in text:
                    return False
            decoder.decode(b"", final=True)
    except UnicodeDecodeError:
        return False
    return True


def _xml(path: Path) -> bool:
    return _text(path) and _head(path, 1024).lstrip(b"\xef\xbb\xbf \t\r\n").startswith(b"<")


SNIFFERS: dict[str, Callable[[Path], bool]] = {
    "pdf": _pdf, "png": _png, "jpg": _jpeg, "jpeg": _jpeg, "jpe": _jpeg, "gif": _gif,
    "tif": _tiff, "tiff": _tiff, "bmp": _bmp, "zip": _zip,
    "docx": _ooxml("wordprocessingml"), "xlsx": _ooxml("spreadsheetml"),
    "pptx": _ooxml("presentationml"),
    "odt": _opendocument(MIME_TYPES["odt"]), "ods": _opendocument(MIME_TYPES["ods"]),
    "odp": _opendocument(MIME_TYPES["odp"]),
    "doc": _ole2("WordDocument"), "xls": _ole2("Workbook", "Book"),
    "ppt": _ole2("PowerPoint Document"),
    "txt": _text, "log": _text, "csv": _text, "sld": _xml, "qml": _xml, "xml": _xml,
}


def check_content(path: Path, extension: str) -> None:
    """InvalidInput unless the file's bytes are of the kind its extension claims.

    Extensions an administrator allows beyond those known here are stored without a check of
    their content; they are only ever served as downloads (``attachment``, never rendered).
    """
    sniff = SNIFFERS.get(extension)
    if sniff is None:
        return
    if path.stat().st_size == 0 or not sniff(path):
        raise InvalidInput(f"The content of the file is not a valid .{extension} file",
                           code="document_exception")


def is_checked(extension: str) -> bool:
    return extension in SNIFFERS


# -- thumbnails -------------------------------------------------------------------------------

# PDFium is not thread safe: one page is rendered at a time in the process.
_pdfium_lock = threading.Lock()


def thumbnail_pixels(path: Path, extension: str, size: tuple[int, int]) -> np.ndarray | None:
    """RGBA pixels (4, height, width) fitting ``size`` for an image or a PDF's first page;
    None for other kinds or files that cannot be drawn."""
    try:
        if extension in IMAGE_EXTENSIONS:
            return _image_pixels(path, size)
        if extension == "pdf":
            return _pdf_pixels(path, size)
    except Exception:  # noqa: BLE001 - a thumbnail is welcome, never required
        return None
    return None


def _fit(width: int, height: int, size: tuple[int, int]) -> tuple[int, int]:
    scale = min(size[0] / width, size[1] / height, 1.0)
    return max(1, round(width * scale)), max(1, round(height * scale))


def _image_pixels(path: Path, size: tuple[int, int]) -> np.ndarray | None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)
        with rasterio.open(path) as src:
            if src.width * src.height > MAX_THUMBNAIL_SOURCE_PIXELS:
                return None
            width, height = _fit(src.width, src.height, size)
            bands = min(src.count, 4)
            pixels = src.read(list(range(1, bands + 1)), out_shape=(bands, height, width),
                              resampling=Resampling.average)
            palette = src.colormap(1) if src.count == 1 and _has_palette(src) else None
            return _rgba(_to_bytes(pixels), palette)


def _has_palette(src) -> bool:
    try:
        return src.colorinterp[0].name == "palette"
    except (IndexError, ValueError):
        return False


def _to_bytes(pixels: np.ndarray) -> np.ndarray:
    """8-bit bands; wider data (16-bit, float) stretched from its own range to 0..255."""
    if pixels.dtype == np.uint8:
        return pixels
    data = pixels.astype("float64")
    finite = np.isfinite(data)
    if not finite.any():
        return np.zeros(pixels.shape, dtype=np.uint8)
    low, high = float(data[finite].min()), float(data[finite].max())
    scaled = (np.where(finite, data, low) - low) * (255.0 / (high - low) if high > low else 0.0)
    return np.clip(scaled, 0, 255).astype(np.uint8)


def _rgba(pixels: np.ndarray, palette: dict | None) -> np.ndarray:
    count, height, width = pixels.shape
    if palette is not None:
        table = np.zeros((256, 4), dtype=np.uint8)
        for index, colour in palette.items():
            if 0 <= index < 256:
                table[index] = colour
        return np.moveaxis(table[pixels[0]], -1, 0)
    opaque = np.full((1, height, width), 255, dtype=np.uint8)
    if count == 1:
        return np.concatenate([pixels, pixels, pixels, opaque])
    if count == 2:
        return np.concatenate([pixels[:1], pixels[:1], pixels[:1], pixels[1:2]])
    if count == 3:
        return np.concatenate([pixels, opaque])
    return pixels[:4]


def _pdf_pixels(path: Path, size: tuple[int, int]) -> np.ndarray | None:
    with _pdfium_lock:
        document = pdfium.PdfDocument(str(path))
        try:
            if len(document) == 0:
                return None
            page = document[0]
            try:
                page_width, page_height = page.get_size()
                if page_width <= 0 or page_height <= 0:
                    return None
                scale = min(size[0] / page_width, size[1] / page_height)
                bitmap = page.render(scale=scale, fill_color=(255, 255, 255, 255))
                try:
                    pixels = np.array(bitmap.to_numpy(), copy=True)
                    mode = bitmap.mode
                finally:
                    bitmap.close()
            finally:
                page.close()
        finally:
            document.close()
    return _bitmap_rgba(pixels, mode)


def _bitmap_rgba(pixels: np.ndarray, mode: str) -> np.ndarray:
    """PDFium's bitmap (height, width, channels in ``mode`` order: BGR, BGRA, BGRX, L) as RGBA."""
    if pixels.ndim == 2:
        pixels = pixels[:, :, None]
    height, width, _ = pixels.shape
    if mode == "L":
        grey = pixels[:, :, 0]
        rgb = np.stack([grey, grey, grey])
    else:
        rgb = np.stack([pixels[:, :, mode.index(c)] for c in "RGB"])
    alpha = pixels[:, :, mode.index("A")][None] if "A" in mode else np.full(
        (1, height, width), 255, dtype=np.uint8)
    return np.concatenate([rgb, alpha]).astype(np.uint8)
