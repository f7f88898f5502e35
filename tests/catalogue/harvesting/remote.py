"""A second Cartotheca server to harvest: its own SQLite database and data directory, on a free port.

Its catalogue is filled in this process through the real publishing code (two datasets and a
document), then ``cartotheca serve`` serves it. ``stop()`` and ``start()`` take it down and bring it
back on the same port, so a test can see a harvester meet an unavailable remote.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import httpx

from cartotheca.api.app import create_app
from cartotheca.catalogue import documents
from cartotheca.catalogue.accounts import internal_group_ids
from cartotheca.catalogue.auth import InternalGroups, principal_for
from cartotheca.db.models import User
from cartotheca.settings import Settings
from tests.conftest import ADMIN_PASSWORD, basic
from tests.geodata.fixtures import publish_file, write_points, write_polygons
from tests.support.ports import free_port
from tests.support.processes import LiveServer, outside_environment, start_server, stop, wait_until_up

ADMIN = basic("admin", ADMIN_PASSWORD)


class RemoteCatalogue:
    def __init__(self, folder: Path):
        self.folder = folder
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}/"
        self.values = dict(
            DATA_DIR=str(folder / "data"), DATABASE_URL=f"sqlite:///{folder / 'remote.sqlite3'}",
            SITEURL=self.url, ADMIN_USER="admin", ADMIN_PASSWORD=ADMIN_PASSWORD,
            SECRET_KEY="remote-secret", PASSWORD_HASH_TIME_COST="1", PASSWORD_HASH_MEMORY_KIB="1024",
            PASSWORD_HASH_PARALLELISM="1", MONITORING_ENABLED="false", STORAGE_BACKEND="geopackage",
        )
        self.server = LiveServer(url=self.url, log=folder / "server.log")
        self.proc: subprocess.Popen | None = None
        self.starting = False

    def populate(self) -> None:
        settings = Settings(**self.values)
        app = create_app(settings)
        sessions = app.state.cartotheca.sessions
        with sessions() as db:
            owner = db.query(User).filter_by(username="admin").one()
            publish_file(db, settings, owner, write_points(self.folder), title="Remote points")
            publish_file(db, settings, owner, write_polygons(self.folder), title="Remote polygons")
            text = self.folder / "report.txt"
            text.write_text("a harvested report\n")
            anonymous_id, registered_id = internal_group_ids(db, settings)
            principal = principal_for(db, owner, InternalGroups(anonymous_id, registered_id), "job")
            documents.create_document(db, principal, settings, documents.NewDocument(
                title="Remote report", abstract="About the remote", file=text, file_name="report.txt"))
            db.commit()
        app.state.cartotheca.engine.dispose()

    def start(self, *, wait: bool = True) -> None:
        env = outside_environment()
        env.update({f"CARTOTHECA_{k}": v for k, v in self.values.items()}, CARTOTHECA_LOG_LEVEL="warning")
        self.proc = start_server(self.port, env, self.server.log)
        self.starting = True
        if wait:
            self.ensure_up()

    def ensure_up(self) -> None:
        """Wait for a server started without waiting (after a test stopped it)."""
        if self.proc is None:
            self.start()
        elif self.starting:
            wait_until_up(self.proc, self.server)
            self.starting = False

    def stop(self) -> None:
        if self.proc is not None:
            if self.starting:  # never served: nothing to shut down gracefully
                self.proc.kill()
                self.proc.wait(timeout=10)
            else:
                stop(self.proc)
            self.proc, self.starting = None, False

    def resources(self) -> list[dict]:
        response = httpx.get(f"{self.url}api/v2/resources/", params={"page_size": 100}, timeout=10)
        response.raise_for_status()
        return response.json()["resources"]

    def patch(self, pk: int, **values) -> None:
        response = httpx.patch(f"{self.url}api/v2/resources/{pk}", json=values, headers=ADMIN,
                               timeout=10)
        assert response.status_code == 200, response.text

    def post_document(self, title: str) -> dict:
        response = httpx.post(f"{self.url}api/v2/documents", headers=ADMIN, timeout=10,
                              data={"title": title},
                              files={"doc_file": ("note.txt", b"short-lived\n", "text/plain")})
        assert response.status_code in (200, 201), response.text
        return response.json()["document"]

    def delete(self, pk: int) -> None:
        response = httpx.delete(f"{self.url}api/v2/resources/{pk}", headers=ADMIN, timeout=10)
        assert response.status_code in (200, 204), response.text
