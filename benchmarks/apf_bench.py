"""Per-request cost of API Priority and Fairness in the server (in process); prints one JSON line.

The APF filter (``kplane.server.filters.flowcontrol``) around a handler that answers at once, with
upstream's bootstrap configuration loaded, for a request by a ServiceAccount (matched at precedence
9000 after twelve schemas: the longest ordinary path) and one by ``system:masters`` (exempt), minus
the same handler called directly. ``classify_miss_us`` is a classification before it is cached
(the first request of a user and kind after a configuration change). ``noop_us`` (one empty
coroutine call) is a yardstick for how loaded the machine was.

    python benchmarks/apf_bench.py [--rounds N]
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import json
import time
from typing import Any

from aiohttp import web

from kplane._util.clock import RealClock
from kplane.server.auth import authn
from kplane.server.endpoints import metrics, requestinfo
from kplane.server.filters.flowcontrol import priority_and_fairness
from kplane.server.flowcontrol import bootstrap
from kplane.server.flowcontrol.config import PREFIX, FlowControl
from kplane.server.flowcontrol.matching import request_of

BOT = authn.UserInfo(
    "system:serviceaccount:team:bot",
    groups=("system:serviceaccounts", "system:serviceaccounts:team", "system:authenticated"),
)
ADMIN = authn.UserInfo("kplane-admin", groups=("system:masters", "system:authenticated"))
_OK = web.Response()


class _Request(dict[Any, Any]):
    method = "POST"


async def _answer(request: Any) -> web.StreamResponse:
    return _OK


async def _time(fn: Any, request: Any, rounds: int) -> float:
    start = time.perf_counter()
    for _ in range(rounds):
        await fn(request, _answer)
    return (time.perf_counter() - start) / rounds * 1e6


async def _direct(request: Any, handler: Any) -> web.StreamResponse:
    return await handler(request)


async def main_async(rounds: int) -> dict[str, Any]:
    control = FlowControl(600, 15.0, RealClock())
    for i, (plural, obj) in enumerate(bootstrap.all_objects()):
        obj = copy.deepcopy(obj)
        obj["metadata"]["uid"] = f"uid-{i}"
        control.apply(f"{PREFIX}{plural}/{obj['metadata']['name']}", obj)
    apf = priority_and_fairness(control, metrics.APIMetrics())
    info = requestinfo.parse("POST", "/api/v1/namespaces/team/configmaps")
    out: dict[str, Any] = {"benchmark": "apf", "rounds": rounds}
    for label, user in (("serviceaccount", BOT), ("exempt", ADMIN)):
        request = _Request({requestinfo.INFO_KEY: info, authn.USER_KEY: user})
        await _time(apf, request, 1000)  # warm
        base = min([await _time(_direct, request, rounds) for _ in range(3)])
        with_apf = min([await _time(apf, request, rounds) for _ in range(3)])
        out[f"{label}_filter_us"] = round(with_apf - base, 2)
    req = request_of("create", True, "", "configmaps", "", "team", "")
    start = time.perf_counter()
    for _ in range(rounds // 10):
        control._cache.clear()
        control.classify(BOT, req)
    out["classify_miss_us"] = round((time.perf_counter() - start) / (rounds // 10) * 1e6, 2)
    out["noop_us"] = round(await _time(_direct, _Request(), rounds), 2)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=50_000)
    args = parser.parse_args(argv)
    print(json.dumps(asyncio.run(main_async(args.rounds))))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
