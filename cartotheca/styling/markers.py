"""cartotheca.styling.markers: the files mapnik draws point marks and external graphics from.

Point marks other than circles are drawn from small SVG files written once, named by their
content, into a marker directory (mapnik reads markers from files). External graphics are taken
only from ``data:`` URIs: a style never makes the server fetch anything. The directory is kept
bounded; ``generation`` changes whenever files are removed, so parsed styles naming a removed
file are parsed (and their files written) again.
"""

from __future__ import annotations

import base64
import hashlib
import math
import os
import tempfile
import urllib.parse
from pathlib import Path

from lxml import etree

from cartotheca.errors import InvalidInput
from cartotheca.styling.params import svg_colour
from cartotheca.xmlsafe import first_child, text_of

MAX_GRAPHIC_BYTES = 1024 * 1024
MAX_MARKER_FILES = 4096
MARKER_DIR = Path(tempfile.gettempdir()) / f"cartotheca-markers-{os.getuid()}"
_pruned = 0  # how many times files were removed


def generation() -> int:
    """Changes whenever marker files are removed."""
    return _pruned


def mark_svg(name: str, size: float, paint: dict[str, str]) -> str:
    # Drawn in a 100-unit box; the outline width is scaled so it stays ``stroke-width`` pixels.
    stroke_units = float(paint["stroke-width"]) * 100.0 / max(size, 1.0)
    inset = stroke_units / 2
    shape = _shape_points(name, inset)
    points = " ".join(f"{x:.2f},{y:.2f}" for x, y in shape)
    svg = (
        '<svg xmlns="http://www.w3.org/2000/svg" width="100" height="100" viewBox="0 0 100 100">'
        f'<polygon points="{points}" fill="{svg_colour(paint["fill"])}" '
        f'fill-opacity="{paint["fill-opacity"]}" stroke="{svg_colour(paint["stroke"])}" '
        f'stroke-width="{stroke_units:.3f}" stroke-opacity="{paint["stroke-opacity"]}" '
        'stroke-linejoin="miter"/></svg>'
    )
    return _marker_file(svg.encode(), ".svg")


def _shape_points(name: str, inset: float) -> list[tuple[float, float]]:
    lo, hi = inset, 100 - inset
    if name == "triangle":
        return [(50, lo), (hi, hi), (lo, hi)]
    if name == "star":
        outer, inner = 50 - inset, (50 - inset) * 0.382
        return [(50 + (outer if i % 2 == 0 else inner) * math.sin(math.pi * i / 5),
                 50 - (outer if i % 2 == 0 else inner) * math.cos(math.pi * i / 5)) for i in range(10)]
    if name in ("cross", "x"):
        a, b = 50 - 12.5, 50 + 12.5  # arms a quarter of the size wide
        plus = [(a, lo), (b, lo), (b, a), (hi, a), (hi, b), (b, b), (b, hi), (a, hi), (a, b),
                (lo, b), (lo, a), (a, a)]
        if name == "cross":
            return plus
        c, s = math.cos(math.pi / 4), math.sin(math.pi / 4)
        return [(50 + (x - 50) * c - (y - 50) * s, 50 + (x - 50) * s + (y - 50) * c) for x, y in plus]
    return [(lo, lo), (hi, lo), (hi, hi), (lo, hi)]


def external_graphic(el: etree._Element) -> str | None:
    resource = first_child(el, "OnlineResource")
    href = resource.get("{http://www.w3.org/1999/xlink}href") if resource is not None else None
    inline = first_child(el, "InlineContent")
    if href is None and inline is not None and inline.get("encoding") == "base64":
        href = f"data:{text_of(first_child(el, 'Format')) or 'image/png'};base64,{text_of(inline) or ''}"
    if not href or not href.startswith("data:"):
        return None  # remote or file graphics are never fetched
    header, _, payload = href[5:].partition(",")
    media_type = header.split(";")[0].strip().lower()
    try:
        data = base64.b64decode(payload, validate=False) if ";base64" in header \
            else urllib.parse.unquote_to_bytes(payload)
    except ValueError:
        return None
    if len(data) > MAX_GRAPHIC_BYTES:
        raise InvalidInput("An ExternalGraphic data URI is larger than 1 MB")
    suffix = {"image/png": ".png", "image/svg+xml": ".svg", "image/jpeg": ".jpg"}.get(media_type)
    if suffix is None:
        return None
    return _marker_file(data, suffix)


def _marker_file(data: bytes, suffix: str) -> str:
    path = MARKER_DIR / f"{hashlib.sha256(data).hexdigest()[:32]}{suffix}"
    if not path.exists():
        MARKER_DIR.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=MARKER_DIR, suffix=suffix)
        with os.fdopen(fd, "wb") as out:
            out.write(data)
        os.replace(tmp, path)
        _prune_markers()
    return str(path)


def _mtime(path: Path) -> float:
    try:
        return path.stat().st_mtime
    except OSError:  # removed meanwhile by another process
        return 0.0


def _prune_markers() -> None:
    """Keep the marker directory bounded: SLD_BODY lets any client add graphics to it."""
    files = [p for p in MARKER_DIR.iterdir() if p.suffix in (".svg", ".png", ".jpg")]
    if len(files) <= MAX_MARKER_FILES:
        return
    files.sort(key=_mtime)
    for old in files[:len(files) // 4]:
        old.unlink(missing_ok=True)
    global _pruned
    _pruned += 1  # parsed styles naming a removed file write it again
