"""The query service's contracts: ``lookup.proto`` (+ generated code, ``scripts/gen_proto.py``), the typed change
records executors receive (``changes.py``: Paimon file metadata ↔ protobuf), the registration file
(``registration.py``), Arrow IPC helpers (``wire.py``; ``ipc_py.py`` without pyarrow), TLS + token
(``security.py``) and the addresses written down for others to dial (``addresses.py``). Everything that crosses a
socket is defined here; nothing is pickled. The coordinator and the executor also meet here outside a socket:
``executor_spec.py`` (what an executor is started with, and its entry point), ``executor_allocator.py``,
``local_dirs.py``. Nothing here imports ``keys/``, ``client/``, ``coordinator/``, ``executor/`` or ``store/``.

Importing this package loads nothing heavy (the one-key command-line lookup uses it without pyarrow).
"""

#: 4: every primary-key table (keys of tables whose bucket does not follow from the key routed by their slot), a
#: bucket of -1 computed by the executor, the coordinator's Lookup, table kinds in StatusResponse.
#: 3: several typed keys in one request, rows answered as values. 2: channels and owners, Join, partial answers,
#: schema ids (lookup.proto). 1: the first release.
PROTOCOL_VERSION = 4
#: how a key's channel is computed (``ExecutorsResponse.assignment``, the registration's ``assignment``)
ASSIGNMENT = "paimon-channel-computer"
#: the largest gRPC message a channel sends or takes: clients', executors' and serve's default (--max-message-bytes)
DEFAULT_MAX_MESSAGE_BYTES = 64 << 20

