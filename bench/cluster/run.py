"""bench.cluster.run: a cluster on this machine, for trying the scale-out shape and for the soak
with a node restart.

    python bench/cluster/run.py                      # start it, print its addresses, Ctrl-C stops it
    python bench/cluster/run.py --soak --clients 100 --seconds 300 --restart-at 60 --down 20

The cluster is ``tests/support/cluster.py``'s: Debian's nginx on a free loopback port balancing
two ``cartotheca serve`` nodes (each with an empty data folder of its own), one ``cartotheca
worker`` (Celery over a RabbitMQ virtual host of its own), a new PostgreSQL catalogue and PostGIS
datastore, one shared SECRET_KEY; the object store's settings (``OBJECT_STORE_URL``,
``S3_ENDPOINT_URL``, ``AWS_*``) are passed on from the environment.

``--soak`` loads ``--resources`` synthetic resources (``bench/load.py``), runs ``bench/soak.py``
through nginx (with its raster when the object store's settings are in the environment, vector
data only otherwise: the raster would stay on the worker's disk), stops node ``--restart``
(default b) ``--restart-at`` seconds in, starts it again ``--down`` seconds later, and then
reports the failed idempotent requests (GETs answered 5xx or not at all: nginx must have
retried them on the other node) and the hosts monitoring knows. It exits 1 when any failed or a
node is missing from monitoring.
"""

from __future__ import annotations

import argparse
import base64
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "bench")]
import load  # noqa: E402  (bench/ is a folder of scripts)

from tests.support.cluster import object_store_settings, running_cluster  # noqa: E402

# The soak's request kinds that are GETs: nginx may send them to the other node.
IDEMPOTENT = ("list_anonymous", "list_user", "detail", "search", "wms_getmap", "tile", "wfs_getfeature",
              "csw_getrecords")


def failed_idempotent(results: dict) -> dict[str, int]:
    """GETs of the soak answered with a 5xx, by kind; transport errors counted apart (the soak
    does not say which kind a reset or a timeout hit)."""
    failed = {}
    for kind in IDEMPOTENT:
        statuses = results["kinds"].get(kind, {}).get("statuses", {})
        bad = sum(n for status, n in statuses.items() if int(status) >= 500)
        bad += results["other_errors"].get(kind, 0)
        if bad:
            failed[kind] = bad
    transport = results["connection_resets"] + results["timeouts"]
    if transport:
        failed["resets_or_timeouts_any_kind"] = transport
    return failed


def restart_later(cluster, name: str, at: float, down: float, log: list[str]) -> threading.Thread:
    def run() -> None:
        time.sleep(at)
        t0 = time.monotonic()
        cluster.nodes[name].stop()
        log.append(f"node {name} stopped {at:.0f} s into the drive")
        time.sleep(down)
        cluster.nodes[name].start()
        cluster.nodes[name].wait_answering()
        log.append(f"node {name} answering again {time.monotonic() - t0:.0f} s after it was stopped")

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def monitored_hosts(url: str, timeout: float = 60.0) -> set[str]:
    auth = base64.b64encode(f"{load.ADMIN_USER}:{load.ADMIN_PASSWORD}".encode()).decode()
    deadline, names = time.monotonic() + timeout, set()
    while time.monotonic() < deadline and not {"node-a", "node-b"} <= names:
        response = httpx.get(f"{url}monitoring/api/hosts/", headers={"Authorization": f"Basic {auth}"},
                             timeout=60)
        response.raise_for_status()
        names = {host["name"] for host in response.json()["hosts"]}
        time.sleep(1)
    return names


def run_soak(cluster, args) -> int:
    print(f"loading {args.resources} resources", file=sys.stderr, flush=True)
    load.load(cluster.database_url, args.resources, cluster.root / "load")
    out = cluster.root / "soak.json"
    events: list[str] = []
    restarter = None
    shared_rasters = bool(object_store_settings()) or "OBJECT_STORE_URL" in dict(args.setting)
    command = [sys.executable, str(ROOT / "bench" / "soak.py"), "--url", cluster.url, "--resources", "0",
               *([] if shared_rasters else ["--vector-only"]), "--clients", str(args.clients),
               "--seconds", str(args.seconds),
               "--data-dir", str(cluster.root / "soak"), "--out", str(out)]
    with subprocess.Popen(command, cwd=ROOT, stderr=subprocess.PIPE, text=True) as proc:
        assert proc.stderr is not None
        for line in proc.stderr:
            sys.stderr.write(line)
            # The restart is timed from the start of the drive, after the seeding uploads.
            if restarter is None and line.startswith("driving "):
                restarter = restart_later(cluster, args.restart, args.restart_at, args.down, events)
    if proc.returncode != 0 or restarter is None:
        raise SystemExit(f"bench/soak.py failed ({proc.returncode})")
    restarter.join(timeout=300)
    results = json.loads(out.read_text())
    failed = failed_idempotent(results)
    hosts = monitored_hosts(cluster.url)
    print("\n".join(events))
    print(f"failed idempotent requests: {failed or 0}")
    print(f"hosts in monitoring: {sorted(hosts)}")
    return 0 if not failed and {"node-a", "node-b"} <= hosts else 1


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, help="folder for logs and data (default: a new temporary one)")
    parser.add_argument("--port", type=int, help="nginx's port (default: a free one)")
    parser.add_argument("--setting", action="append", default=[], type=lambda s: tuple(s.split("=", 1)),
                        metavar="NAME=VALUE", help="a setting of every process (without CARTOTHECA_)")
    parser.add_argument("--soak", action="store_true", help="run bench/soak.py through nginx, then stop")
    parser.add_argument("--resources", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=100)
    parser.add_argument("--seconds", type=float, default=300.0)
    parser.add_argument("--restart", choices=("a", "b"), default="b")
    parser.add_argument("--restart-at", type=float, default=60.0,
                        help="seconds after the soak's clients start")
    parser.add_argument("--down", type=float, default=20.0, help="seconds the node stays stopped")
    args = parser.parse_args(argv)
    root = args.root or Path(tempfile.mkdtemp(prefix="cartotheca-cluster-"))
    # The soak's accounts: its administrator is the cluster's.
    settings = {"ADMIN_USER": load.ADMIN_USER, "ADMIN_PASSWORD": load.ADMIN_PASSWORD, **dict(args.setting)}
    with running_cluster(root.resolve(), settings=settings, nginx_port=args.port) as cluster:
        print(cluster.describe(), flush=True)
        if args.soak:
            code = run_soak(cluster, args)
        else:
            print("running; Ctrl-C stops it", flush=True)
            code = 0
            try:
                while all(role.running for role in (*cluster.nodes.values(), cluster.worker, cluster.nginx)):
                    time.sleep(1)
                print("a process ended; see its log", file=sys.stderr)
                code = 1
            except KeyboardInterrupt:
                pass
    raise SystemExit(code)


if __name__ == "__main__":
    main()
