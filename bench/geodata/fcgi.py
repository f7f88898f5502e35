"""bench.geodata.fcgi: a warm MapServer ``mapserv`` behind FastCGI, and a minimal client for it.

``MapservFastCGI`` does what ``spawn-fcgi`` does: it binds a Unix socket, listens, and starts
``mapserv`` with that listening socket as its standard input (FastCGI's FCGI_LISTENSOCK_FILENO),
so libfcgi's accept loop serves request after request in one long-lived process. The client
speaks the FastCGI responder role directly over the socket (records: BEGIN_REQUEST, PARAMS,
STDIN; answers: STDOUT, STDERR, END_REQUEST) and keeps the connection between requests.

No HTTP server sits in front of MapServer: that gives MapServer a small head start over
Cartotheca, whose figures include uvicorn's HTTP parsing and response writing. The comparison
therefore errs in MapServer's favour.
"""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import time
from pathlib import Path

VERSION = 1
BEGIN_REQUEST, END_REQUEST, PARAMS, STDIN, STDOUT, STDERR = 1, 3, 4, 5, 6, 7
RESPONDER = 1
KEEP_CONN = 1
HEADER = struct.Struct(">BBHHBx")
REQUEST_ID = 1


def _record(kind: int, body: bytes = b"") -> bytes:
    padding = -len(body) % 8
    return HEADER.pack(VERSION, kind, REQUEST_ID, len(body), padding) + body + b"\0" * padding


def _length(n: int) -> bytes:
    return bytes([n]) if n < 128 else struct.pack(">I", n | 0x80000000)


def _params(params: dict[str, str]) -> bytes:
    out = bytearray()
    for name, value in params.items():
        key, val = name.encode(), value.encode()
        out += _length(len(key)) + _length(len(val)) + key + val
    return bytes(out)


class FastCGIClient:
    """One connection to a FastCGI responder, reused for sequential requests."""

    def __init__(self, path: str):
        self.path = path
        self.sock: socket.socket | None = None

    def _connect(self) -> socket.socket:
        if self.sock is None:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.connect(self.path)
        return self.sock

    def close(self) -> None:
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def _read_exact(self, sock: socket.socket, n: int) -> bytes:
        buf = bytearray()
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("FastCGI connection closed mid-record")
            buf += chunk
        return bytes(buf)

    def request(self, params: dict[str, str]) -> tuple[dict[str, str], bytes, bytes]:
        """Run one request; returns (CGI headers, body, stderr text)."""
        try:
            return self._request(params)
        except (ConnectionError, BrokenPipeError):
            # The responder may close a kept connection (e.g. after an error): reconnect once.
            self.close()
            return self._request(params)

    def _request(self, params: dict[str, str]) -> tuple[dict[str, str], bytes, bytes]:
        sock = self._connect()
        encoded = _params(params)
        message = _record(BEGIN_REQUEST, struct.pack(">HB5x", RESPONDER, KEEP_CONN))
        for i in range(0, len(encoded), 65535):
            message += _record(PARAMS, encoded[i:i + 65535])
        message += _record(PARAMS) + _record(STDIN)
        sock.sendall(message)
        stdout, stderr = bytearray(), bytearray()
        while True:
            _version, kind, _rid, length, padding = HEADER.unpack(self._read_exact(sock, HEADER.size))
            body = self._read_exact(sock, length + padding)[:length]
            if kind == STDOUT:
                stdout += body
            elif kind == STDERR:
                stderr += body
            elif kind == END_REQUEST:
                break
        head, _, payload = bytes(stdout).partition(b"\r\n\r\n")
        headers = {}
        for line in head.decode("latin-1").split("\r\n"):
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        return headers, payload, bytes(stderr)


class MapservFastCGI:
    """A long-running ``mapserv`` answering FastCGI on a Unix socket (spawn-fcgi's job)."""

    def __init__(self, socket_path: Path, env: dict[str, str], mapserv: str = "/usr/bin/mapserv"):
        self.socket_path = socket_path
        self.env = env
        self.mapserv = mapserv
        self.proc: subprocess.Popen | None = None

    def start(self) -> MapservFastCGI:
        self.socket_path.unlink(missing_ok=True)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(str(self.socket_path))
        listener.listen(16)
        try:
            # libfcgi treats a socket on fd 0 as "running under a FastCGI process manager".
            self.proc = subprocess.Popen([self.mapserv], stdin=listener.fileno(), env=self.env,
                                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        finally:
            listener.close()
        time.sleep(0.2)
        if self.proc.poll() is not None:
            raise SystemExit(f"mapserv exited: {self.proc.stderr.read().decode()[-2000:]}")
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.socket_path.unlink(missing_ok=True)

    def __enter__(self) -> MapservFastCGI:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def cgi_params(query: str) -> dict[str, str]:
    """The CGI variables a web server would pass mapserv for ``GET /mapserv?<query>``."""
    return {"GATEWAY_INTERFACE": "CGI/1.1", "REQUEST_METHOD": "GET", "QUERY_STRING": query,
            "SCRIPT_NAME": "/mapserv", "SERVER_NAME": "127.0.0.1", "SERVER_PORT": "80",
            "SERVER_PROTOCOL": "HTTP/1.1", "SERVER_SOFTWARE": "bench", "REMOTE_ADDR": "127.0.0.1",
            "CONTENT_LENGTH": "0", "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
