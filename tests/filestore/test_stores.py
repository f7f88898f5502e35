"""The file store contract: the same assertions against the local folder and an S3 bucket."""

from __future__ import annotations

import io
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cartotheca.errors import InvalidInput, StoreUnavailable
from cartotheca.filestore import FileStore
from cartotheca.filestore.local import LocalFileStore
from cartotheca.filestore.s3 import PART_BYTES, S3FileStore
from cartotheca.filestore.stores import ConfigurationError, file_store
from tests.support.s3 import CREDENTIALS, S3Server, s3_server, store_settings

DATA = bytes(range(256)) * 1000  # 256 000 bytes: more than one read chunk


def s3_store(server: S3Server, bucket: str, prefix: str = "base") -> S3FileStore:
    return S3FileStore.connect(f"s3://{bucket}/{prefix}", endpoint_url=server.endpoint,
                               region=CREDENTIALS["AWS_REGION"], access_key=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                               secret_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])


@pytest.fixture(params=["local", "s3"])
def store(request, tmp_path) -> Iterator[FileStore]:
    if request.param == "local":
        yield LocalFileStore(tmp_path / "data")
        return
    server = request.getfixturevalue("s3")
    yield s3_store(server, server.new_bucket())


def joined(chunks: Iterator[bytes]) -> bytes:
    return b"".join(chunks)


def test_put_and_read_back(store, tmp_path):
    store.put_bytes("documents/a/report.pdf", DATA)
    assert store.read_bytes("documents/a/report.pdf") == DATA
    assert joined(store.open_range("documents/a/report.pdf")) == DATA
    source = tmp_path / "source.bin"
    source.write_bytes(DATA[:1000])
    store.put_file("documents/b/file name.bin", source)
    assert store.read_bytes("documents/b/file name.bin") == DATA[:1000]
    store.put("thumbnails/x.png", io.BytesIO(b"png bytes"))
    assert store.read_bytes("thumbnails/x.png") == b"png bytes"
    target = tmp_path / "copy.bin"
    store.download("documents/a/report.pdf", target)
    assert target.read_bytes() == DATA


def test_byte_ranges(store):
    store.put_bytes("r/data.bin", DATA)
    assert joined(store.open_range("r/data.bin", 5, 15)) == DATA[5:15]
    assert joined(store.open_range("r/data.bin", 100_000)) == DATA[100_000:]
    assert joined(store.open_range("r/data.bin", 0, 70_000)) == DATA[:70_000]
    assert joined(store.open_range("r/data.bin", len(DATA) - 7, len(DATA))) == DATA[-7:]


def test_stat_tells_size_tag_and_time_and_changes_with_the_content(store):
    assert store.stat("s/missing.bin") is None
    assert store.read_bytes("s/missing.bin") is None
    store.put_bytes("s/one.bin", DATA)
    first = store.stat("s/one.bin")
    assert first is not None and first.size == len(DATA)
    assert first.etag.startswith('"') and first.etag.endswith('"') and len(first.etag) > 2
    assert first.mtime > 1_700_000_000
    store.put_bytes("s/one.bin", b"other content")
    second = store.stat("s/one.bin")
    assert second is not None and second.size == len(b"other content") and second.etag != first.etag


def test_overwrite_replaces(store):
    store.put_bytes("o/x.txt", b"first")
    store.put_bytes("o/x.txt", b"second")
    assert store.read_bytes("o/x.txt") == b"second"


def test_list_and_delete(store):
    for key in ("documents/u1/a.pdf", "documents/u1/b.txt", "documents/u2/c.pdf", "thumbnails/u1.png"):
        store.put_bytes(key, key.encode())
    assert store.list_prefix("documents/") == [
        "documents/u1/a.pdf", "documents/u1/b.txt", "documents/u2/c.pdf"]
    assert store.list_prefix("documents/u1/") == ["documents/u1/a.pdf", "documents/u1/b.txt"]
    assert store.list_prefix("nothing/") == []
    store.delete("documents/u2/c.pdf")
    store.delete("documents/u2/c.pdf")  # gone already: nothing happens
    assert store.stat("documents/u2/c.pdf") is None
    store.delete_prefix("documents/u1/")
    assert store.list_prefix("documents/") == []
    assert store.read_bytes("thumbnails/u1.png") == b"thumbnails/u1.png"


def test_references_name_keys(store):
    store.put_bytes("documents/u/a.pdf", b"x")
    reference = store.reference("documents/u/a.pdf")
    assert store.key_of(reference) == "documents/u/a.pdf"
    assert store.key_of("/elsewhere/documents/u/a.pdf") is None


def test_keys_cannot_leave_the_store(store):
    for key in ("../secret", "/etc/passwd", "a/../../b", "", "a//b"):
        with pytest.raises(InvalidInput):
            store.put_bytes(key, b"x")


def test_gdal_path_opens_the_object(store):
    store.put_bytes("g/x.bin", b"x")
    path = store.gdal_path("g/x.bin")
    if isinstance(store, LocalFileStore):
        assert path == str(store.root / "g" / "x.bin")
    else:
        assert path == f"/vsis3/{store.bucket}/base/g/x.bin"


def test_an_outage_is_store_unavailable_and_passes(tmp_path):
    with s3_server(tmp_path / "moto.log") as server:
        bucket = server.new_bucket()
        store = s3_store(server, bucket)
        store.put_bytes("k/x.bin", b"x")
        server.stop()
        for call in (lambda: store.stat("k/x.bin"), lambda: store.read_bytes("k/x.bin"),
                     lambda: store.put_bytes("k/y.bin", b"y"), lambda: store.list_prefix("k/"),
                     lambda: store.open_range("k/x.bin", 0, 1)):
            with pytest.raises(StoreUnavailable) as raised:
                call()
            assert raised.value.retry_after > 0
        server.start()  # same port, an empty server: the same client works again
        server.client().create_bucket(Bucket=bucket)
        store.put_bytes("k/x.bin", b"back")
        assert store.read_bytes("k/x.bin") == b"back"


def pieces(data: bytes, size: int) -> Iterator[bytes]:
    return (data[start:start + size] for start in range(0, len(data), size))


def pending_uploads(store) -> list:
    """Multipart uploads begun and neither completed nor aborted (none in a folder)."""
    if isinstance(store, LocalFileStore):
        return [p for p in store.root.rglob(".put-*")]
    return store.client.list_multipart_uploads(Bucket=store.bucket).get("Uploads", [])


@pytest.mark.parametrize("size", [0, 1000, 2 * PART_BYTES + 12_345], ids=["empty", "small", "parts"])
def test_a_writer_stores_pieces_as_one_object_once_committed(store, size):
    data = (DATA * (size // len(DATA) + 1))[:size]
    writer = store.open_writer("uploads/t/base_file/big.bin")
    for piece in pieces(data, 64 * 1024 + 7):
        writer.write(piece)
    assert store.stat("uploads/t/base_file/big.bin") is None  # nothing to read before the commit
    writer.commit()
    info = store.stat("uploads/t/base_file/big.bin")
    assert info is not None and info.size == size
    assert joined(store.open_range("uploads/t/base_file/big.bin")) == data
    assert pending_uploads(store) == []


def test_an_aborted_writer_leaves_nothing(store):
    writer = store.open_writer("uploads/t/base_file/cut.bin")
    for piece in pieces(DATA * 40, 64 * 1024):  # more than one part
        writer.write(piece)
    writer.abort()
    assert store.stat("uploads/t/base_file/cut.bin") is None
    assert store.list_prefix("uploads/") == [] and pending_uploads(store) == []


def test_open_file_seeks_and_reads(store, tmp_path):
    store.put_bytes("f/data.bin", DATA)
    with store.open_file("f/data.bin") as handle:
        assert handle.seekable()
        assert handle.read(10) == DATA[:10]
        handle.seek(-7, io.SEEK_END)
        assert handle.read() == DATA[-7:]
        handle.seek(100_000)
        assert handle.tell() == 100_000 and handle.read(5) == DATA[100_000:100_005]
        assert handle.read(0) == b""
    archive = tmp_path / "a.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("inside/a.txt", "a" * 5000)
        out.writestr("inside/b.txt", "b")
    store.put_file("f/a.zip", archive)
    with store.open_file("f/a.zip") as handle, zipfile.ZipFile(handle) as read:
        assert [i.filename for i in read.infolist()] == ["inside/a.txt", "inside/b.txt"]
        assert read.read("inside/a.txt") == b"a" * 5000
    with pytest.raises(FileNotFoundError):
        store.open_file("f/missing.bin")


def test_put_file_can_take_the_file(store, tmp_path):
    source = tmp_path / "staged.pdf"
    source.write_bytes(DATA)
    store.put_file("documents/m/staged.pdf", source, move=True)
    assert not source.exists()
    assert store.read_bytes("documents/m/staged.pdf") == DATA


def test_the_settings_choose_the_store(make_settings, s3, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    local = file_store(make_settings(DATA_DIR=Path("relative-data")))
    assert isinstance(local, LocalFileStore) and local.root == tmp_path / "relative-data"
    assert local.reference("documents/u/a.pdf") == str(tmp_path / "relative-data/documents/u/a.pdf")
    assert local.key_of("relative-data/documents/u/a.pdf") == "documents/u/a.pdf"
    bucket = s3.new_bucket()
    settings = make_settings(**store_settings(s3, bucket, "one/two"))
    remote = file_store(settings)
    assert isinstance(remote, S3FileStore) and file_store(settings) is remote
    remote.put_bytes("thumbnails/t.png", b"png")
    assert s3.keys(bucket) == ["one/two/thumbnails/t.png"]
    other = file_store(settings.model_copy(update={"OBJECT_STORE_URL": f"s3://{bucket}/three"}))
    assert other is not remote and other.key_of(f"s3://{bucket}/three/thumbnails/t.png") == "thumbnails/t.png"
    with pytest.raises(ConfigurationError, match="expected s3://bucket/prefix"):
        file_store(make_settings(OBJECT_STORE_URL="https://bucket/prefix"))
