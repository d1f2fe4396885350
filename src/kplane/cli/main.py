"""``kplane``: the command-line entry point."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from kplane.cli import compact, controllers, create, generate, history, init, kubeconfig, migrate, serve


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="kplane", description="A Kubernetes control plane in Python.")
    sub = parser.add_subparsers(dest="command", required=True)
    serve.add_parser(sub)
    compact.add_parser(sub)
    migrate.add_parser(sub)
    controllers.add_parser(sub)
    generate.add_parser(sub)
    kubeconfig.add_parser(sub)
    history.add_parser(sub)
    init.add_parser(sub)
    create.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    return int(args.func(args))


if __name__ == "__main__":
    sys.exit(main())
