"""The inspector's only writes: forget, restore and verify one memory (served with ``--allow-edits``),
and signing in with the token and out. Each is a POST carrying the CSRF token of the page that offered it and
this server's own Origin (:meth:`Guard.check_write`); anything else is refused and changes nothing.

The vault's own verbs do the work, as any client's call would: ``forget`` archives; restoring is
``remember`` of the same category, key and content (the documented way: fields not given keep their
values, and the new version is recorded as a ``restore``); verifying is that ``remember`` with
``verified=True``. History keeps every version, so each change can be seen, and undone, on the page.
"""

from __future__ import annotations

from typing import Any

from starlette.requests import Request
from starlette.responses import RedirectResponse, Response

from perseus_vault_core import Vault

from .guard import Guard, Refused
from .layout import Scope

ACTIONS = ("forget", "restore", "verify")


async def form_fields(request: Request) -> dict[str, str]:
    form = await request.form()
    return {k: v for k, v in form.items() if isinstance(v, str)}


def change(vault: Vault, scope: Scope, entity_id: int, action: str) -> None:
    """Apply ``action`` to the memory (in the server's scope, if bound)."""
    e = vault.get_entity(entity_id, **scope.args())
    where: dict[str, Any] = {"agent_id": e.agent_id, "workspace_hash": e.workspace_hash}
    if action == "forget":
        vault.forget(entity_id, **where)
    elif action == "restore":
        vault.remember(e.category, e.key, e.content, **where)
    elif action == "verify":
        vault.remember(e.category, e.key, e.content, verified=True, **where)
    else:
        raise Refused(404, f"no such change: {action}")


def signed_in(guard: Guard, request: Request, fields: dict[str, str]) -> Response:
    """The answer to the sign-in form: the session cookie and the page asked for, or a refusal."""
    if not guard.signs_in:
        return RedirectResponse("/", status_code=303)
    if not guard.token_matches(fields.get("token", "")):
        raise Refused(401, "that is not this server's token")
    target = fields.get("next", "/")
    if not target.startswith("/") or target.startswith(("//", "/\\")):  # a path here, never another host
        target = "/"
    response = RedirectResponse(target, status_code=303)
    if guard.sessions is not None:
        response.set_cookie(
            guard.sessions.name,
            guard.sessions.new(),
            max_age=guard.sessions.seconds,
            path="/",
            secure=_secure(guard, request),
            httponly=True,
            samesite="strict",
        )
    return response


def signed_out(guard: Guard, request: Request) -> Response:
    """The answer to the sign-out button: the session revoked here and its cookie cleared, then the sign-in page."""
    response = RedirectResponse("/login", status_code=303)
    if guard.sessions is not None:
        guard.sessions.revoke(request.cookies.get(guard.sessions.name))
        response.delete_cookie(
            guard.sessions.name, path="/", secure=_secure(guard, request), httponly=True, samesite="strict"
        )
    return response


def _secure(guard: Guard, request: Request) -> bool:
    """Whether the cookie is ``Secure``: served over HTTPS here, or by a TLS proxy on this host that says so
    (uvicorn reads ``X-Forwarded-Proto`` from 127.0.0.1 only, unless ``FORWARDED_ALLOW_IPS`` names others)."""
    return guard.https or request.url.scheme == "https"
