"""The ``paimon-tail`` command: click commands only; each parses, calls the library and renders."""
from __future__ import annotations

import os
import sys

import click

# gRPC's C core logs handshake failures and the like to stderr at INFO; errors reach the user as one line.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from .. import __version__
from .common import debug_enabled, error_boundary


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="paimon-tail")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """tail -f and point lookups for Apache Paimon tables.

    \b
    Exit codes: 0 ok, 1 runtime error (or a lookup key not found), 2 bad usage, 130 interrupted.
    """
    ctx.ensure_object(dict)["debug"] = debug


def _register() -> None:
    from .consumers import consumers_command
    from .demo import demo_command
    from .follow import follow_command

    cli.add_command(follow_command)
    cli.add_command(consumers_command)
    cli.add_command(demo_command)
    from .service import lookup, serve, service

    cli.add_command(serve)
    cli.add_command(lookup)
    cli.add_command(service)


_register()


def main() -> None:
    sys.exit(error_boundary(lambda: cli.main(standalone_mode=False), debug_enabled_any))


def debug_enabled_any() -> bool:
    return debug_enabled() or "--debug" in sys.argv[1:]
