#!/usr/bin/env python
"""Regenerate paimon_tail/service/protocol/lookup_pb2.py and lookup_pb2_grpc.py from lookup.proto (grpcio-tools).

    python scripts/gen_proto.py

The generated files are checked in; grpc_tools writes ``import lookup_pb2`` in the grpc module, which we
rewrite to a relative import so the package works wherever it is installed.
"""
from __future__ import annotations

import pathlib
import re
import sys

from grpc_tools import protoc

ROOT = pathlib.Path(__file__).resolve().parent.parent
PKG = ROOT / "paimon_tail" / "service" / "protocol"


def main() -> int:
    import grpc_tools

    include = pathlib.Path(grpc_tools.__file__).parent / "_proto"
    rc = protoc.main([
        "grpc_tools.protoc",
        f"-I{PKG}",
        f"-I{include}",
        f"--python_out={PKG}",
        f"--pyi_out={PKG}",
        f"--grpc_python_out={PKG}",
        str(PKG / "lookup.proto"),
    ])
    if rc != 0:
        return rc
    grpc_file = PKG / "lookup_pb2_grpc.py"
    text = grpc_file.read_text()
    text = re.sub(r"^import lookup_pb2 as", "from . import lookup_pb2 as", text, flags=re.M)
    grpc_file.write_text(text)
    print(f"generated {PKG / 'lookup_pb2.py'}, {grpc_file}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
