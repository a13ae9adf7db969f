"""The ``paimon-tail`` command: click commands only; each parses, calls the library and renders.

Start-up is part of every command's speed: a command's module is imported only when that command runs (or when
``--help`` lists it), and each module imports its library parts inside the command, so ``--help`` loads click and
nothing else, and ``lookup`` never loads the follower (tests/cli/test_startup.py keeps it so).
"""
from __future__ import annotations

import gc
import importlib
import os
import sys
from typing import Dict, List, Optional, Tuple

import click

# gRPC's C core logs handshake failures and the like to stderr at INFO; errors reach the user as one line.
os.environ.setdefault("GRPC_VERBOSITY", "ERROR")

from .. import __version__
from .common import debug_enabled, error_boundary

# name → (module, attribute), in the order `--help` lists them
COMMANDS: Dict[str, Tuple[str, str]] = {
    "follow": (".follow", "follow_command"),
    "consumers": (".consumers", "consumers_command"),
    "tables": (".tables", "tables_command"),
    "describe": (".tables", "describe_command"),
    "snapshots": (".snapshots", "snapshots_command"),
    "demo": (".demo", "demo_command"),
    "serve": (".service", "serve"),
    "executor": (".service", "executor_command"),
    "lookup": (".lookup", "lookup"),
    "service": (".service", "service"),
}


ALIASES = {"ls": "tables"}  # other names people type (not listed in --help)


class LazyGroup(click.Group):
    """A group whose subcommands are imported when used (click's documented lazy-loading pattern)."""

    def list_commands(self, ctx: click.Context) -> List[str]:
        return list(COMMANDS) + [n for n in super().list_commands(ctx) if n not in COMMANDS]

    def get_command(self, ctx: click.Context, cmd_name: str) -> Optional[click.Command]:
        spec = COMMANDS.get(ALIASES.get(cmd_name, cmd_name))
        if spec is None:
            return super().get_command(ctx, cmd_name)
        module, attr = spec
        return getattr(importlib.import_module(module, __name__), attr)

    def invoke(self, ctx: click.Context):
        """A closed stdout (``| head``) ends the command quietly with exit 0 (the error boundary's OutputClosed):
        click's own handling of it would exit 1 with nothing said."""
        from ..errors import OutputClosed

        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            raise OutputClosed() from None

    def resolve_command(self, ctx: click.Context, args: List[str]):
        """A mistyped command gets the nearest one: "No such command 'folow'. Did you mean 'follow'?"."""
        try:
            return super().resolve_command(ctx, args)
        except click.UsageError:
            import difflib

            name = args[0] if args else ""
            close = difflib.get_close_matches(name, self.list_commands(ctx), n=1, cutoff=0.6)
            if not close or name.startswith("-"):
                raise
            raise click.UsageError(f"No such command {name!r}. Did you mean {close[0]!r}?", ctx) from None


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="paimon-tail")
@click.option("--debug", is_flag=True, help="Show tracebacks for errors.")
@click.pass_context
def cli(ctx: click.Context, debug: bool) -> None:
    """tail -f and point lookups for Apache Paimon tables.

    Exit codes: 0 ok, 1 runtime error (or a lookup key not found), 2 bad usage, 130 interrupted.

    \b
    Shell completion (bash; zsh and fish alike, see README):
      eval "$(_PAIMON_TAIL_COMPLETE=bash_source paimon-tail)"
    """
    ctx.ensure_object(dict)["debug"] = debug


def main() -> None:
    # No cyclic garbage collection while a command imports its libraries: pyarrow, pypaimon and grpc allocate
    # hundreds of thousands of long-lived objects, and collecting over them is ~15 % of a short command's CPU.
    # ``common.run`` turns it back on (after ``gc.freeze``) when a command's long-running part starts.
    gc.disable()
    sys.exit(error_boundary(lambda: cli.main(standalone_mode=False), debug_enabled_any))


def debug_enabled_any() -> bool:
    return debug_enabled() or "--debug" in sys.argv[1:]
