"""What every resource handler gets: the request, what it addresses, and the server's parts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from kplane._util.clock import Clock
from kplane.api import errors
from kplane.api.catalog import ResourceRecord
from kplane.server import storage
from kplane.server.endpoints import negotiation, table
from kplane.server.endpoints.requestinfo import RequestInfo
from kplane.server.registry.store import Registry

Object = dict[str, Any]


@dataclass(slots=True)
class Scope:
    request: web.Request
    info: RequestInfo
    record: ResourceRecord
    registry: Registry
    storage: storage.Storage
    clock: Clock
    form: negotiation.ResponseForm
    watch_bookmark_interval: float = 60.0

    @property
    def query(self) -> Any:
        return self.request.query

    def dry_run(self) -> bool:
        values = self.request.query.getall("dryRun", [])
        for v in values:
            if v != "All":
                raise errors.BadRequest(f'dryRun: Unsupported value: "{v}": supported values: "All"')
        return bool(values)

    async def body(self) -> bytes:
        try:
            return await self.request.read()
        except web.HTTPRequestEntityTooLarge:
            raise errors.RequestEntityTooLarge(
                "the request body is too large: at most 3145728 bytes are accepted"
            ) from None

    def respond(self, obj: Object, status: int = 200) -> web.Response:
        """An object of this resource, as JSON or as a one-row Table."""
        if self.form.table and obj.get("kind") != "Status":
            tbl = table.table(
                self.record, [obj], include_object=self.form.include_object, now=self.clock.now()
            )
            return web.Response(
                body=orjson.dumps(tbl),
                status=status,
                content_type=negotiation.TABLE_CONTENT_TYPE.split(";")[0],
                headers={"Content-Type": negotiation.TABLE_CONTENT_TYPE},
            )
        return json_response(obj, status)


def json_response(obj: Any, status: int = 200, headers: dict[str, str] | None = None) -> web.Response:
    hdrs = {"Content-Type": "application/json"}
    if headers:
        hdrs.update(headers)
    return web.Response(body=orjson.dumps(obj), status=status, headers=hdrs)


def status_response(err: errors.APIError) -> web.Response:
    headers = {}
    if err.retry_after is not None:
        headers["Retry-After"] = str(err.retry_after)
    return json_response(err.to_status(), err.code, headers)
