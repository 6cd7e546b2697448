"""``focused replay`` (serve a stored web on loopback) and ``focused webkb-to-warc``."""

from __future__ import annotations

import argparse
import logging
import signal
import threading
from pathlib import Path
from typing import Any

from focused.cli import CommandError

logger = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    """Add the ``replay`` and ``webkb-to-warc`` sub-commands."""
    replay = subparsers.add_parser(
        "replay",
        help="serve a stored web (WebKB archive or WARC) as a loopback HTTP proxy",
        description="Serve stored responses by their original URL on 127.0.0.1, as an HTTP proxy: "
        "point Scrapy at it with request.meta['proxy'] or http_proxy=http://127.0.0.1:PORT. "
        "Unknown URLs get a 404; https is not replayed.",
    )
    replay.add_argument(
        "archive",
        nargs="?",
        type=Path,
        help="a .warc/.warc.gz file, a folder of them, or a WebKB .tar.gz/folder "
        "(default: webkb-dev.tar.gz in the corpora folder)",
    )
    replay.add_argument("--labels", type=Path, help="labels TSV (url<TAB>label[<TAB>group])")
    replay.add_argument("--port", type=int, default=8899, help="port on 127.0.0.1, 0 = any free (default 8899)")
    replay.add_argument("--latency", type=float, default=0.0, help="seconds added to each response (default 0)")
    replay.add_argument(
        "--universities", type=_csv, help="comma-separated groups to serve, e.g. cornell,texas (default all)"
    )
    replay.set_defaults(func=run_replay)

    convert = subparsers.add_parser(
        "webkb-to-warc",
        help="convert the WebKB archive into a WARC file plus a labels TSV",
        description="Write one WARC response record per distinct WebKB URL and the labels beside it.",
    )
    convert.add_argument("archive", nargs="?", type=Path, help="WebKB .tar.gz or folder (default: dev archive)")
    convert.add_argument("-o", "--output", type=Path, required=True, help="output WARC (.warc or .warc.gz)")
    convert.add_argument("--labels", type=Path, help="output labels TSV (default: OUTPUT with .labels.tsv)")
    convert.add_argument("--universities", type=_csv, help="comma-separated universities (default all)")
    convert.set_defaults(func=run_webkb_to_warc)


def _csv(value: str) -> list[str]:
    items = [item.strip() for item in value.split(",") if item.strip()]
    if not items:
        raise argparse.ArgumentTypeError("expected a comma-separated list of names")
    return items


def _archive(path: Path | None) -> Path:
    if path is not None:
        return path
    from focused.corpora.webkb import default_archive

    return default_archive()


def run_replay(args: argparse.Namespace) -> int:
    """Serve until Ctrl-C or SIGTERM."""
    from focused.replay.files import StoreError
    from focused.replay.load import open_store
    from focused.replay.server import PortInUseError, ReplayServer

    try:
        store = open_store(_archive(args.archive), args.labels, args.universities)
        server = ReplayServer(store, port=args.port, latency=args.latency).start()
    except StoreError as exc:
        raise CommandError(str(exc)) from exc
    except PortInUseError as exc:
        raise CommandError(exc.strerror or str(exc)) from exc
    except (OSError, ValueError) as exc:
        raise CommandError(f"cannot serve on port {args.port}: {exc}") from exc
    stopped = threading.Event()
    # Handle SIGINT too: a shell starts background jobs with SIGINT ignored.
    previous = {sig: signal.signal(sig, lambda *_: stopped.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        print(
            f"replaying {len(store)} pages on {server.proxy_url} (use it as an HTTP proxy); Ctrl-C to stop",
            flush=True,
        )
        while not stopped.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        server.stop()
    print(f"stopped: {server.hits} hits, {server.misses} misses, {server.redirects} redirects", flush=True)
    return 0


def run_webkb_to_warc(args: argparse.Namespace) -> int:
    """Convert the WebKB archive to ``OUTPUT`` and a labels TSV."""
    from focused.replay.files import StoreError
    from focused.replay.load import webkb_to_warc

    output: Path = args.output
    if not output.name.endswith((".warc", ".warc.gz")):
        raise CommandError(f"the output should end in .warc or .warc.gz, not {output.name}")
    stem = output.name.removesuffix(".gz").removesuffix(".warc")
    labels = args.labels or output.with_name(stem + ".labels.tsv")
    try:
        count = webkb_to_warc(_archive(args.archive), output, labels, args.universities)
    except StoreError as exc:
        raise CommandError(str(exc)) from exc
    except OSError as exc:
        raise CommandError(f"cannot write {output} or {labels}: {exc}") from exc
    print(f"wrote {count} records to {output} and their labels to {labels}", flush=True)
    return 0
