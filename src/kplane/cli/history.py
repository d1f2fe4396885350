"""``kplane history`` and ``kplane why``: an object's past, read from a kplane server.

``kplane history TYPE/NAME`` lists the object's retained revisions (``history.kplane.dev``
``revisions``) with time, operation, user and field managers; ``--diff [FROM TO]`` shows unified
YAML diffs between revisions (every consecutive pair without revisions); ``--deleted TYPE`` lists
deleted objects of a resource. ``kplane why TYPE/NAME [--revision N]`` puts a revision beside the
reconcile that wrote it, found in the reconcile traces (``/debug/kplane/traces`` of the API server
for ``kplane serve``'s built-in controllers, or of an operator's manager with ``--traces URL``).

Both find the server as kubectl does (``--kubeconfig``, else ``$KUBECONFIG``, else
``~/.kube/config``; ``--context``) and resolve ``TYPE`` through discovery, short names included.
"""

from __future__ import annotations

import argparse
import asyncio
import datetime
import difflib
import sys
from collections.abc import Sequence
from typing import Any, TextIO

import orjson

Object = dict[str, Any]
REVISIONS = "/apis/history.kplane.dev/v1alpha1"
TRACES = "/debug/kplane/traces"
_LIMIT = 10_000
_NOISE = ("managedFields",)  # metadata fields a readable diff leaves out


def add_parser(sub: Any) -> None:
    h = sub.add_parser("history", help="an object's past revisions, writers and diffs (from a kplane server)")
    h.add_argument("target", help="TYPE/NAME (e.g. deploy/web); with --deleted, TYPE (e.g. cm)")
    h.add_argument(
        "--diff",
        nargs="*",
        type=int,
        metavar="REV",
        help="unified YAML diff between two revisions (FROM TO), or of each change when none given",
    )
    h.add_argument("--deleted", action="store_true", help="list deleted objects of TYPE")
    h.add_argument("-o", "--output", choices=("table", "json", "yaml"), default="table")
    _connection_args(h)
    h.set_defaults(func=run_history)

    w = sub.add_parser(
        "why", help="why an object changed: a revision's writer and the reconcile that wrote it"
    )
    w.add_argument("target", help="TYPE/NAME (e.g. deploy/web)")
    w.add_argument("--revision", type=int, default=0, help="the revision to explain (default: the latest)")
    w.add_argument(
        "--traces",
        default="",
        help=f"URL of an operator manager's {TRACES} (default: the API server's, kplane serve's controllers)",
    )
    _connection_args(w)
    w.set_defaults(func=run_why)


def _connection_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("-n", "--namespace", default="", help="namespace (default: the context's)")
    p.add_argument("-A", "--all-namespaces", action="store_true", help="with --deleted: every namespace")
    p.add_argument("--kubeconfig", default="", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config)")
    p.add_argument("--context", default=None, help="kubeconfig context (default: the current one)")


class Failure(Exception):
    """A user-facing error: printed as ``kplane: <message>``, exit status 1."""


def run_history(args: argparse.Namespace) -> int:
    return _run(_history(args, sys.stdout))


def run_why(args: argparse.Namespace) -> int:
    return _run(_why(args, sys.stdout))


def _run(work: Any) -> int:
    from kplane.api import errors

    try:
        asyncio.run(work)
    except (Failure, errors.APIError, ValueError, LookupError, OSError) as err:
        print(f"kplane: {err}", file=sys.stderr)
        return 1
    return 0


async def _client(args: argparse.Namespace) -> Any:
    from kplane.client import config as config_mod
    from kplane.client import typed

    cfg = (
        config_mod.Config.from_kubeconfig(args.kubeconfig, args.context)
        if args.kubeconfig
        else config_mod.Config.load(args.context)
    )
    return typed.Client(cfg)


async def _target(client: Any, text: str, namespace: str, *, named: bool) -> tuple[Any, str, str]:
    """(resource, namespace, name) of ``TYPE/NAME`` (``TYPE`` alone unless ``named``)."""
    kind, _, name = text.partition("/")
    if named and not name:
        raise Failure(f"expected TYPE/NAME, e.g. deploy/web, not {text!r}")
    resource = await client.mapper.resolve(kind)
    ns = (namespace or client.config.namespace or "default") if resource.namespaced else ""
    return resource, ns, name


async def fetch_revisions(
    client: Any, resource: Any, namespace: str, name: str, *, deleted: bool
) -> list[Object]:
    """The ``Revision`` items of ``name`` (of every object with ``deleted``: their deletions)."""
    selector = f"target.resource={resource.plural}{'.' + resource.group if resource.group else ''}"
    selector += f",target.version={resource.version}"
    if name:
        selector += f",target.name={name}"
    if deleted:
        selector += ",operation=DELETE"
    path = f"{REVISIONS}/namespaces/{namespace}/revisions" if namespace else f"{REVISIONS}/revisions"
    body = await client.rest.request("GET", path, query={"fieldSelector": selector, "limit": str(_LIMIT)})
    items: list[Object] = body.get("items") or []
    return items


async def _history(args: argparse.Namespace, out: TextIO) -> None:
    async with await _client(args) as client:
        namespace = "" if args.all_namespaces else args.namespace
        resource, ns, name = await _target(client, args.target, namespace, named=not args.deleted)
        if args.all_namespaces:
            ns = ""
        items = await fetch_revisions(client, resource, ns, name, deleted=args.deleted)
    label = f"{args.target.partition('/')[0]}/{name}" if name else args.target
    if args.output != "table":
        _dump({"items": items}, args.output, out)
    elif args.deleted:
        out.write(deleted_table(items))
    elif args.diff is None:
        if not items:
            raise Failure(f"no retained revisions of {label}")
        out.write(revision_table(items))
    else:
        out.write(diffs(items, args.diff, label))


def _dump(value: Any, form: str, out: TextIO) -> None:
    if form == "json":
        out.write(orjson.dumps(value, option=orjson.OPT_INDENT_2).decode() + "\n")
    else:
        import yaml

        out.write(yaml.safe_dump(value, sort_keys=False))


def _when(item: Object) -> str:
    stamp = item.get("timestamp")
    if not stamp:
        return "-"
    when = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    return when.strftime("%Y-%m-%d %H:%M:%S") + "Z"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return "".join(
        "   ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() + "\n" for row in rows
    )


def revision_table(items: list[Object]) -> str:
    """REVISION, TIME, OPERATION, USER and MANAGERS of each revision, oldest first."""
    rows = [["REVISION", "TIME", "OPERATION", "USER", "MANAGERS"]]
    for i in items:
        managers = ",".join(i.get("fieldManagers") or []) or "-"
        rows.append([str(i["revision"]), _when(i), str(i["operation"]), str(i.get("user") or "-"), managers])
    return _table(rows)


def deleted_table(items: list[Object]) -> str:
    """One line per deletion: NAMESPACE, NAME, the deletion's REVISION and TIME, and its USER."""
    rows = [["NAMESPACE", "NAME", "REVISION", "DELETED", "USER"]]
    for i in items:
        target = i.get("target") or {}
        rows.append(
            [
                str(target.get("namespace") or "-"),
                str(target.get("name", "")),
                str(i["revision"]),
                _when(i),
                str(i.get("user") or "-"),
            ]
        )
    return _table(rows) if len(rows) > 1 else "No deleted objects found.\n"


def readable(obj: Object) -> str:
    """``obj`` as YAML without the bookkeeping a diff reader does not want (``managedFields``)."""
    import yaml

    meta = {k: v for k, v in (obj.get("metadata") or {}).items() if k not in _NOISE}
    return str(yaml.safe_dump({**obj, "metadata": meta}, sort_keys=False))


def state_at(items: list[Object], revision: int) -> Object:
    """The revision item in force at ``revision`` (the newest at or before it)."""
    found = [i for i in items if int(i["revision"]) <= revision]
    if not found:
        raise Failure(f"no retained revision at or before {revision}")
    return found[-1]


def diffs(items: list[Object], revisions: Sequence[int], label: str) -> str:
    """Unified diffs: between the states at ``revisions`` (FROM TO), or, with none, of every
    retained change (each revision against the one before it; a DELETE shows the deletion)."""
    if len(revisions) not in (0, 2):
        raise Failure("--diff takes two revisions (FROM TO), or none for every change")
    if not items:
        raise Failure(f"no retained revisions of {label}")
    pairs: list[tuple[Object | None, Object]]
    if revisions:
        pairs = [(state_at(items, revisions[0]), state_at(items, revisions[1]))]
    else:
        pairs = list(zip([None, *items[:-1]], items, strict=True))
    out = []
    for before, after in pairs:
        old = "" if before is None or before.get("operation") == "DELETE" else readable(before["object"])
        new = "" if after["operation"] == "DELETE" else readable(after["object"])
        who = after.get("user") or "-"
        head = f"# revision {after['revision']}: {after['operation']} at {_when(after)} by {who}"
        managers = ",".join(after.get("fieldManagers") or [])
        out.append(head + (f" ({managers})" if managers else "") + "\n")
        out.extend(
            difflib.unified_diff(
                old.splitlines(keepends=True),
                new.splitlines(keepends=True),
                fromfile=f"{label}@{before['revision']}" if before is not None else "/dev/null",
                tofile=f"{label}@{after['revision']}",
            )
        )
    return "".join(out)


async def _why(args: argparse.Namespace, out: TextIO) -> None:
    async with await _client(args) as client:
        resource, ns, name = await _target(client, args.target, args.namespace, named=True)
        items = await fetch_revisions(client, resource, ns, name, deleted=False)
        if not items:
            raise Failure(f"no retained revisions of {args.target}")
        item = state_at(items, args.revision) if args.revision else items[-1]
        if args.revision and int(item["revision"]) != args.revision:
            raise Failure(
                f"{args.target} has no revision {args.revision} (the state then is {item['revision']}'s)"
            )
        query = {"resourceVersion": str(item["revision"]), "writeName": name, "limit": "1000"}
        if args.traces:
            traces = await _get_json(args.traces, query)
        else:
            traces = await client.rest.request("GET", TRACES, query=query)
    out.write(explain(item, (traces or {}).get("items") or []))


async def _get_json(url: str, query: dict[str, str]) -> Any:
    import aiohttp

    async with aiohttp.ClientSession() as session, session.get(url, params=query) as resp:
        if resp.status != 200:
            raise Failure(f"{url}: HTTP {resp.status}")
        return await resp.json(content_type=None)


def explain(item: Object, traces: list[Object]) -> str:
    """The revision's write (time, operation, user, managers) and each traced reconcile that
    produced it: controller, outcome, what triggered it and what else it wrote."""
    target = item.get("target") or {}
    where = (
        f"{target.get('namespace')}/{target.get('name')}" if target.get("namespace") else target.get("name")
    )
    managers = ",".join(item.get("fieldManagers") or []) or "-"
    lines = [
        f"revision {item['revision']} of {target.get('kind')} {where}: {item['operation']} at {_when(item)}"
        f" by {item.get('user') or '-'} (field managers: {managers})"
    ]
    if not traces:
        lines.append(
            "no traced reconcile wrote it: a client outside the traced controllers did"
            " (or its trace left the ring)"
        )
    for t in traces:
        lines.append(
            f"reconcile of {t['controller']} for {_request(t)}: {t['result']}"
            f" ({t['durationSeconds'] * 1000:.1f} ms, traceID {t['traceID']})"
        )
        lines.append("  triggered by:")
        lines.extend(f"    {_trigger(g)}" for g in t["triggers"] or [{"type": "unknown"}])
        lines.append("  wrote:")
        lines.extend(f"    {_write(w, item)}" for w in t["writes"])
    return "\n".join(lines) + "\n"


def _request(t: Object) -> str:
    return f"{t['namespace']}/{t['name']}" if t.get("namespace") else str(t.get("name"))


def _trigger(g: Object) -> str:
    if g.get("event"):
        where = f"{g['namespace']}/{g['name']}" if g.get("namespace") else g.get("name")
        rv = g["resourceVersion"]
        return f"{g['type']} {g['event']} {g['kind']} {where} resourceVersion {rv} (via {g['via']})"
    if g.get("after"):
        return f"{g['type']} after {g['after']}s"
    return str(g["type"])


def _write(w: Object, item: Object) -> str:
    where = f"{w['namespace']}/{w['name']}" if w.get("namespace") else w.get("name")
    sub = f"/{w['subresource']}" if w.get("subresource") else ""
    outcome = f"-> {w['resourceVersion']}" if w.get("resourceVersion") else f"failed: {w.get('error')}"
    if w.get("conflict"):
        outcome = "conflict"
    mark = "  <- this revision" if w.get("resourceVersion") == str(item["revision"]) else ""
    return f"{w['verb']} {w['resource']}{sub} {where} {outcome}{mark}"
