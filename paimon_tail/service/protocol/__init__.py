"""The query service's contracts: ``lookup.proto`` (+ generated code, ``scripts/gen_proto.py``), the typed change
records executors receive (``changes.py``: Paimon file metadata ↔ protobuf), the registration file
(``registration.py``), Arrow IPC helpers (``wire.py``; ``ipc_py.py`` without pyarrow), TLS + token
(``security.py``) and the addresses written down for others to dial (``addresses.py``). Everything that crosses a socket is defined here; nothing is pickled.

Importing this package loads nothing heavy (the one-key command-line lookup uses it without pyarrow).
"""

from typing import Sequence

#: 4: keys without a bucket (-1) asked of every executor, ``owners_print``, the coordinator's Lookup, table kinds.
#: 3: several typed keys in one request, rows answered as values. 2: channels and owners, Join, partial answers,
#: schema ids (lookup.proto). 1: the first release.
PROTOCOL_VERSION = 4
#: how a key's channel is computed (``ExecutorsResponse.assignment``, the registration's ``assignment``)
ASSIGNMENT = "paimon-channel-computer"


def owners_print(owners: Sequence[int]) -> int:
    """The fingerprint of an assignment (``owners[channel]`` = executor index) that ``LookupRequest.owners_print``
    carries: CRC-32 of the owners as text, never 0 (0 means "not checked")."""
    import zlib

    return zlib.crc32(",".join(map(str, owners)).encode()) or 1
