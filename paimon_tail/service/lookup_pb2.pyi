from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class RegisterRequest(_message.Message):
    __slots__ = ("executor_index", "address", "pid", "instance_id")
    EXECUTOR_INDEX_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    executor_index: int
    address: str
    pid: int
    instance_id: str
    def __init__(self, executor_index: _Optional[int] = ..., address: _Optional[str] = ..., pid: _Optional[int] = ..., instance_id: _Optional[str] = ...) -> None: ...

class RegisterResponse(_message.Message):
    __slots__ = ("num_executors", "heartbeat_interval_ms")
    NUM_EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    num_executors: int
    heartbeat_interval_ms: int
    def __init__(self, num_executors: _Optional[int] = ..., heartbeat_interval_ms: _Optional[int] = ...) -> None: ...

class BucketInfo(_message.Message):
    __slots__ = ("partition", "bucket", "rows")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    ROWS_FIELD_NUMBER: _ClassVar[int]
    partition: str
    bucket: int
    rows: int
    def __init__(self, partition: _Optional[str] = ..., bucket: _Optional[int] = ..., rows: _Optional[int] = ...) -> None: ...

class TableServing(_message.Message):
    __slots__ = ("table", "snapshot_id", "commit_time_ms", "keys", "buckets")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    table: str
    snapshot_id: int
    commit_time_ms: int
    keys: int
    buckets: _containers.RepeatedCompositeFieldContainer[BucketInfo]
    def __init__(self, table: _Optional[str] = ..., snapshot_id: _Optional[int] = ..., commit_time_ms: _Optional[int] = ..., keys: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[BucketInfo, _Mapping]]] = ...) -> None: ...

class HeartbeatRequest(_message.Message):
    __slots__ = ("executor_index", "instance_id", "tables", "requests", "keys_looked_up")
    EXECUTOR_INDEX_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    KEYS_LOOKED_UP_FIELD_NUMBER: _ClassVar[int]
    executor_index: int
    instance_id: str
    tables: _containers.RepeatedCompositeFieldContainer[TableServing]
    requests: int
    keys_looked_up: int
    def __init__(self, executor_index: _Optional[int] = ..., instance_id: _Optional[str] = ..., tables: _Optional[_Iterable[_Union[TableServing, _Mapping]]] = ..., requests: _Optional[int] = ..., keys_looked_up: _Optional[int] = ...) -> None: ...

class HeartbeatResponse(_message.Message):
    __slots__ = ("known",)
    KNOWN_FIELD_NUMBER: _ClassVar[int]
    known: bool
    def __init__(self, known: _Optional[bool] = ...) -> None: ...

class ExecutorsRequest(_message.Message):
    __slots__ = ("table",)
    TABLE_FIELD_NUMBER: _ClassVar[int]
    table: str
    def __init__(self, table: _Optional[str] = ...) -> None: ...

class ExecutorInfo(_message.Message):
    __slots__ = ("index", "address", "alive", "snapshot_id", "pid", "instance_id", "restarts")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ALIVE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    index: int
    address: str
    alive: bool
    snapshot_id: int
    pid: int
    instance_id: str
    restarts: int
    def __init__(self, index: _Optional[int] = ..., address: _Optional[str] = ..., alive: _Optional[bool] = ..., snapshot_id: _Optional[int] = ..., pid: _Optional[int] = ..., instance_id: _Optional[str] = ..., restarts: _Optional[int] = ...) -> None: ...

class ExecutorsResponse(_message.Message):
    __slots__ = ("protocol_version", "num_executors", "executors", "assignment", "max_batch_keys", "max_message_bytes", "tables")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    NUM_EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCH_KEYS_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    num_executors: int
    executors: _containers.RepeatedCompositeFieldContainer[ExecutorInfo]
    assignment: str
    max_batch_keys: int
    max_message_bytes: int
    tables: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, protocol_version: _Optional[int] = ..., num_executors: _Optional[int] = ..., executors: _Optional[_Iterable[_Union[ExecutorInfo, _Mapping]]] = ..., assignment: _Optional[str] = ..., max_batch_keys: _Optional[int] = ..., max_message_bytes: _Optional[int] = ..., tables: _Optional[_Iterable[str]] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ("table",)
    TABLE_FIELD_NUMBER: _ClassVar[int]
    table: str
    def __init__(self, table: _Optional[str] = ...) -> None: ...

class ExecutorStatus(_message.Message):
    __slots__ = ("info", "commit_time_ms", "keys", "buckets", "requests_per_second", "keys_per_second", "last_heartbeat_ms")
    INFO_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    KEYS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_MS_FIELD_NUMBER: _ClassVar[int]
    info: ExecutorInfo
    commit_time_ms: int
    keys: int
    buckets: _containers.RepeatedCompositeFieldContainer[BucketInfo]
    requests_per_second: float
    keys_per_second: float
    last_heartbeat_ms: int
    def __init__(self, info: _Optional[_Union[ExecutorInfo, _Mapping]] = ..., commit_time_ms: _Optional[int] = ..., keys: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[BucketInfo, _Mapping]]] = ..., requests_per_second: _Optional[float] = ..., keys_per_second: _Optional[float] = ..., last_heartbeat_ms: _Optional[int] = ...) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ("table", "address", "started_ms", "num_executors", "executors", "tables", "version", "storage_error", "storage_error_since_ms")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    STARTED_MS_FIELD_NUMBER: _ClassVar[int]
    NUM_EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STORAGE_ERROR_FIELD_NUMBER: _ClassVar[int]
    STORAGE_ERROR_SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    table: str
    address: str
    started_ms: int
    num_executors: int
    executors: _containers.RepeatedCompositeFieldContainer[ExecutorStatus]
    tables: _containers.RepeatedScalarFieldContainer[str]
    version: str
    storage_error: str
    storage_error_since_ms: int
    def __init__(self, table: _Optional[str] = ..., address: _Optional[str] = ..., started_ms: _Optional[int] = ..., num_executors: _Optional[int] = ..., executors: _Optional[_Iterable[_Union[ExecutorStatus, _Mapping]]] = ..., tables: _Optional[_Iterable[str]] = ..., version: _Optional[str] = ..., storage_error: _Optional[str] = ..., storage_error_since_ms: _Optional[int] = ...) -> None: ...

class LookupRequest(_message.Message):
    __slots__ = ("table", "keys_ipc", "buckets", "min_snapshot_id", "select")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    KEYS_IPC_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    MIN_SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    SELECT_FIELD_NUMBER: _ClassVar[int]
    table: str
    keys_ipc: bytes
    buckets: _containers.RepeatedScalarFieldContainer[int]
    min_snapshot_id: int
    select: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, table: _Optional[str] = ..., keys_ipc: _Optional[bytes] = ..., buckets: _Optional[_Iterable[int]] = ..., min_snapshot_id: _Optional[int] = ..., select: _Optional[_Iterable[str]] = ...) -> None: ...

class LookupResponse(_message.Message):
    __slots__ = ("snapshot_id", "rows_ipc", "found")
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    ROWS_IPC_FIELD_NUMBER: _ClassVar[int]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    snapshot_id: int
    rows_ipc: bytes
    found: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, snapshot_id: _Optional[int] = ..., rows_ipc: _Optional[bytes] = ..., found: _Optional[_Iterable[int]] = ...) -> None: ...
