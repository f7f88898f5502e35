"""cartotheca.filestore.s3: the file store as objects in an S3-compatible bucket (AWS S3, MinIO,
Ceph RGW), through boto3.

``OBJECT_STORE_URL=s3://bucket/prefix`` names the bucket and a key prefix; ``S3_ENDPOINT_URL``
a server other than AWS (path-style addressing then, which every S3-compatible server takes).
Uploads go through boto3's transfer manager (multipart for large files); bytes that arrive in
pieces through a multipart upload of our own, one part in memory at a time. Connection failures,
timeouts and the server's own 5xx answers become ``StoreUnavailable``; the client is told to
retry little, so a request fails fast while the store is down and works again once it is back.
"""

from __future__ import annotations

import contextlib
import io
import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO
from urllib.parse import urlsplit

import boto3
import botocore.config
import botocore.exceptions

from cartotheca.errors import StoreUnavailable
from cartotheca.filestore import CHUNK_BYTES, ObjectInfo, ObjectWriter, check_key, check_prefix

log = logging.getLogger("cartotheca.filestore")

# Seconds to connect and to wait for an answer, and attempts in all: an outage answers a
# request within seconds instead of holding its thread.
CONNECT_TIMEOUT = 3
READ_TIMEOUT = 20
ATTEMPTS = 2
# The part size of a written stream: S3 takes parts of 5 MiB or more (the last one may be
# smaller), at most 10 000 of them, so an object written this way stops at about 80 GB.
PART_BYTES = 8 * 1024 * 1024
OUTAGE_ERRORS = (botocore.exceptions.ConnectionError, botocore.exceptions.HTTPClientError,
                 botocore.exceptions.ResponseStreamingError)


@dataclass(frozen=True)
class S3Location:
    bucket: str
    prefix: str  # "" or ending in "/"

    @classmethod
    def parse(cls, url: str) -> S3Location:
        parts = urlsplit(url)
        if parts.scheme != "s3" or not parts.netloc:
            raise ValueError(f"OBJECT_STORE_URL: expected s3://bucket/prefix, got {url!r}")
        prefix = parts.path.strip("/")
        return cls(parts.netloc, f"{prefix}/" if prefix else "")


@contextlib.contextmanager
def _mapped() -> Iterator[None]:
    """Outages of the store as ``StoreUnavailable``; other client errors pass."""
    try:
        yield
    except OUTAGE_ERRORS as exc:
        raise StoreUnavailable() from exc
    except botocore.exceptions.ClientError as exc:
        if exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0) >= 500:
            raise StoreUnavailable() from exc
        raise


def _missing(exc: botocore.exceptions.ClientError) -> bool:
    error = exc.response.get("Error", {})
    return error.get("Code") in ("404", "NoSuchKey", "NotFound") or \
        exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") == 404


class S3FileStore:
    def __init__(self, location: S3Location, client: Any, gdal: dict[str, str] | None = None):
        self.location = location
        self.client = client
        self._gdal = dict(gdal or {})

    @classmethod
    def connect(cls, url: str, *, endpoint_url: str | None = None, region: str | None = None,
                access_key: str | None = None, secret_key: str | None = None) -> S3FileStore:
        config = botocore.config.Config(
            connect_timeout=CONNECT_TIMEOUT, read_timeout=READ_TIMEOUT,
            retries={"total_max_attempts": ATTEMPTS, "mode": "standard"},
            s3={"addressing_style": "path" if endpoint_url else "auto"},
        )
        client = boto3.session.Session().client(
            "s3", endpoint_url=endpoint_url, region_name=region, aws_access_key_id=access_key,
            aws_secret_access_key=secret_key, config=config)
        location = S3Location.parse(url)
        return cls(location, client, _gdal_config(location, endpoint_url, region, access_key, secret_key))

    @property
    def bucket(self) -> str:
        return self.location.bucket

    def _name(self, key: str) -> str:
        return self.location.prefix + check_key(key)

    def put(self, key: str, source: BinaryIO) -> None:
        with _mapped():
            self.client.upload_fileobj(source, self.bucket, self._name(key))

    def put_file(self, key: str, path: Path, *, move: bool = False) -> None:
        with _mapped():
            self.client.upload_file(str(path), self.bucket, self._name(key))
        if move:
            Path(path).unlink(missing_ok=True)

    def put_bytes(self, key: str, data: bytes) -> None:
        with _mapped():
            self.client.put_object(Bucket=self.bucket, Key=self._name(key), Body=data)

    def open_writer(self, key: str) -> ObjectWriter:
        return _MultipartWriter(self.client, self.bucket, self._name(key))

    def open_file(self, key: str) -> BinaryIO:
        info = self.stat(key)
        if info is None:
            raise FileNotFoundError(key)
        return io.BufferedReader(_RangeFile(self, key, info.size), CHUNK_BYTES)

    def open_range(self, key: str, start: int = 0, stop: int | None = None) -> Iterator[bytes]:
        arguments = {"Bucket": self.bucket, "Key": self._name(key)}
        if start or stop is not None:
            arguments["Range"] = f"bytes={start}-{'' if stop is None else stop - 1}"
        with _mapped():
            body = self.client.get_object(**arguments)["Body"]
        return _chunks(body)

    def read_bytes(self, key: str) -> bytes | None:
        with _mapped():
            try:
                body = self.client.get_object(Bucket=self.bucket, Key=self._name(key))["Body"]
            except botocore.exceptions.ClientError as exc:
                if _missing(exc):
                    return None
                raise
            with contextlib.closing(body):
                return body.read()

    def stat(self, key: str) -> ObjectInfo | None:
        with _mapped():
            try:
                head = self.client.head_object(Bucket=self.bucket, Key=self._name(key))
            except botocore.exceptions.ClientError as exc:
                if _missing(exc):
                    return None
                raise
        return ObjectInfo(size=int(head["ContentLength"]), etag=head["ETag"],
                          mtime=head["LastModified"].timestamp())

    def download(self, key: str, target: Path) -> None:
        with _mapped():
            self.client.download_file(self.bucket, self._name(key), str(target))

    def delete(self, key: str) -> None:
        with _mapped():
            self.client.delete_object(Bucket=self.bucket, Key=self._name(key))

    def delete_prefix(self, prefix: str) -> None:
        names = [self.location.prefix + key for key in self.list_prefix(prefix)]
        with _mapped():
            for first in range(0, len(names), 1000):  # the most one DeleteObjects takes
                objects = [{"Key": name} for name in names[first:first + 1000]]
                self.client.delete_objects(Bucket=self.bucket, Delete={"Objects": objects, "Quiet": True})

    def list_prefix(self, prefix: str) -> list[str]:
        full = self.location.prefix + check_prefix(prefix)
        keys: list[str] = []
        with _mapped():
            pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=full)
            for page in pages:
                keys.extend(item["Key"][len(self.location.prefix):] for item in page.get("Contents", []))
        return sorted(keys)

    def gdal_path(self, key: str) -> str:
        return f"/vsis3/{self.bucket}/{self._name(key)}"

    def gdal_config(self) -> dict[str, str]:
        return dict(self._gdal)

    def local_path(self, key: str) -> Path | None:
        return None

    def reference(self, key: str) -> str:
        return f"s3://{self.bucket}/{self._name(key)}"

    def key_of(self, reference: str) -> str | None:
        head = f"s3://{self.bucket}/{self.location.prefix}"
        if not reference.startswith(head):
            return None
        return reference[len(head):]


class _MultipartWriter:
    """One PUT for an object smaller than a part; else a multipart upload sent a part at a time,
    visible only once completed."""

    def __init__(self, client: Any, bucket: str, name: str):
        self._client, self._bucket, self._name = client, bucket, name
        self._buffer = bytearray()
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []

    def write(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= PART_BYTES:
            self._send(bytes(self._buffer[:PART_BYTES]))
            del self._buffer[:PART_BYTES]

    def _send(self, part: bytes) -> None:
        target = {"Bucket": self._bucket, "Key": self._name}
        with _mapped():
            if self._upload_id is None:
                self._upload_id = self._client.create_multipart_upload(**target)["UploadId"]
            number = len(self._parts) + 1
            answer = self._client.upload_part(**target, UploadId=self._upload_id, PartNumber=number,
                                              Body=part)
        self._parts.append({"PartNumber": number, "ETag": answer["ETag"]})

    def commit(self) -> None:
        try:
            if self._upload_id is None:
                with _mapped():
                    self._client.put_object(Bucket=self._bucket, Key=self._name, Body=bytes(self._buffer))
                return
            if self._buffer:
                self._send(bytes(self._buffer))
            with _mapped():
                self._client.complete_multipart_upload(
                    Bucket=self._bucket, Key=self._name, UploadId=self._upload_id,
                    MultipartUpload={"Parts": self._parts})
        except BaseException:
            self.abort()
            raise
        finally:
            self._buffer = bytearray()

    def abort(self) -> None:
        """Called while handling another error: a failure here is logged, not raised. Parts an
        abort could not remove (the store unreachable) stay out of sight, until a bucket rule
        that ends incomplete multipart uploads removes them."""
        self._buffer = bytearray()
        upload_id, self._upload_id = self._upload_id, None
        if upload_id is None:
            return
        try:
            self._client.abort_multipart_upload(Bucket=self._bucket, Key=self._name, UploadId=upload_id)
        except (botocore.exceptions.BotoCoreError, botocore.exceptions.ClientError):
            log.warning("could not abort the multipart upload of %s", self._name, exc_info=True)


class _RangeFile(io.RawIOBase):
    """A stored object as a seekable raw file: each read is one byte-range request."""

    def __init__(self, store: S3FileStore, key: str, size: int):
        self._store, self._key, self._size = store, key, size
        self._position = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self._size}[whence]
        if base + offset < 0:
            raise ValueError("negative seek position")
        self._position = base + offset
        return self._position

    def readinto(self, buffer: Any) -> int:
        stop = min(self._position + len(buffer), self._size)
        if stop <= self._position:
            return 0
        data = b"".join(self._store.open_range(self._key, self._position, stop))
        buffer[:len(data)] = data
        self._position += len(data)
        return len(data)

    def readall(self) -> bytes:
        """The rest of the object in one request (``RawIOBase`` would ask for it in small pieces)."""
        if self._position >= self._size:
            return b""
        data = b"".join(self._store.open_range(self._key, self._position, self._size))
        self._position += len(data)
        return data


def _gdal_config(location: S3Location, endpoint_url: str | None, region: str | None,
                 access_key: str | None, secret_key: str | None) -> dict[str, str]:
    """What GDAL's ``/vsis3/`` needs to reach the same bucket as boto3 does, with the same
    timeouts. Without keys GDAL looks for credentials itself (environment, ``~/.aws``, the
    instance role), as boto3 does."""
    config = {
        "GDAL_DISABLE_READDIR_ON_OPEN": "EMPTY_DIR",  # no listing of the "folder" for side files
        # A key can be written again (a name freed and taken anew): GDAL keeps no size or
        # blocks of an object between two opens, so no reader sees the old object's bytes.
        "CPL_VSIL_CURL_NON_CACHED": f"/vsis3/{location.bucket}/{location.prefix}",
        "GDAL_HTTP_CONNECTTIMEOUT": str(CONNECT_TIMEOUT), "GDAL_HTTP_TIMEOUT": str(READ_TIMEOUT),
        "GDAL_HTTP_MAX_RETRY": str(ATTEMPTS - 1), "GDAL_HTTP_RETRY_DELAY": "0.5",
    }
    if region:
        config["AWS_REGION"] = region
    if endpoint_url:
        parts = urlsplit(endpoint_url)
        config.update(AWS_S3_ENDPOINT=parts.netloc + parts.path.rstrip("/"),
                      AWS_HTTPS="YES" if parts.scheme == "https" else "NO", AWS_VIRTUAL_HOSTING="FALSE")
    if access_key and secret_key:
        config.update(AWS_ACCESS_KEY_ID=access_key, AWS_SECRET_ACCESS_KEY=secret_key)
    return config


def _chunks(body: Any) -> Iterator[bytes]:
    with contextlib.closing(body), _mapped():
        yield from body.iter_chunks(CHUNK_BYTES)
