"""``readgaze review DATASET [--port N]``: serve the review page for a dataset folder on 127.0.0.1."""

from __future__ import annotations

import argparse
import getpass
import secrets
import socket
import sys
from pathlib import Path

INSTALL = ("readgaze review needs the web stack (starlette, uvicorn): pip install -e '.[review]' in the readgaze "
           "checkout (readgaze is not on PyPI)")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("folder", type=Path, help="dataset folder (trials/words/fixations.parquet)")
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (default 8765; 0: any free one)")
    parser.add_argument("--reviewer", default=None, help="name written with each correction (default: your login)")


def _login() -> str:
    try:
        return getpass.getuser()
    except Exception:  # no login name (a container without a passwd entry)
        return "reviewer"


def run(args: argparse.Namespace) -> int:
    try:
        import uvicorn

        from readgaze.review.server import create_app
    except ImportError:
        print(INSTALL, file=sys.stderr)
        return 1
    from readgaze.review.store import Store

    store = Store(args.folder, reviewer=args.reviewer or _login())
    token = secrets.token_urlsafe(24)
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if sys.platform != "win32":  # a restart may reuse the port at once (never one still listening, on POSIX)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1", args.port))  # loopback only: the page reads and writes the dataset
    except OSError as e:
        sock.close()
        print(f"readgaze review: error: cannot listen on 127.0.0.1:{args.port} ({e.strerror}); pass --port 0 for "
              "a free port", file=sys.stderr)
        return 2
    sock.listen(128)  # connections made as soon as the URL is printed wait for the server, never refused
    port = sock.getsockname()[1]
    print(f"readgaze review: {store.table.height:,} trials of {store.folder}; corrections go to "
          f"{store.folder / 'corrections.parquet'}", flush=True)
    print(f"  open http://127.0.0.1:{port}/?token={token}   (Ctrl+C stops)", flush=True)
    config = uvicorn.Config(create_app(store, token), log_level="warning", access_log=False)
    uvicorn.Server(config).run(sockets=[sock])
    return 0
