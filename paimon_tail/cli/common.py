"""What every command shares: catalog options, the event loop, and the one error boundary."""
from __future__ import annotations

import functools
import os
import sys
import traceback
from typing import Any, Callable

import click

from ..catalog import CatalogConfig, catalog_config
from ..errors import (EXIT_INTERRUPTED, EXIT_RUNTIME, EXIT_USAGE, OutputClosed, PaimonTailError, library_failure,
                      one_line, safe_text)
from .types import FilePath, Text


def catalog_options(f: Callable) -> Callable:
    """--warehouse / --catalog NAME / -O key=value / --config FILE, merged into ``catalog`` (a CatalogConfig)
    for the command: flags, then PAIMON_WAREHOUSE, then the default named catalog (``catalog.catalog_config``)."""

    @click.option("--warehouse", "-w", metavar="PATH", type=Text(),
                  help="Warehouse path or URI [default: env PAIMON_WAREHOUSE, else the default catalog].")
    @click.option("--catalog", "catalog_name", metavar="NAME", type=Text(name=True), shell_complete=complete_catalogs,
                  help="A catalog named in the user's catalogs.yaml (docs/catalogs.md).")
    @click.option("--catalog-option", "-O", "catalog_option", multiple=True, metavar="KEY=VALUE",
                  help="Catalog option passed to pypaimon (repeatable), e.g. -O metastore=rest -O uri=...")
    @click.option("--config", "config_file", metavar="FILE", type=FilePath(),
                  help="YAML catalog config, the same form as pypaimon's paimon.yaml.")
    @functools.wraps(f)
    def wrapper(*args: Any, warehouse: str | None, catalog_name: str | None, catalog_option: tuple,
                config_file: str | None, **kwargs: Any) -> Any:
        kwargs["catalog"] = catalog_config(warehouse, catalog_option, config_file, catalog_name)
        return f(*args, **kwargs)

    return wrapper


def complete_catalogs(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Shell completion of --catalog: the names in the user's catalogs.yaml."""
    from .. import catalogs

    try:
        names = catalogs.load().catalogs
    except Exception:  # completion never fails loudly
        return []
    return sorted(n for n in names if n.startswith(incomplete))


def complete_tables(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
    """Shell completion of DB.TABLE: the tables of a local warehouse (the command line's, the environment's or
    the default catalog's), read from its directories (``<db>.db/<table>/schema``) without opening a catalog;
    nothing for other catalogs."""
    import glob

    try:
        warehouse = catalog_config(ctx.params.get("warehouse"), (), ctx.params.get("config_file"),
                                   ctx.params.get("catalog_name")).warehouse or ""
    except Exception:  # completion never fails loudly
        return []
    if warehouse.startswith("file://"):
        warehouse = warehouse[len("file://"):]
    if not warehouse or "://" in warehouse:
        return []
    names = []
    for schema in glob.glob(os.path.join(glob.escape(warehouse), "*.db", "*", "schema")):
        table_dir = os.path.dirname(schema)
        db = os.path.basename(os.path.dirname(table_dir))[:-len(".db")]
        names.append(f"{db}.{os.path.basename(table_dir)}")
    return sorted(n for n in names if n.startswith(incomplete))


START_POSITIONS = (("latest-full", "the table now, then every commit"), ("latest", "only new commits"),
                   ("earliest", "every change still kept"), ("snapshot:", "changes from snapshot N on"),
                   ("snapshot-full:", "the table at snapshot N, then changes"),
                   ("timestamp:", "changes from time T on (ISO-8601 or epoch ms)"), ("-1h", "changes of the last hour"),
                   ("compacted-full", "the table's last full compaction, then changes"),
                   ("file-creation-time:", "the rows of files created from T on, then changes"),
                   ("creation-timestamp:", "snapshots from T on, or files created from T on when expired"),
                   ("tag:", "the table as of tag NAME, then changes"))
END_POSITIONS = (("snapshot:", "stop after snapshot N"), ("timestamp:", "stop after the last commit at or before T"),
                 ("tag:", "stop after tag NAME's snapshot"))


def complete_positions(positions) -> Callable:
    """Shell completion of --from / --until: the position forms, each with what it means (zsh and fish show it)."""

    def complete(ctx: click.Context, param: click.Parameter, incomplete: str) -> list:
        from click.shell_completion import CompletionItem

        return [CompletionItem(value, help=help_) for value, help_ in positions if value.startswith(incomplete)]

    return complete


def security_options(f: Callable) -> Callable:
    """--tls-ca / --tls-cert / --tls-key / --token-file, for the commands that talk to the query service."""
    f = click.option("--tls-ca", type=FilePath(), help="CA certificate: the server requires client "
                     "certificates signed by it (mutual TLS); clients trust servers signed by it.")(f)
    f = click.option("--tls-key", type=FilePath(), help="Private key for --tls-cert.")(f)
    f = click.option("--tls-cert", type=FilePath(),
                     help="Certificate (PEM): the server's, or the client's for mutual TLS.")(f)
    f = click.option("--token-file", type=FilePath(),
                     help="File holding the bearer token (default: env PAIMON_TAIL_TOKEN).")(f)
    return f


class ByteSize(click.ParamType):
    """A size: bytes, or with a unit (K, M, G, T; KB/KiB/... mean the same, powers of 1024): ``512M``, ``2G``."""

    name = "SIZE"
    _UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}

    def convert(self, value, param, ctx):
        if isinstance(value, int):
            return value
        text = str(value).strip().upper().replace(" ", "")
        for suffix in ("IB", "B"):
            if text.endswith(suffix) and len(text) > len(suffix) and not text[-len(suffix) - 1].isdigit():
                text = text[: -len(suffix)]
                break
        else:
            if text.endswith("B") and text[:-1].replace(".", "", 1).isdigit():
                text = text[:-1]
        unit = text[-1] if text and text[-1] in self._UNITS else ""
        number = text[: len(text) - len(unit)]
        try:
            size = int(float(number) * self._UNITS[unit])
        except (ValueError, OverflowError):  # not a number; nan; inf
            self.fail(f"{value!r} is not a size (e.g. 512M, 2G, 1048576)", param, ctx)
        if size <= 0:
            self.fail(f"{value!r}: a size must be more than 0", param, ctx)
        return size


def store_options(f: Callable) -> Callable:
    """--max-memory / --max-disk: an executor's budgets (docs/query-service.md#the-store)."""
    f = click.option("--max-disk", type=ByteSize(), default=None,
                     help="Row files each executor keeps on local disk, e.g. 20G [default: no limit]; beyond it the "
                     "least recently used are deleted and read again from the table when needed.")(f)
    f = click.option("--max-memory", type=ByteSize(), default=None,
                     help="Decompressed rows each executor keeps in memory, e.g. 4G [default: a quarter of this "
                     "machine's memory, shared by the executors started here].")(f)
    return f


def security_from_options(token_file, tls_cert, tls_key, tls_ca):
    from ..service.protocol.security import Security

    return Security.from_options(token_file=token_file, tls_cert=tls_cert, tls_key=tls_key, tls_ca=tls_ca)


def run(coro) -> Any:
    """Run a coroutine on the one event-loop runner (``concurrency.run_loop``); a closed stdout becomes
    ``OutputClosed``."""
    from ..compat import patches
    from ..concurrency import run_loop

    patches.install_long_running()  # a command that runs for days: pypaimon's file paths do not grow the interned table
    try:
        return run_loop(coro)
    except BrokenPipeError:
        raise OutputClosed() from None


def debug_enabled() -> bool:
    ctx = click.get_current_context(silent=True)
    root = ctx.find_root() if ctx else None
    return bool(root and root.obj and root.obj.get("debug")) or os.environ.get("PAIMON_TAIL_DEBUG") == "1"


def _quiet_stdout() -> None:
    """After a closed pipe, point stdout at /dev/null so Python's final flush does not complain."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except OSError:
        pass


def _error_line(message: str) -> None:
    """The last line: plain, or JSON for a command running with --log-format json; safe for a terminal either way
    (a table name or a value with an escape character in it is shown escaped, never run)."""
    from .. import log_format

    if log_format.current == log_format.JSON:
        log_format.say(message, "error")
    else:
        click.echo(f"paimon-tail: {safe_text(message)}", err=True)


def error_boundary(main: Callable[[], Any], debug: Callable[[], bool]) -> int:
    """Run the CLI; turn every failure into one line on stderr and a documented exit code (docs/errors.md: the
    taxonomy). What storage, JSON/YAML, Arrow/Parquet, gRPC and TLS raise on bad input or a failing system is a
    runtime error in their words (``errors.library_failure``); "unexpected error" is left for bugs."""
    try:
        code = main()  # click returns a command's exit code under standalone_mode=False
        return code if isinstance(code, int) else 0
    except click.exceptions.Exit as e:
        return e.exit_code
    except click.exceptions.UsageError as e:
        hint = f" (see: {e.ctx.command_path} --help)" if e.ctx else ""
        _error_line(f"{e.format_message()}{hint}")
        return EXIT_USAGE
    except click.exceptions.ClickException as e:
        _error_line(e.format_message())
        return e.exit_code
    except PaimonTailError as e:
        if debug():
            traceback.print_exc()
        _error_line(str(e))
        return e.exit_code
    except (BrokenPipeError, OutputClosed):
        _quiet_stdout()
        return 0
    except (KeyboardInterrupt, click.exceptions.Abort):
        return EXIT_INTERRUPTED
    except Exception as e:
        if debug():
            traceback.print_exc()
        failure = library_failure(e)
        if failure is not None:  # a file, a disk, the network or a peer: what it said, as a runtime error
            _error_line(str(failure))
            return failure.exit_code
        # a bug: say so in one line, with the traceback only under --debug
        _error_line(f"unexpected error: {type(e).__name__}: {one_line(e)} (rerun with --debug for the traceback)")
        return EXIT_RUNTIME


__all__ = ["CatalogConfig", "catalog_options", "complete_tables", "error_boundary", "run", "security_from_options",
           "security_options"]
