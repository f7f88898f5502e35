"""cartotheca.monitoring.hosts: CPU, memory, disks and network of this host through psutil.

Rates need two readings: the sampler keeps the previous counters in memory (taken when it
starts), so rates appear from the first sample a second or more later (GeoNode reads the
previous value back from the database instead).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

import psutil

from cartotheca.monitoring import definitions as d

MIN_RATE_WINDOW = 1.0  # seconds
# File systems that are not storage worth watching
PSEUDO_FS = {"squashfs", "tmpfs", "devtmpfs", "overlay", "proc", "sysfs", "cgroup", "cgroup2"}


@dataclass
class Reading:
    at: float
    cpu_busy: float
    network: dict[str, tuple[int, int]] = field(default_factory=dict)  # iface → (in, out)


def read_counters() -> Reading:
    times = psutil.cpu_times()
    busy = sum(times) - times.idle - getattr(times, "iowait", 0.0)
    counters = psutil.net_io_counters(pernic=True) or {}
    return Reading(time.monotonic(), busy,
                   {name: (c.bytes_recv, c.bytes_sent) for name, c in counters.items()})


class HostSampler:
    """Turns psutil readings into (metric, label, value) triples."""

    def __init__(self) -> None:
        self.previous = read_counters()
        psutil.cpu_percent(interval=None)  # primes the percentage for the next call

    def sample(self) -> list[tuple[str, str, float]]:
        current = read_counters()
        out = _levels()
        # Counters tick in hundredths of a second: over a shorter window a rate is mostly
        # rounding, so the earlier reading is kept until a second has passed.
        if current.at - self.previous.at >= MIN_RATE_WINDOW:
            out += _rates(self.previous, current)
            self.previous = current
        return out


def _levels() -> list[tuple[str, str, float]]:
    value = d.VALUE_LABEL
    memory = psutil.virtual_memory()
    out = [
        ("mem.all", value, float(memory.total)),
        ("mem.free", value, float(memory.available)),
        ("mem.usage", value, float(memory.total - memory.available)),
        ("mem.usage.percent", value, float(memory.percent)),
        ("mem.buffers", value, float(getattr(memory, "buffers", 0))),
        ("uptime", value, max(0.0, time.time() - psutil.boot_time())),
        ("cpu.usage.percent", value, float(psutil.cpu_percent(interval=None))),
    ]
    if hasattr(os, "getloadavg"):
        out += [(f"load.{n}m", value, float(v)) for n, v in zip((1, 5, 15), os.getloadavg(), strict=True)]
    for part in psutil.disk_partitions(all=False):
        if part.fstype in PSEUDO_FS:
            continue
        try:
            usage = psutil.disk_usage(part.mountpoint)
        except OSError:
            continue
        out += [("storage.total", part.mountpoint, float(usage.total)),
                ("storage.used", part.mountpoint, float(usage.used)),
                ("storage.free", part.mountpoint, float(usage.free))]
    return out


def _rates(before: Reading, after: Reading) -> list[tuple[str, str, float]]:
    elapsed = after.at - before.at
    if elapsed <= 0:
        return []
    busy = max(0.0, after.cpu_busy - before.cpu_busy)
    out = [("cpu.usage", d.VALUE_LABEL, busy), ("cpu.usage.rate", d.VALUE_LABEL, busy / elapsed)]
    for iface, (received, sent) in after.network.items():
        if iface not in before.network:
            continue
        got = max(0, received - before.network[iface][0])
        put = max(0, sent - before.network[iface][1])
        out += [("network.in", iface, float(got)), ("network.out", iface, float(put)),
                ("network.in.rate", iface, got / elapsed), ("network.out.rate", iface, put / elapsed)]
    return out
