"""Several Cartotheca nodes on one machine, as they run on several: Debian's nginx balancing two
``cartotheca serve`` processes, one ``cartotheca worker`` (Celery over RabbitMQ), PostgreSQL as
the catalogue and PostGIS as the vector datastore, one shared ``SECRET_KEY``.

Each process has a ``DATA_DIR`` of its own, empty at start, as if on a machine of its own; what
they share goes through the database, the datastore, the broker and the object store, where
uploads wait for their import too. Without an object store's settings the uploads are staged in
one ``UPLOAD_DIR`` folder every process is given (a network mount in a real deployment), and
rasters and documents stay on the disk of the process that wrote them. nginx runs unprivileged
from a prefix folder of its own (``nginx -p DIR -c nginx.conf``), retries idempotent requests
on the other node when one fails, and forwards the client's address, scheme and host.

Used by ``tests/cluster/`` and by ``bench/cluster/run.py`` (a cluster for people to try, and the
soak with a node restart).
"""

from __future__ import annotations

import getpass
import os
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.support.ports import free_port
from tests.support.processes import CLI, STARTUP_TIMEOUT, outside_environment
from tests.support.services import postgres_database, rabbitmq_url

ADMIN_USER, ADMIN_PASSWORD = "admin", "cluster-admin-password"
NGINX = shutil.which("nginx") or "/usr/sbin/nginx"
# Settings of the object store, passed to every process when set in the environment that starts
# the cluster (with or without the CARTOTHECA_ prefix): rasters and documents need one shared
# store once there are several machines.
OBJECT_STORE_SETTINGS = ("OBJECT_STORE_URL", "S3_ENDPOINT_URL", "AWS_ACCESS_KEY_ID",
                         "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION", "AWS_REGION")

NGINX_CONF = """\
{user}worker_processes 1;
pid {prefix}/nginx.pid;
error_log {prefix}/error.log warn;
events {{ worker_connections 4096; }}
http {{
    log_format upstream '$remote_addr "$request" $status $upstream_addr $upstream_status';
    access_log {prefix}/access.log upstream;
    client_body_temp_path {prefix}/client_body;
    proxy_temp_path {prefix}/proxy;
    fastcgi_temp_path {prefix}/fastcgi;
    uwsgi_temp_path {prefix}/uwsgi;
    scgi_temp_path {prefix}/scgi;

    upstream cartotheca {{
{servers}
        keepalive 64;
    }}

    server {{
        listen 127.0.0.1:{port};
        # Uploads are streamed to a node as they arrive (the node enforces its own size limit).
        client_max_body_size {max_body};
        proxy_request_buffering off;

        location / {{
            proxy_pass http://cartotheca;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_set_header Host $http_host;
            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;
            proxy_set_header X-Forwarded-Proto $scheme;
            proxy_set_header X-Forwarded-Host $http_host;
            # GET, HEAD, PUT, DELETE ... are tried on the other node when a node is down or
            # answers 502/503; POST, PATCH and LOCK never are (nginx's default).
            proxy_next_upstream error timeout http_502 http_503;
            proxy_next_upstream_tries 2;
            proxy_connect_timeout 2s;
            proxy_read_timeout 300s;
            proxy_send_timeout 300s;
        }}
    }}
}}
"""


def nginx_conf(prefix: Path, port: int, upstreams: list[str], max_body: str = "1g") -> str:
    """nginx's configuration for balancing ``upstreams`` (``host:port``) from ``port``."""
    servers = "\n".join(f"        server {u} max_fails=1 fail_timeout=2s;" for u in upstreams)
    # Started as root (a container), nginx would hand its workers to "nobody", who cannot
    # write the temporary folders; as anyone else it runs as that user anyway.
    user = f"user {getpass.getuser()};\n" if os.geteuid() == 0 else ""
    return NGINX_CONF.format(user=user, prefix=prefix, port=port, servers=servers, max_body=max_body)


def object_store_settings(environ: Mapping[str, str] = os.environ) -> dict[str, str]:
    """The object store's settings found in ``environ``, as ``CARTOTHECA_`` variables."""
    found = {}
    for name in OBJECT_STORE_SETTINGS:
        value = environ.get(f"CARTOTHECA_{name}") or environ.get(name)
        if value:
            found[f"CARTOTHECA_{name}"] = value
    return found


@dataclass
class Role:
    """One process of the cluster, stopped and started again at will; every start appends to
    its log."""

    name: str
    args: list[str]
    env: dict[str, str]
    log: Path
    url: str | None = None  # a server's own address, ending in "/"
    proc: subprocess.Popen | None = field(default=None, repr=False)

    def start(self) -> Role:
        with self.log.open("ab") as out:
            self.proc = subprocess.Popen(self.args, env=self.env, stdout=out, stderr=subprocess.STDOUT,
                                         stdin=subprocess.DEVNULL, start_new_session=True)
        return self

    def send(self, sig: int = signal.SIGTERM) -> None:
        """``sig`` to the process group (SIGTERM: shut down as under an operator)."""
        if self.proc is not None and self.proc.poll() is None:
            os.killpg(self.proc.pid, sig)

    def stop(self, sig: int = signal.SIGTERM) -> None:
        """``sig``, then SIGKILL if the process has not ended within 15 s."""
        if self.proc is None or self.proc.poll() is not None:
            return
        self.send(sig)
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, signal.SIGKILL)
            self.proc.wait(timeout=10)

    @property
    def running(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def wait_answering(self, path: str = "api/v2/", timeout: float = STARTUP_TIMEOUT) -> None:
        """Until ``path`` under the server's address answers 200."""
        assert self.url is not None
        deadline = time.monotonic() + timeout
        last = ""
        while time.monotonic() < deadline:
            if not self.running:
                raise RuntimeError(f"{self.name} exited:\n{self.log_tail()}")
            try:
                response = httpx.get(self.url + path, timeout=2.0)
                if response.status_code == 200:
                    return
                last = f"HTTP {response.status_code}"
            except httpx.HTTPError as exc:
                last = repr(exc)
            time.sleep(0.2)
        raise RuntimeError(f"{self.name} not answering after {timeout}s ({last}):\n{self.log_tail()}")


@dataclass
class Cluster:
    """A running cluster: ``url`` is nginx, ``nodes`` the serve processes (``a``, ``b``)."""

    url: str
    nodes: dict[str, Role]
    worker: Role
    nginx: Role
    database_url: str
    datastore_url: str
    broker_url: str
    secret_key: str
    data_dirs: dict[str, Path]
    upload_dir: Path | None  # the shared staging folder, only without an object store
    root: Path

    @property
    def a(self) -> Role:
        return self.nodes["a"]

    @property
    def b(self) -> Role:
        return self.nodes["b"]

    def upstream_log(self) -> list[str]:
        """nginx's access log: client address, request, status, the upstreams tried and their
        statuses."""
        path = self.root / "nginx" / "access.log"
        return path.read_text(errors="replace").splitlines() if path.exists() else []

    def restart(self, name: str) -> None:
        node = self.nodes[name]
        node.stop()
        node.start()
        node.wait_answering()

    def describe(self) -> str:
        lines = [f"nginx        {self.url}"]
        lines += [f"node {name}       {node.url}  DATA_DIR {self.data_dirs[name]}"
                  for name, node in self.nodes.items()]
        lines += [f"worker       DATA_DIR {self.data_dirs['worker']}",
                  f"uploads      {self.upload_dir or 'staged in the object store'}",
                  f"catalogue    {self.database_url}", f"datastore    {self.datastore_url}",
                  f"broker       {self.broker_url}",
                  f"admin        {self.a.env['CARTOTHECA_ADMIN_USER']} / "
                  f"{self.a.env['CARTOTHECA_ADMIN_PASSWORD']}",
                  f"logs         {self.root}"]
        return "\n".join(lines)


def stop_all(roles: list[Role]) -> None:
    """Every role told to stop at once, then waited for: their shutdowns overlap."""
    for role in roles:
        role.send()
    for role in roles:
        role.stop()


@contextmanager
def rabbitmq_vhost(prefix: str) -> Iterator[str]:
    """A virtual host of its own on the local RabbitMQ, so no other worker on the same broker
    takes this cluster's executions; removed afterwards. When ``rabbitmqctl`` is missing or may
    not manage the broker (another user, a broker on another machine), the default one."""
    base = rabbitmq_url()
    ctl = shutil.which("rabbitmqctl")
    vhost = f"{prefix}_{uuid.uuid4().hex[:10]}"
    try:
        added = ctl is not None and subprocess.run(
            [ctl, "-q", "add_vhost", vhost], capture_output=True, timeout=60).returncode == 0
    except (OSError, subprocess.SubprocessError):
        added = False
    if not added:
        yield base
        return
    assert ctl is not None
    try:
        subprocess.run([ctl, "-q", "set_permissions", "-p", vhost, "guest", ".*", ".*", ".*"],
                       check=True, capture_output=True, timeout=60)
        yield base.removesuffix("/") + vhost  # amqp://user:password@host:port/<vhost>
    finally:
        subprocess.run([ctl, "-q", "delete_vhost", vhost], capture_output=True, timeout=60)


def _run_once(args: list[str], env: dict[str, str], log: Path) -> None:
    with log.open("ab") as out:
        done = subprocess.run(args, env=env, stdout=out, stderr=subprocess.STDOUT, timeout=STARTUP_TIMEOUT)
    if done.returncode != 0:
        raise RuntimeError(f"{' '.join(args[-1:])} failed:\n{log.read_text(errors='replace')[-3000:]}")


@contextmanager
def running_cluster(root: Path, *, settings: Mapping[str, str] | None = None,
                    nginx_port: int | None = None) -> Iterator[Cluster]:
    """Start a cluster under ``root`` (logs, data folders, nginx's prefix); stop it afterwards.

    ``settings`` (``NAME: value``, without the prefix) go to every process, after the
    cluster's own; the object store's settings are taken from the environment. The schema is
    migrated once before any node starts, node A starts first (it creates the administrator),
    then node B and the worker.
    """
    if not os.path.exists(NGINX):
        raise RuntimeError("nginx is not installed")
    root.mkdir(parents=True, exist_ok=True)
    with ExitStack() as stack:
        database_url = stack.enter_context(postgres_database("cluster"))
        datastore_url = stack.enter_context(postgres_database("cluster_store", postgis=True))
        broker_url = stack.enter_context(rabbitmq_vhost("cartotheca_cluster"))
        secret_key = uuid.uuid4().hex + uuid.uuid4().hex
        common = outside_environment()
        common.update({
            "CARTOTHECA_DATABASE_URL": database_url, "CARTOTHECA_STORAGE_BACKEND": "postgis",
            "CARTOTHECA_DATASTORE_URL": datastore_url, "CARTOTHECA_TASK_BACKEND": "celery",
            "CARTOTHECA_CELERY_BROKER_URL": broker_url, "CARTOTHECA_SECRET_KEY": secret_key,
            "CARTOTHECA_ADMIN_USER": ADMIN_USER,
            "CARTOTHECA_ADMIN_PASSWORD": ADMIN_PASSWORD, "CARTOTHECA_LOG_LEVEL": "warning",
            # A cheap password hash: the cluster's tests and soaks log in often.
            "CARTOTHECA_PASSWORD_HASH_TIME_COST": "1", "CARTOTHECA_PASSWORD_HASH_MEMORY_KIB": "1024",
            "CARTOTHECA_PASSWORD_HASH_PARALLELISM": "1",
        })
        common.update(object_store_settings())
        common.update({f"CARTOTHECA_{k}": v for k, v in (settings or {}).items()})
        upload_dir = None
        if not common.get("CARTOTHECA_OBJECT_STORE_URL"):
            upload_dir = root / "shared-uploads"
            upload_dir.mkdir(exist_ok=True)
            common["CARTOTHECA_UPLOAD_DIR"] = str(upload_dir)

        data_dirs = {name: root / f"data-{name}" for name in ("a", "b", "worker")}
        for path in data_dirs.values():
            shutil.rmtree(path, ignore_errors=True)
            path.mkdir()
        logs = root / "logs"
        logs.mkdir(exist_ok=True)
        _run_once([*CLI, "migrate"], {**common, "CARTOTHECA_DATA_DIR": str(data_dirs["worker"])},
                  logs / "migrate.log")

        port = nginx_port or free_port()
        url = f"http://127.0.0.1:{port}/"
        nodes = {}
        for name in ("a", "b"):
            node_port = free_port()
            env = {**common, "CARTOTHECA_DATA_DIR": str(data_dirs[name]),
                   "CARTOTHECA_MONITORING_HOST_NAME": f"node-{name}"}
            nodes[name] = Role(f"node {name}", [*CLI, "serve", "--host", "127.0.0.1", "--port",
                                                str(node_port)], env, logs / f"node-{name}.log",
                               url=f"http://127.0.0.1:{node_port}/")
        worker = Role("worker", [*CLI, "worker", "--concurrency", "2"],
                      {**common, "CARTOTHECA_DATA_DIR": str(data_dirs["worker"]),
                       "CARTOTHECA_SITEURL": url, "CARTOTHECA_MONITORING_HOST_NAME": "worker"},
                      logs / "worker.log")

        prefix = root / "nginx"
        shutil.rmtree(prefix, ignore_errors=True)
        prefix.mkdir()
        upstreams = [node.url.removeprefix("http://").rstrip("/") for node in nodes.values()]
        (prefix / "nginx.conf").write_text(nginx_conf(prefix, port, upstreams))
        nginx = Role("nginx", [NGINX, "-p", str(prefix), "-e", str(prefix / "error.log"),
                               "-c", str(prefix / "nginx.conf"), "-g", "daemon off;"],
                     outside_environment(), logs / "nginx.log", url=url)

        roles = [nodes["a"], nodes["b"], worker, nginx]
        stack.callback(stop_all, roles)
        nodes["a"].start().wait_answering()
        nodes["b"].start()
        worker.start()
        nginx.start()
        nodes["b"].wait_answering()
        nginx.wait_answering()
        yield Cluster(url=url, nodes=nodes, worker=worker, nginx=nginx, database_url=database_url,
                      datastore_url=datastore_url, broker_url=broker_url, secret_key=secret_key,
                      data_dirs=data_dirs, upload_dir=upload_dir, root=root)
