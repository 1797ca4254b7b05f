"""The inspector as an ASGI app: its routes, how a view's page or error becomes a response, and its files.

Views (``views/``) take the request's :class:`Ask` and a :class:`Context` and return a :class:`Page`; a
:class:`VaultError` they raise becomes a page saying what went wrong, with the status a client expects
(a bad parameter 400, an unknown memory 404, a refused change 409); nothing else of the server shows.
The views call the vault's verbs in a worker thread (Starlette runs plain functions so), as many at
once as clients ask. The whole app sits behind :class:`Guard`.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.resources import files
from typing import Any

from mcp.server.transport_security import RequestBodyLimitMiddleware
from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import Route

from perseus_vault_core import Conflict, InvalidInput, NotFound, SetupError, StorageError, Vault, VaultError

from .edits import change as change_memory
from .edits import form_fields
from .edits import signed_in as sign_in
from .edits import signed_out as sign_out
from .guard import Guard, Refused
from .layout import Page, Scope, document, message
from .markup import el, join
from .query import Ask, Context
from .reports import Busy, Kept, Reports
from .views import browse, graph, hygiene, memory, overview, playground, timetravel
from .views import files as memory_files

STATIC = {
    "app.css": "text/css; charset=utf-8",
    "app.js": "text/javascript; charset=utf-8",
    "icon.svg": "image/svg+xml",
}
MAX_FORM_BYTES = 64 * 1024  # the inspector's forms are a few fields; anything larger is answered 413 unread
STATUS: dict[type[VaultError], int] = {
    InvalidInput: 400,
    NotFound: 404,
    Conflict: 409,
    StorageError: 500,
    SetupError: 500,
}  # any other refusal (NotSupported, ...): 400
View = Callable[..., Page]


def _files() -> dict[str, bytes]:
    folder = files(__package__) / "static"
    return {name: (folder / name).read_bytes() for name in STATIC}


class Inspector:
    """One served inspector: the vault, the scope it is bound to (if any), whether edits are allowed."""

    def __init__(
        self,
        vault: Vault,
        host: str,
        port: int,
        token: str | None,
        *,
        allow_edits: bool = False,
        agent_id: str | None = None,
        workspace_hash: str | None = None,
        https: bool = False,
    ) -> None:
        self.vault, self.edits = vault, allow_edits
        self.bound = Scope(agent_id, workspace_hash, bound=agent_id is not None or workspace_hash is not None)
        self.reports, self.kept, self.clusters = Reports(), Kept(), Reports()
        self.static = _files()
        self.where = vault.stats().path  # a database URL without its password
        routes = [
            Route(path, self._endpoint(view))
            for path, view in (
                ("/", overview.render),
                ("/browse", browse.render),
                ("/recall", playground.render),
                ("/graph", graph.render),
                ("/time", timetravel.render),
                ("/hygiene", hygiene.render),
                ("/files", memory_files.render),
            )
        ]
        routes += [
            Route("/memory/{entity_id:int}", self._endpoint(memory.render)),
            Route("/memory/{entity_id:int}/{action}", self.edit, methods=["POST"]),
            Route("/login", self.login, methods=["GET", "POST"]),
            Route("/logout", self.logout, methods=["POST"]),
            Route("/static/{name}", self.file),
            Route("/favicon.ico", self.icon),
        ]
        app = Starlette(routes=routes, exception_handlers={HTTPException: self._http_error})
        self.guard = Guard(RequestBodyLimitMiddleware(app, MAX_FORM_BYTES), host, port, token, https=https)

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        await self.guard(scope, receive, send)

    # --- pages ----------------------------------------------------------------------------------

    def _endpoint(self, view: View) -> Callable[[Request], Response]:
        def endpoint(request: Request) -> Response:
            try:
                ask = Ask(request.query_params, self.bound)
            except VaultError as error:
                return self.respond(request, self.bound, _failure(error))
            context = Context(
                self.vault,
                self.bound,
                self.edits,
                self.guard.csrf(request),
                self.reports,
                self.kept,
                self.clusters,
            )
            try:
                page = view(context, ask, **request.path_params)
            except VaultError as error:
                page = _failure(error)
            except Busy as busy:  # the report queue is full: come back when a place is likely free
                response = self.respond(request, ask.scope, Page("Busy", message(str(busy), "error"), 503))
                response.headers["retry-after"] = str(busy.retry_after_s)
                return response
            return self.respond(request, ask.scope, page)

        return endpoint

    def respond(self, request: Request, scope: Scope, page: Page) -> Response:
        signed_in = self.guard.session(request) is not None  # a browser's session: it may sign out
        html = document(
            page,
            scope,
            path=request.url.path,
            edits=self.edits,
            where=self.where,
            sign_out=self.guard.csrf(request) if signed_in else None,
        )
        return HTMLResponse(html, status_code=page.status)

    async def _http_error(self, request: Request, error: Exception) -> Response:
        status = error.status_code if isinstance(error, HTTPException) else 500
        text = "No such page." if status == 404 else "This page does not take that request."
        return self.respond(request, self.bound, Page("Not here", message(text, "error"), status))

    # --- writes ---------------------------------------------------------------------------------

    async def edit(self, request: Request) -> Response:
        entity_id, action = int(request.path_params["entity_id"]), str(request.path_params["action"])
        try:
            if not self.edits:
                raise Refused(
                    403, "this inspector is read-only: serve it with --allow-edits to change memories"
                )
            fields = await form_fields(request)
            self.guard.check_write(request, fields.get("csrf", ""))
            await run_in_threadpool(change_memory, self.vault, self.bound, entity_id, action)
        except Refused as refused:
            return self.respond(
                request, self.bound, Page("Refused", message(refused.reason, "error"), refused.status)
            )
        except VaultError as error:
            return self.respond(request, self.bound, _failure(error))
        return RedirectResponse(self.bound.link(f"/memory/{entity_id}"), status_code=303)

    async def login(self, request: Request) -> Response:
        if request.method == "POST":
            try:
                fields = await form_fields(request)
                self.guard.check_write(request, fields.get("csrf", ""))
                return sign_in(self.guard, request, fields)
            except Refused as refused:
                return self.respond(
                    request,
                    self.bound,
                    Page(
                        "Sign in",
                        join(message(refused.reason, "error"), self._login_form(request)),
                        refused.status,
                    ),
                )
        if not self.guard.signs_in:
            return RedirectResponse("/", status_code=303)
        return self.respond(request, self.bound, Page("Sign in", self._login_form(request)))

    async def logout(self, request: Request) -> Response:
        try:
            fields = await form_fields(request)
            self.guard.check_write(request, fields.get("csrf", ""))
        except Refused as refused:
            return self.respond(
                request, self.bound, Page("Refused", message(refused.reason, "error"), refused.status)
            )
        return sign_out(self.guard, request)

    def _login_form(self, request: Request) -> Any:
        return el(
            "form",
            el(
                "label",
                el("span", "Bearer token"),
                el("input", type="password", name="token", autocomplete="current-password", required=True),
            ),
            el("input", type="hidden", name="next", value=request.query_params.get("next", "/")),
            el("input", type="hidden", name="csrf", value=self.guard.csrf(request)),
            el("button", "Sign in", type="submit"),
            method="post",
            action="/login",
            class_="signin",
        )

    # --- files ----------------------------------------------------------------------------------

    def file(self, request: Request) -> Response:
        name = str(request.path_params["name"])
        if name not in self.static:
            raise HTTPException(404)
        return Response(self.static[name], media_type=STATIC[name])

    def icon(self, request: Request) -> Response:
        return Response(self.static["icon.svg"], media_type=STATIC["icon.svg"])


def _failure(error: VaultError) -> Page:
    status = next((code for kind, code in STATUS.items() if isinstance(error, kind)), 400)
    title = {400: "Cannot show that", 404: "Not found", 409: "Refused"}.get(status, "The vault failed")
    return Page(title, message(str(error), "error"), status)
