"""The review web app (Starlette): the page, its static files and a small JSON API over :class:`Store`.

Every request must carry the access token (``?token=...`` or the ``X-Readgaze-Token`` header); any other is
refused with 403 before it reads or changes anything.

API (JSON)
----------
``GET /api/trials?offset&limit&sort&desc&q&status``
    A page of the trial list (:meth:`Store.page`).
``GET /api/trials/{trial_id}``
    One trial (:meth:`Store.trial`); 404 naming the id when unknown.
``GET /api/trials/{trial_id}/lines/{method}``
    The lines a method gives the trial (``{"method", "lines"}``).
``POST /api/trials/{trial_id}/corrections``
    Append a correction (:meth:`Store.correct`); answers the row written, once it is on disk.
"""

from __future__ import annotations

import json
import secrets
from importlib import resources

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, PlainTextResponse, Response
from starlette.routing import Route

from readgaze.review.store import RequestError, Store

HEADER = "x-readgaze-token"
STATIC = {"list.js": "text/javascript", "trial.js": "text/javascript", "app.js": "text/javascript",
          "style.css": "text/css"}


def _static(name: str) -> str:
    return resources.files("readgaze.review").joinpath("static", name).read_text(encoding="utf-8")


class TokenGuard:
    """ASGI middleware: a request without the right token gets 403 and never reaches the app."""

    def __init__(self, app, token: str):
        self.app, self.token = app, token

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        request = Request(scope)
        given = request.query_params.get("token") or request.headers.get(HEADER) or ""
        if not secrets.compare_digest(given.encode(), self.token.encode()):
            response = PlainTextResponse("403 forbidden: missing or wrong access token; open the URL that "
                                         "`readgaze review` printed", status_code=403)
            return await response(scope, receive, send)
        return await self.app(scope, receive, send)


def _json(fn):
    """Run a handler; a :class:`RequestError` becomes its status with ``{"error": message}``."""
    async def handler(request: Request) -> Response:
        try:
            return JSONResponse(await fn(request))
        except RequestError as e:
            return JSONResponse({"error": e.message}, status_code=e.status)
    return handler


def create_app(store: Store, token: str) -> TokenGuard:
    """The ASGI app serving ``store``, guarded by ``token``."""
    from starlette.concurrency import run_in_threadpool

    async def index(request: Request) -> Response:
        html = _static("index.html").replace("__TOKEN__", token).replace("__DATASET__", store.folder.name)
        return HTMLResponse(html, headers={"Cache-Control": "no-store"})

    async def static(request: Request) -> Response:
        name = request.path_params["name"]
        if name not in STATIC:
            return PlainTextResponse(f"404: no static file {name!r}", status_code=404)
        return Response(_static(name), media_type=STATIC[name])

    def _int(request: Request, name: str, default: int) -> int:
        try:
            return int(request.query_params.get(name, default))
        except ValueError:
            raise RequestError(400, f"field {name!r}: expected an integer") from None

    async def trials(request: Request):
        q = request.query_params
        return await run_in_threadpool(store.page, offset=_int(request, "offset", 0), limit=_int(request, "limit", 50),
                                       sort=q.get("sort", "agreement"), descending=q.get("desc", "0") == "1",
                                       query=q.get("q", ""), status=q.get("status", "all"))

    async def trial(request: Request):
        return await run_in_threadpool(store.trial, request.path_params["trial_id"])

    async def lines(request: Request):
        p = request.path_params
        return {"method": p["method"], "lines": await run_in_threadpool(store.method_lines, p["trial_id"],
                                                                         p["method"])}

    async def correct(request: Request):
        try:
            body = json.loads(await request.body())
        except ValueError as e:
            raise RequestError(400, f"body: not JSON ({e})") from None
        return await run_in_threadpool(store.correct, request.path_params["trial_id"], body)

    routes = [Route("/", index), Route("/static/{name}", static),
              Route("/api/trials", _json(trials)), Route("/api/trials/{trial_id:path}/lines/{method}", _json(lines)),
              Route("/api/trials/{trial_id:path}/corrections", _json(correct), methods=["POST"]),
              Route("/api/trials/{trial_id:path}", _json(trial))]
    return TokenGuard(Starlette(routes=routes), token)
