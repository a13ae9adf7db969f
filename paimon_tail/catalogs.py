"""Named catalogs: a file in the user's config directory names each catalog once, and one of them is the default
(pyiceberg's ``~/.pyiceberg.yaml`` idea), so a new shell needs no ``-w`` and no ``PAIMON_WAREHOUSE``::

    default-catalog: demo
    catalog:
      demo:
        warehouse: /home/ada/paimon-tail/paimon-tail-demo
      prod:
        metastore: rest
        uri: http://paimon-rest:8080
        warehouse: prod

Each catalog holds pypaimon catalog options, the keys of ``paimon.yaml`` (``--config``). The file is
``catalogs.yaml`` in click's application directory for paimon-tail: ``$XDG_CONFIG_HOME/paimon-tail`` (by default
``~/.config/paimon-tail``) on Linux, ``~/Library/Application Support/paimon-tail`` on macOS. ``paimon-tail demo``
registers its warehouse as ``demo``, and makes it the default when there is none.

Which catalog a command opens (``catalog.catalog_config``): its flags first, then the environment, then this
file's default. Reads nothing when a flag or ``PAIMON_WAREHOUSE`` already says, and imports yaml only to read it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Dict, Mapping, Optional

from .errors import UsageError

FILE_NAME = "catalogs.yaml"


def catalogs_path() -> str:
    """Where the named catalogs are kept (the file may not exist)."""
    import click

    return os.path.join(click.get_app_dir("paimon-tail"), FILE_NAME)


@dataclass
class Catalogs:
    """The file's content: catalogs by name, and the default's name (or None)."""

    path: str
    catalogs: Dict[str, Dict[str, str]] = field(default_factory=dict)
    default: Optional[str] = None

    def get(self, name: str) -> Dict[str, str]:
        """The options of catalog ``name``; a usage error naming the file and the catalogs it has."""
        if name in self.catalogs:
            return dict(self.catalogs[name])
        import difflib

        close = difflib.get_close_matches(name, list(self.catalogs), n=1)
        known = f"it has {', '.join(sorted(self.catalogs))}" if self.catalogs else "it names none"
        raise UsageError(f"no catalog named {name!r} in {self.path}",
                         hint=f"did you mean {close[0]}?" if close else known)

    def default_options(self) -> Optional[Dict[str, str]]:
        """The default catalog's options, or None when the file names no default."""
        if not self.default:
            return None
        if self.default not in self.catalogs:
            raise UsageError(f"default-catalog {self.default!r} of {self.path} is not one of its catalogs")
        return dict(self.catalogs[self.default])

    def text(self) -> str:
        import yaml

        data: dict = {}
        if self.default:
            data["default-catalog"] = self.default
        data["catalog"] = self.catalogs
        return yaml.safe_dump(data, sort_keys=False, default_flow_style=False)


def load(path: Optional[str] = None) -> Catalogs:
    """The named catalogs (none when the file does not exist); a file that cannot be read is a usage error."""
    path = path or catalogs_path()
    try:
        with open(path, encoding="utf-8") as f:
            raw = f.read()
    except FileNotFoundError:
        return Catalogs(path)
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    import yaml

    try:
        data = yaml.safe_load(raw)
    except yaml.YAMLError as e:
        first = str(e).strip().splitlines()
        raise UsageError(f"{path} is not valid YAML: {first[0] if first else type(e).__name__}") from None
    if data is None:
        return Catalogs(path)
    catalogs = data.get("catalog") if isinstance(data, dict) else None
    if not isinstance(data, dict) or not isinstance(catalogs or {}, dict) or \
            any(not isinstance(v, dict) for v in (catalogs or {}).values()):
        raise UsageError(f"{path} must hold 'catalog:' with a mapping of options per name",
                         hint="see docs/catalogs.md")
    default = data.get("default-catalog")
    return Catalogs(path, {str(name): {str(k): str(v) for k, v in (options or {}).items()}
                           for name, options in (catalogs or {}).items()},
                    str(default) if default is not None else None)


@dataclass(frozen=True)
class Registered:
    """What ``register`` did: the file, and whether the catalog is (now) the default."""

    path: str
    default: bool


def register(name: str, options: Mapping[str, str], path: Optional[str] = None) -> Registered:
    """Add or replace catalog ``name``; it becomes the default when the file names none. The file is rewritten
    atomically under a lock (two demos starting at once keep both writes)."""
    from .atomic_file import locked, write_text_atomic

    path = path or catalogs_path()
    with locked(path):
        catalogs = load(path)
        catalogs.catalogs[name] = dict(options)
        if not catalogs.default or catalogs.default not in catalogs.catalogs:
            catalogs.default = name
        write_text_atomic(None, path, catalogs.text())
    return Registered(path, catalogs.default == name)


__all__ = ["Catalogs", "Registered", "catalogs_path", "load", "register"]
