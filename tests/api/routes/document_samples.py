"""Small real files of every default document type, written from scratch for the document tests.

Images are written by GDAL (rasterio) with a known left/right colour split, the PDF is a
complete one-page PDF whose page is red on the left and blue on the right, the Office files are
real containers (an Office Open XML package, an xlsx from openpyxl, Compound Files holding the
stream Word or Excel keeps its content in).
"""

from __future__ import annotations

import io
import struct
import warnings
import zipfile
from pathlib import Path

import numpy as np
import openpyxl
import rasterio
from rasterio.io import MemoryFile

import cartotheca  # noqa: F401  (pins PROJ_DATA before rasterio is imported)

RED, BLUE = (255, 0, 0), (0, 0, 255)
IMAGE_SIZE = (40, 20)  # width, height: left half red, right half blue


def split_pixels(width: int = IMAGE_SIZE[0], height: int = IMAGE_SIZE[1]) -> np.ndarray:
    pixels = np.zeros((3, height, width), dtype=np.uint8)
    for band in range(3):
        pixels[band, :, : width // 2] = RED[band]
        pixels[band, :, width // 2:] = BLUE[band]
    return pixels


def image_bytes(driver: str, *, palette: bool = False) -> bytes:
    pixels = split_pixels()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", rasterio.errors.NotGeoreferencedWarning)
        with MemoryFile() as memory:
            if palette:  # GIF holds one band of palette indices
                index = np.where(pixels[0] == 255, 1, 2).astype(np.uint8)[None]
                with memory.open(driver=driver, width=index.shape[2], height=index.shape[1],
                                 count=1, dtype="uint8") as dst:
                    dst.write(index)
                    dst.write_colormap(1, {0: (0, 0, 0, 255), 1: (*RED, 255), 2: (*BLUE, 255)})
            else:
                with memory.open(driver=driver, width=pixels.shape[2], height=pixels.shape[1],
                                 count=3, dtype="uint8") as dst:
                    dst.write(pixels)
            return memory.read()


def pdf_bytes(width: int = 200, height: int = 100) -> bytes:
    """A one-page PDF: the left half of the page red, the right half blue."""
    half = width // 2
    stream = f"1 0 0 rg 0 0 {half} {height} re f 0 0 1 rg {half} 0 {width - half} {height} re f".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        f"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {width} {height}] /Contents 4 0 R >>".encode(),
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
    ]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for offset in offsets:
        out.write(b"%010d 00000 n \n" % offset)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n"
              % (len(objects) + 1, xref))
    return out.getvalue()


def docx_bytes(text: str = "Field report") -> bytes:
    """A minimal but complete WordprocessingML package."""
    types = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
        '<Default Extension="rels" ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
        '<Default Extension="xml" ContentType="application/xml"/>'
        '<Override PartName="/word/document.xml" ContentType="application/'
        'vnd.openxmlformats-officedocument.wordprocessingml.document.main+xml"/></Types>'
    )
    rels = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
        '<Relationship Id="rId1" Type="http://schemas.openxmlformats.org/officeDocument/2006/'
        'relationships/officeDocument" Target="word/document.xml"/></Relationships>'
    )
    document = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>'
        '<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main">'
        f'<w:body><w:p><w:r><w:t>{text}</w:t></w:r></w:p></w:body></w:document>'
    )
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("[Content_Types].xml", types)
        archive.writestr("_rels/.rels", rels)
        archive.writestr("word/document.xml", document)
    return out.getvalue()


def xlsx_bytes() -> bytes:
    book = openpyxl.Workbook()
    book.active.append(["station", "value"])
    book.active.append(["A", 1.5])
    out = io.BytesIO()
    book.save(out)
    return out.getvalue()


def compound_file(stream_name: str, payload: bytes = b"") -> bytes:
    """A version 3 Compound File (legacy Office container) holding one stream ``stream_name``
    of 4096 bytes: header, one FAT sector, one directory sector, eight data sectors."""
    end, free, fat_sector, nostream = 0xFFFFFFFE, 0xFFFFFFFF, 0xFFFFFFFD, 0xFFFFFFFF
    header = bytearray(512)
    header[0:8] = b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"
    struct.pack_into("<HHHHH", header, 24, 0x003E, 0x0003, 0xFFFE, 9, 6)
    struct.pack_into("<IIIIIIIII", header, 40, 0, 1, 1, 0, 4096, end, 0, end, 0)
    struct.pack_into("<I", header, 76, 0)
    for index in range(1, 109):
        struct.pack_into("<I", header, 76 + 4 * index, free)
    fat = [fat_sector, end] + [3, 4, 5, 6, 7, 8, 9, end] + [free] * 118
    fat_bytes = struct.pack("<128I", *fat)

    def entry(name: str, kind: int, child: int, start: int, size: int) -> bytes:
        raw = bytearray(128)
        encoded = (name + "\x00").encode("utf-16-le") if name else b""
        raw[0:len(encoded)] = encoded
        struct.pack_into("<HBB", raw, 64, len(encoded), kind, 1)
        struct.pack_into("<III", raw, 68, nostream, nostream, child)
        struct.pack_into("<IQ", raw, 116, start, size)
        return bytes(raw)

    directory = (entry("Root Entry", 5, 1, end, 0) + entry(stream_name, 2, nostream, 2, 4096)
                 + entry("", 0, nostream, 0, 0) * 2)
    data = (payload + b"\x00" * 4096)[:4096]
    return bytes(header) + fat_bytes + directory + data


def zip_bytes() -> bytes:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as archive:
        archive.writestr("readme.txt", "stations\n")
        archive.writestr("data/values.csv", "a,b\n1,2\n")
    return out.getvalue()


def samples() -> dict[str, bytes]:
    """One real file per default ALLOWED_DOCUMENT_TYPES extension."""
    tiff = image_bytes("GTiff")
    jpeg = image_bytes("JPEG")
    return {
        "txt": "Stations\nvalue: 12,5 °C\n".encode(),
        "pdf": pdf_bytes(),
        "png": image_bytes("PNG"),
        "jpg": jpeg,
        "jpeg": jpeg,
        "gif": image_bytes("GIF", palette=True),
        "tif": tiff,
        "tiff": tiff,
        "zip": zip_bytes(),
        "docx": docx_bytes(),
        "xlsx": xlsx_bytes(),
        "doc": compound_file("WordDocument", b"\xec\xa5"),
        "xls": compound_file("Workbook", b"\x09\x08"),
    }


def write_sample(folder: Path, extension: str, name: str = "sample") -> Path:
    path = folder / f"{name}.{extension}"
    path.write_bytes(samples()[extension])
    return path
