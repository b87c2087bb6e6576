"""Memory service benchmark: throughput and latency of /store, /recall_b and /query over HTTP.

Starts ``python -m cogito_lc.service.server`` on a free loopback port with an embedded
Chroma store in a temporary directory and the offline MiniLM model (no LLM), then:

1. loads ``--memories`` memories (default 10,000) through ``POST /store``, one
   memory per request from 8 concurrent clients, and reads the server's RSS;
2. on that corpus, runs ``/store`` (new memories), ``/recall_b`` and ``/query``
   with 1 and with 8 concurrent clients, each run bounded in requests and time,
   and reports requests per second and client-side p50/p95 latency;
3. reads the server's RSS again.

Clients and server share the machine, so the figures include the clients' own CPU
use. Every request goes to 127.0.0.1 only.

Usage:
    python benchmarks/service.py [--memories 10000] [--requests 200] [--out FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cogito_lc import __version__  # noqa: E402
from tests.integration_tests.service_process import ServiceProcess, start_service  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "service.json"
RUN_TIME_BOUND = 300.0
"""No measured run lasts longer than this many seconds, whatever its request count."""
LOAD_TIME_BOUND = 1200.0
"""Bound of the loading phase."""

SERVICES = ["billing", "auth", "search", "ingest", "reports", "gateway", "mailer", "scheduler"]
FACTS = [
    "listens on port {n}",
    "keeps its queue in Redis database {n}",
    "times out after {n} ms",
    "was migrated to PostgreSQL {n} in March",
    "pages the on-call team after {n} failed health checks",
    "retries webhooks {n} times with backoff",
    "stores invoices for {n} days",
    "runs {n} workers in production",
]
QUESTIONS = [
    "which port does the {s} service listen on?",
    "how long until {s} times out?",
    "where does {s} keep its queue?",
    "how many workers does {s} run?",
]


def memory_text(i: int, rng: random.Random) -> str:
    service = SERVICES[i % len(SERVICES)]
    fact = rng.choice(FACTS).format(n=rng.randint(2, 60_000))
    return f"Memory {i}: the {service} service {fact}."


def question(rng: random.Random) -> str:
    return rng.choice(QUESTIONS).format(s=rng.choice(SERVICES))


def run_clients(
    service: ServiceProcess,
    clients: int,
    requests: int,
    send: Callable[[httpx.Client, int], int],
    bound: float = RUN_TIME_BOUND,
) -> dict[str, float]:
    """``requests`` calls of ``send`` from ``clients`` threads; latency and throughput."""
    latencies: list[float] = []
    errors: list[int] = []
    lock = threading.Lock()
    counter = iter(range(requests))
    deadline = time.monotonic() + bound

    def loop() -> None:
        with service.client(timeout=120) as client:
            while time.monotonic() < deadline:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                start = time.perf_counter()
                status = send(client, i)
                elapsed = time.perf_counter() - start
                with lock:
                    latencies.append(elapsed)
                    if status != 200:
                        errors.append(status)

    threads = [threading.Thread(target=loop) for _ in range(clients)]
    began = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - began
    ordered = sorted(latencies)
    return {
        "clients": clients,
        "requests": len(latencies),
        "errors": len(errors),
        "seconds": round(wall, 2),
        "rps": round(len(latencies) / wall, 1),
        "p50_ms": round(statistics.median(ordered) * 1000, 1),
        "p95_ms": round(ordered[max(0, int(len(ordered) * 0.95) - 1)] * 1000, 1),
    }


def rss_mb(service: ServiceProcess) -> float:
    return round(psutil.Process(service.pid).memory_info().rss / 2**20, 1)


def store_sender(offset: int, seed: int) -> Callable[[httpx.Client, int], int]:
    def send(client: httpx.Client, i: int) -> int:
        rng = random.Random(seed + offset + i)
        return client.post("/store", json={"text": memory_text(offset + i, rng)}).status_code

    return send


def search_sender(path: str, seed: int) -> Callable[[httpx.Client, int], int]:
    def send(client: httpx.Client, i: int) -> int:
        rng = random.Random(seed + i)
        return client.post(path, json={"text": question(rng), "limit": 10}).status_code

    return send


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=10_000, help="corpus loaded first")
    parser.add_argument("--requests", type=int, default=200, help="requests per 1-client run")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    return parser.parse_args(argv)


def measure(service: ServiceProcess, args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"runs": []}
    load = run_clients(service, 8, args.memories, store_sender(0, args.seed), LOAD_TIME_BOUND)
    with service.client() as client:
        count = client.get("/health").json()["count"]
    report["load"] = {**load, "count": count, "rss_mb": rss_mb(service)}
    print(f"loaded {count} memories: {load['rps']} /store per s, RSS {report['load']['rss_mb']} MB")
    offset = args.memories
    for path in ("/store", "/recall_b", "/query"):
        for clients in (1, 8):
            requests = args.requests * (4 if clients == 8 else 1)
            if path == "/store":
                sender = store_sender(offset, args.seed)
                offset += requests
            else:
                sender = search_sender(path, args.seed + clients)
                run_clients(service, 1, 3, sender)  # warm the scope's lexical index
            row = {"endpoint": path, **run_clients(service, clients, requests, sender)}
            report["runs"].append(row)
            print(json.dumps(row))
    report["rss_mb_after"] = rss_mb(service)
    return report


def print_table(report: dict[str, Any]) -> None:
    load = report["load"]
    print(f"\nCorpus: {load['count']} memories; machine: {report['machine']['cpus']} cores\n")
    print("| endpoint | clients | requests | req/s | p50 ms | p95 ms | errors |")
    print("|---|---|---|---|---|---|---|")
    for row in report["runs"]:
        print(
            f"| `{row['endpoint']}` | {row['clients']} | {row['requests']} | {row['rps']} "
            f"| {row['p50_ms']} | {row['p95_ms']} | {row['errors']} |"
        )
    print(
        f"\nLoading {load['requests']} memories through /store (8 clients): {load['rps']} req/s, "
        f"p50 {load['p50_ms']} ms; server RSS after loading: {load['rss_mb']} MB, "
        f"after all runs: {report['rss_mb_after']} MB"
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cogito-service-bench-") as tmp:
        service = start_service(Path(tmp) / "store")
        try:
            report = measure(service, args)
        finally:
            service.stop()
    report.update(
        {
            "version": __version__,
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
            },
            "settings": {"memories": args.memories, "requests": args.requests, "llm": None},
            "load_average_after": [round(x, 2) for x in os.getloadavg()],
        }
    )
    print_table(report)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
