"""An S3-compatible server for the object-store tests: moto's server run as its own process on a
free port (no in-process mocking), stoppable and restartable on the same port to play an outage.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import boto3
import httpx

from tests.support.ports import free_port

CREDENTIALS = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing-secret",
               "AWS_REGION": "us-east-1"}
START_TIMEOUT = 60.0


@dataclass
class S3Server:
    port: int
    log: Path
    process: subprocess.Popen | None = field(default=None, repr=False)

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"moto server exited: {self.log.read_text(errors='replace')[-2000:]}")
            try:
                httpx.get(self.endpoint, timeout=1.0)
                return
            except httpx.TransportError:
                time.sleep(0.1)
        raise RuntimeError("moto server did not answer")

    def stop(self) -> None:
        """Stop the server; moto keeps its buckets in memory, so a restart starts empty."""
        if self.process is not None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
            self.process = None

    def client(self):
        return boto3.client("s3", endpoint_url=self.endpoint, region_name=CREDENTIALS["AWS_REGION"],
                            aws_access_key_id=CREDENTIALS["AWS_ACCESS_KEY_ID"],
                            aws_secret_access_key=CREDENTIALS["AWS_SECRET_ACCESS_KEY"])

    def new_bucket(self) -> str:
        name = f"cartotheca-{uuid.uuid4().hex[:12]}"
        self.client().create_bucket(Bucket=name)
        return name

    def keys(self, bucket: str) -> list[str]:
        pages = self.client().get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", []))


@contextmanager
def s3_server(log: Path) -> Iterator[S3Server]:
    server = S3Server(free_port(), log)
    server.start()
    try:
        yield server
    finally:
        server.stop()


def store_settings(server: S3Server, bucket: str, prefix: str = "site") -> dict[str, str]:
    """The settings that put a Cartotheca's files into ``bucket`` on ``server``."""
    return {"OBJECT_STORE_URL": f"s3://{bucket}/{prefix}", "S3_ENDPOINT_URL": server.endpoint,
            **CREDENTIALS}
