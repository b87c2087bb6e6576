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

With ``--store postgres`` the service keeps its memories in Postgres (a private
pgserver unless ``--database-url`` is given) and, for each count in ``--replicas``,
that many ``cogito-lc serve`` processes share one table: the corpus is loaded once
(through the first count's replicas), then every run spreads its requests
round-robin over the replicas. The JSON output then has one section per count.

Usage:
    python benchmarks/service.py [--memories 10000] [--requests 200] [--out FILE]
    python benchmarks/service.py --store postgres --replicas 1 2 [--database-url URL]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import random
import statistics
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import httpx
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from cogito_lc import __version__  # noqa: E402
from cogito_lc.bench.results import add_out_argument, narrowing_flags, results_path  # noqa: E402
from cogito_lc.bench.scale import drop_table, private_postgres  # noqa: E402
from tests.integration_tests.service_process import ServiceProcess, start_service  # noqa: E402

DEFAULT_OUT = ROOT / "benchmarks" / "results" / "service.json"
DEFAULT_OUT_POSTGRES = ROOT / "benchmarks" / "results" / "service_postgres.json"
FULL_RUN = {"memories": 10_000, "requests": 200}
"""The flags that narrow the published runs, at their published values."""
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
    services: Sequence[ServiceProcess],
    clients: int,
    requests: int,
    send: Callable[[httpx.Client, int], int],
    bound: float = RUN_TIME_BOUND,
) -> dict[str, float]:
    """``requests`` calls of ``send`` from ``clients`` threads; latency and throughput.

    Request ``i`` goes to ``services[i % len(services)]`` (round-robin over replicas).
    """
    latencies: list[float] = []
    errors: list[int] = []
    lock = threading.Lock()
    counter = iter(range(requests))
    deadline = time.monotonic() + bound

    def loop() -> None:
        with contextlib.ExitStack() as stack:
            pool = [stack.enter_context(service.client(timeout=120)) for service in services]
            while time.monotonic() < deadline:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                start = time.perf_counter()
                status = send(pool[i % len(pool)], i)
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
    parser.add_argument(
        "--memories", type=int, default=FULL_RUN["memories"], help="corpus loaded first"
    )
    parser.add_argument(
        "--requests", type=int, default=FULL_RUN["requests"], help="requests per 1-client run"
    )
    parser.add_argument("--seed", type=int, default=7)
    add_out_argument(
        parser,
        what="JSON report",
        published=f"{DEFAULT_OUT.relative_to(ROOT)} (with --store postgres: "
        f"{DEFAULT_OUT_POSTGRES.name})",
        flags="--memories, --requests",
    )
    parser.add_argument("--store", choices=["chroma", "postgres"], default="chroma")
    parser.add_argument(
        "--database-url", default=None, help="Postgres for --store postgres (default: pgserver)"
    )
    parser.add_argument(
        "--replicas", type=int, nargs="+", default=[1], metavar="N", help="service processes"
    )
    args = parser.parse_args(argv)
    if min(args.replicas) < 1:
        parser.error("--replicas must be >= 1")
    if args.store == "chroma" and args.replicas != [1]:
        parser.error("--replicas needs --store postgres (embedded Chroma is one process)")
    if args.database_url and args.store != "postgres":
        parser.error("--database-url needs --store postgres")
    published = DEFAULT_OUT_POSTGRES if args.store == "postgres" else DEFAULT_OUT
    args.out = results_path(args.out, published, narrowing_flags(args, FULL_RUN))
    return args


def load(services: Sequence[ServiceProcess], args: argparse.Namespace) -> dict[str, Any]:
    """Load ``--memories`` memories through ``/store`` from 8 clients."""
    loaded = run_clients(services, 8, args.memories, store_sender(0, args.seed), LOAD_TIME_BOUND)
    with services[0].client() as client:
        count = client.get("/health").json()["count"]
    rss = [rss_mb(service) for service in services]
    report = {**loaded, "count": count, "rss_mb": rss[0] if len(rss) == 1 else rss}
    print(f"loaded {count} memories: {loaded['rps']} /store per s, RSS {report['rss_mb']} MB")
    return report


def measure_runs(
    services: Sequence[ServiceProcess], args: argparse.Namespace, offset: int
) -> list[dict[str, Any]]:
    """/store, /recall_b and /query with 1 and 8 clients; new memories numbered from ``offset``."""
    runs: list[dict[str, Any]] = []
    for path in ("/store", "/recall_b", "/query"):
        for clients in (1, 8):
            requests = args.requests * (4 if clients == 8 else 1)
            if path == "/store":
                sender = store_sender(offset, args.seed)
                offset += requests
            else:
                sender = search_sender(path, args.seed + clients)
                # warm the scope's lexical index on every replica
                run_clients(services, 1, 3 * len(services), sender)
            row = {"endpoint": path, **run_clients(services, clients, requests, sender)}
            runs.append(row)
            print(json.dumps(row))
    return runs


def measure(service: ServiceProcess, args: argparse.Namespace) -> dict[str, Any]:
    report: dict[str, Any] = {"load": load([service], args)}
    report["runs"] = measure_runs([service], args, args.memories)
    report["rss_mb_after"] = rss_mb(service)
    return report


@contextlib.contextmanager
def replicas(count: int, root: Path, settings: dict[str, str]) -> Iterator[list[ServiceProcess]]:
    """``count`` service processes with these settings, stopped afterwards."""
    services: list[ServiceProcess] = []
    try:
        for n in range(count):
            # one at a time: each started one is stopped if a later one fails
            services.append(start_service(root / f"r{n}" / "store", settings=settings))  # noqa: PERF401
        yield services
    finally:
        for service in services:
            service.stop()


def measure_postgres(args: argparse.Namespace, root: Path, database_url: str) -> dict[str, Any]:
    """One section per replica count, all over one table loaded once."""
    table = f"service_bench_{uuid.uuid4().hex[:8]}"
    settings = {"COGITO_DATABASE_URL": database_url, "COGITO_COLLECTION": table}
    report: dict[str, Any] = {"store": "postgres", "table": table, "replicas": []}
    offset = args.memories
    try:
        for count in args.replicas:
            print(f"{count} replica(s)", file=sys.stderr)
            with replicas(count, root / f"x{count}", settings) as services:
                if "load" not in report:
                    report["load"] = {"replicas": count, **load(services, args)}
                runs = measure_runs(services, args, offset)
                offset += sum(row["requests"] for row in runs if row["endpoint"] == "/store")
                after = [rss_mb(service) for service in services]
            report["replicas"].append({"replicas": count, "runs": runs, "rss_mb_after": after})
    finally:
        drop_table(database_url, table)
    return report


def print_table(report: dict[str, Any]) -> None:
    load = report["load"]
    print(f"\nCorpus: {load['count']} memories; machine: {report['machine']['cpus']} cores\n")
    sections = report.get("replicas") or [{"runs": report["runs"]}]
    replica_column = "replicas" in report
    print(("| replicas " if replica_column else "") + HEADER)
    print(("|---" if replica_column else "") + "|---|---|---|---|---|---|---|")
    for section in sections:
        for row in section["runs"]:
            print(
                (f"| {section['replicas']} " if replica_column else "")
                + f"| `{row['endpoint']}` | {row['clients']} | {row['requests']} | {row['rps']} "
                f"| {row['p50_ms']} | {row['p95_ms']} | {row['errors']} |"
            )
    after = report.get("rss_mb_after") or [s["rss_mb_after"] for s in sections]
    print(
        f"\nLoading {load['requests']} memories through /store (8 clients): {load['rps']} req/s, "
        f"p50 {load['p50_ms']} ms; server RSS after loading: {load['rss_mb']} MB, "
        f"after all runs: {after} MB"
    )


HEADER = "| endpoint | clients | requests | req/s | p50 ms | p95 ms | errors |"


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="cogito-service-bench-") as tmp:
        if args.store == "postgres":
            with contextlib.ExitStack() as stack:
                url = args.database_url or stack.enter_context(private_postgres(Path(tmp)))
                report = measure_postgres(args, Path(tmp), url)
        else:
            service = start_service(Path(tmp) / "store")
            try:
                report = measure(service, args)
            finally:
                service.stop()
    postgres_settings = (
        {"store": "postgres", "replicas": args.replicas} if args.store == "postgres" else {}
    )
    report.update(
        {
            "version": __version__,
            "machine": {
                "cpus": os.cpu_count(),
                "platform": platform.platform(),
                "python": platform.python_version(),
            },
            "settings": {
                "memories": args.memories,
                "requests": args.requests,
                "llm": None,
                **postgres_settings,
            },
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
