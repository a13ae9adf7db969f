from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class StandbyHello(_message.Message):
    __slots__ = ("address", "service_id", "pid", "host", "tables", "warehouse")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    WAREHOUSE_FIELD_NUMBER: _ClassVar[int]
    address: str
    service_id: str
    pid: int
    host: str
    tables: _containers.RepeatedScalarFieldContainer[str]
    warehouse: str
    def __init__(self, address: _Optional[str] = ..., service_id: _Optional[str] = ..., pid: _Optional[int] = ..., host: _Optional[str] = ..., tables: _Optional[_Iterable[str]] = ..., warehouse: _Optional[str] = ...) -> None: ...

class StandbyNews(_message.Message):
    __slots__ = ("epoch", "handover", "active")
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    HANDOVER_FIELD_NUMBER: _ClassVar[int]
    ACTIVE_FIELD_NUMBER: _ClassVar[int]
    epoch: int
    handover: bool
    active: str
    def __init__(self, epoch: _Optional[int] = ..., handover: _Optional[bool] = ..., active: _Optional[str] = ...) -> None: ...

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
    __slots__ = ("table", "snapshot_id", "commit_time_ms", "keys", "buckets", "schema_id", "channels", "files_loaded", "files", "disk_bytes", "settled")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    FILES_LOADED_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    DISK_BYTES_FIELD_NUMBER: _ClassVar[int]
    SETTLED_FIELD_NUMBER: _ClassVar[int]
    table: str
    snapshot_id: int
    commit_time_ms: int
    keys: int
    buckets: _containers.RepeatedCompositeFieldContainer[BucketInfo]
    schema_id: int
    channels: _containers.RepeatedScalarFieldContainer[int]
    files_loaded: int
    files: int
    disk_bytes: int
    settled: bool
    def __init__(self, table: _Optional[str] = ..., snapshot_id: _Optional[int] = ..., commit_time_ms: _Optional[int] = ..., keys: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[BucketInfo, _Mapping]]] = ..., schema_id: _Optional[int] = ..., channels: _Optional[_Iterable[int]] = ..., files_loaded: _Optional[int] = ..., files: _Optional[int] = ..., disk_bytes: _Optional[int] = ..., settled: _Optional[bool] = ...) -> None: ...

class ExecutorsRequest(_message.Message):
    __slots__ = ("table", "protocol_version")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    table: str
    protocol_version: int
    def __init__(self, table: _Optional[str] = ..., protocol_version: _Optional[int] = ...) -> None: ...

class ExecutorInfo(_message.Message):
    __slots__ = ("index", "address", "alive", "snapshot_id", "pid", "instance_id", "restarts", "host", "joined")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    ALIVE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    RESTARTS_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    JOINED_FIELD_NUMBER: _ClassVar[int]
    index: int
    address: str
    alive: bool
    snapshot_id: int
    pid: int
    instance_id: str
    restarts: int
    host: str
    joined: bool
    def __init__(self, index: _Optional[int] = ..., address: _Optional[str] = ..., alive: _Optional[bool] = ..., snapshot_id: _Optional[int] = ..., pid: _Optional[int] = ..., instance_id: _Optional[str] = ..., restarts: _Optional[int] = ..., host: _Optional[str] = ..., joined: _Optional[bool] = ...) -> None: ...

class ExecutorsResponse(_message.Message):
    __slots__ = ("protocol_version", "num_executors", "executors", "assignment", "max_batch_keys", "max_message_bytes", "tables", "channels", "owners")
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    NUM_EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCH_KEYS_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    OWNERS_FIELD_NUMBER: _ClassVar[int]
    protocol_version: int
    num_executors: int
    executors: _containers.RepeatedCompositeFieldContainer[ExecutorInfo]
    assignment: str
    max_batch_keys: int
    max_message_bytes: int
    tables: _containers.RepeatedScalarFieldContainer[str]
    channels: int
    owners: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, protocol_version: _Optional[int] = ..., num_executors: _Optional[int] = ..., executors: _Optional[_Iterable[_Union[ExecutorInfo, _Mapping]]] = ..., assignment: _Optional[str] = ..., max_batch_keys: _Optional[int] = ..., max_message_bytes: _Optional[int] = ..., tables: _Optional[_Iterable[str]] = ..., channels: _Optional[int] = ..., owners: _Optional[_Iterable[int]] = ...) -> None: ...

class StatusRequest(_message.Message):
    __slots__ = ("table",)
    TABLE_FIELD_NUMBER: _ClassVar[int]
    table: str
    def __init__(self, table: _Optional[str] = ...) -> None: ...

class ExecutorStatus(_message.Message):
    __slots__ = ("info", "commit_time_ms", "keys", "buckets", "requests_per_second", "keys_per_second", "last_heartbeat_ms", "schema_id", "channels", "files_loaded", "files", "disk_bytes", "memory_bytes", "settled")
    INFO_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    KEYS_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    KEYS_PER_SECOND_FIELD_NUMBER: _ClassVar[int]
    LAST_HEARTBEAT_MS_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    FILES_LOADED_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    DISK_BYTES_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    SETTLED_FIELD_NUMBER: _ClassVar[int]
    info: ExecutorInfo
    commit_time_ms: int
    keys: int
    buckets: _containers.RepeatedCompositeFieldContainer[BucketInfo]
    requests_per_second: float
    keys_per_second: float
    last_heartbeat_ms: int
    schema_id: int
    channels: _containers.RepeatedScalarFieldContainer[int]
    files_loaded: int
    files: int
    disk_bytes: int
    memory_bytes: int
    settled: bool
    def __init__(self, info: _Optional[_Union[ExecutorInfo, _Mapping]] = ..., commit_time_ms: _Optional[int] = ..., keys: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[BucketInfo, _Mapping]]] = ..., requests_per_second: _Optional[float] = ..., keys_per_second: _Optional[float] = ..., last_heartbeat_ms: _Optional[int] = ..., schema_id: _Optional[int] = ..., channels: _Optional[_Iterable[int]] = ..., files_loaded: _Optional[int] = ..., files: _Optional[int] = ..., disk_bytes: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., settled: _Optional[bool] = ...) -> None: ...

class StatusResponse(_message.Message):
    __slots__ = ("table", "address", "started_ms", "num_executors", "executors", "tables", "version", "storage_error", "storage_error_since_ms", "channels", "schema_id", "role", "epoch", "standbys", "table_kind", "buckets", "partitions", "postponed_files")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    STARTED_MS_FIELD_NUMBER: _ClassVar[int]
    NUM_EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    EXECUTORS_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    VERSION_FIELD_NUMBER: _ClassVar[int]
    STORAGE_ERROR_FIELD_NUMBER: _ClassVar[int]
    STORAGE_ERROR_SINCE_MS_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    ROLE_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    STANDBYS_FIELD_NUMBER: _ClassVar[int]
    TABLE_KIND_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    PARTITIONS_FIELD_NUMBER: _ClassVar[int]
    POSTPONED_FILES_FIELD_NUMBER: _ClassVar[int]
    table: str
    address: str
    started_ms: int
    num_executors: int
    executors: _containers.RepeatedCompositeFieldContainer[ExecutorStatus]
    tables: _containers.RepeatedScalarFieldContainer[str]
    version: str
    storage_error: str
    storage_error_since_ms: int
    channels: int
    schema_id: int
    role: str
    epoch: int
    standbys: _containers.RepeatedScalarFieldContainer[str]
    table_kind: str
    buckets: int
    partitions: int
    postponed_files: int
    def __init__(self, table: _Optional[str] = ..., address: _Optional[str] = ..., started_ms: _Optional[int] = ..., num_executors: _Optional[int] = ..., executors: _Optional[_Iterable[_Union[ExecutorStatus, _Mapping]]] = ..., tables: _Optional[_Iterable[str]] = ..., version: _Optional[str] = ..., storage_error: _Optional[str] = ..., storage_error_since_ms: _Optional[int] = ..., channels: _Optional[int] = ..., schema_id: _Optional[int] = ..., role: _Optional[str] = ..., epoch: _Optional[int] = ..., standbys: _Optional[_Iterable[str]] = ..., table_kind: _Optional[str] = ..., buckets: _Optional[int] = ..., partitions: _Optional[int] = ..., postponed_files: _Optional[int] = ...) -> None: ...

class ExecutorHello(_message.Message):
    __slots__ = ("address", "pid", "instance_id", "index", "host", "protocol_version", "warehouse", "service_id")
    ADDRESS_FIELD_NUMBER: _ClassVar[int]
    PID_FIELD_NUMBER: _ClassVar[int]
    INSTANCE_ID_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    HOST_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    WAREHOUSE_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    address: str
    pid: int
    instance_id: str
    index: int
    host: str
    protocol_version: int
    warehouse: str
    service_id: str
    def __init__(self, address: _Optional[str] = ..., pid: _Optional[int] = ..., instance_id: _Optional[str] = ..., index: _Optional[int] = ..., host: _Optional[str] = ..., protocol_version: _Optional[int] = ..., warehouse: _Optional[str] = ..., service_id: _Optional[str] = ...) -> None: ...

class Heartbeat(_message.Message):
    __slots__ = ("tables", "requests", "keys_looked_up", "memory_bytes", "draining", "stats")
    TABLES_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_FIELD_NUMBER: _ClassVar[int]
    KEYS_LOOKED_UP_FIELD_NUMBER: _ClassVar[int]
    MEMORY_BYTES_FIELD_NUMBER: _ClassVar[int]
    DRAINING_FIELD_NUMBER: _ClassVar[int]
    STATS_FIELD_NUMBER: _ClassVar[int]
    tables: _containers.RepeatedCompositeFieldContainer[TableServing]
    requests: int
    keys_looked_up: int
    memory_bytes: int
    draining: bool
    stats: ExecutorStats
    def __init__(self, tables: _Optional[_Iterable[_Union[TableServing, _Mapping]]] = ..., requests: _Optional[int] = ..., keys_looked_up: _Optional[int] = ..., memory_bytes: _Optional[int] = ..., draining: _Optional[bool] = ..., stats: _Optional[_Union[ExecutorStats, _Mapping]] = ...) -> None: ...

class ExecutorStats(_message.Message):
    __slots__ = ("keys_found", "keys_missing", "keys_failed", "requests_refused", "lookup_seconds", "visible_seconds")
    KEYS_FOUND_FIELD_NUMBER: _ClassVar[int]
    KEYS_MISSING_FIELD_NUMBER: _ClassVar[int]
    KEYS_FAILED_FIELD_NUMBER: _ClassVar[int]
    REQUESTS_REFUSED_FIELD_NUMBER: _ClassVar[int]
    LOOKUP_SECONDS_FIELD_NUMBER: _ClassVar[int]
    VISIBLE_SECONDS_FIELD_NUMBER: _ClassVar[int]
    keys_found: int
    keys_missing: int
    keys_failed: int
    requests_refused: int
    lookup_seconds: Histogram
    visible_seconds: Histogram
    def __init__(self, keys_found: _Optional[int] = ..., keys_missing: _Optional[int] = ..., keys_failed: _Optional[int] = ..., requests_refused: _Optional[int] = ..., lookup_seconds: _Optional[_Union[Histogram, _Mapping]] = ..., visible_seconds: _Optional[_Union[Histogram, _Mapping]] = ...) -> None: ...

class Histogram(_message.Message):
    __slots__ = ("bounds", "counts", "sum")
    BOUNDS_FIELD_NUMBER: _ClassVar[int]
    COUNTS_FIELD_NUMBER: _ClassVar[int]
    SUM_FIELD_NUMBER: _ClassVar[int]
    bounds: _containers.RepeatedScalarFieldContainer[float]
    counts: _containers.RepeatedScalarFieldContainer[int]
    sum: float
    def __init__(self, bounds: _Optional[_Iterable[float]] = ..., counts: _Optional[_Iterable[int]] = ..., sum: _Optional[float] = ...) -> None: ...

class ExecutorReport(_message.Message):
    __slots__ = ("hello", "heartbeat")
    HELLO_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_FIELD_NUMBER: _ClassVar[int]
    hello: ExecutorHello
    heartbeat: Heartbeat
    def __init__(self, hello: _Optional[_Union[ExecutorHello, _Mapping]] = ..., heartbeat: _Optional[_Union[Heartbeat, _Mapping]] = ...) -> None: ...

class Welcome(_message.Message):
    __slots__ = ("index", "tables", "heartbeat_interval_ms", "service_id", "max_batch_keys", "max_message_bytes", "epoch", "coordinators")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    TABLES_FIELD_NUMBER: _ClassVar[int]
    HEARTBEAT_INTERVAL_MS_FIELD_NUMBER: _ClassVar[int]
    SERVICE_ID_FIELD_NUMBER: _ClassVar[int]
    MAX_BATCH_KEYS_FIELD_NUMBER: _ClassVar[int]
    MAX_MESSAGE_BYTES_FIELD_NUMBER: _ClassVar[int]
    EPOCH_FIELD_NUMBER: _ClassVar[int]
    COORDINATORS_FIELD_NUMBER: _ClassVar[int]
    index: int
    tables: _containers.RepeatedScalarFieldContainer[str]
    heartbeat_interval_ms: int
    service_id: str
    max_batch_keys: int
    max_message_bytes: int
    epoch: int
    coordinators: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, index: _Optional[int] = ..., tables: _Optional[_Iterable[str]] = ..., heartbeat_interval_ms: _Optional[int] = ..., service_id: _Optional[str] = ..., max_batch_keys: _Optional[int] = ..., max_message_bytes: _Optional[int] = ..., epoch: _Optional[int] = ..., coordinators: _Optional[_Iterable[str]] = ...) -> None: ...

class Coordinators(_message.Message):
    __slots__ = ("addresses",)
    ADDRESSES_FIELD_NUMBER: _ClassVar[int]
    addresses: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, addresses: _Optional[_Iterable[str]] = ...) -> None: ...

class Assignment(_message.Message):
    __slots__ = ("version", "channels", "owners", "warm")
    VERSION_FIELD_NUMBER: _ClassVar[int]
    CHANNELS_FIELD_NUMBER: _ClassVar[int]
    OWNERS_FIELD_NUMBER: _ClassVar[int]
    WARM_FIELD_NUMBER: _ClassVar[int]
    version: int
    channels: int
    owners: _containers.RepeatedScalarFieldContainer[int]
    warm: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, version: _Optional[int] = ..., channels: _Optional[int] = ..., owners: _Optional[_Iterable[int]] = ..., warm: _Optional[_Iterable[int]] = ...) -> None: ...

class DataFile(_message.Message):
    __slots__ = ("name", "path", "size", "row_count", "min_key", "max_key", "min_sequence_number", "max_sequence_number", "schema_id", "level", "delete_row_count", "creation_time_ms", "file_source", "extra_files", "external", "first_row_id", "write_cols")
    NAME_FIELD_NUMBER: _ClassVar[int]
    PATH_FIELD_NUMBER: _ClassVar[int]
    SIZE_FIELD_NUMBER: _ClassVar[int]
    ROW_COUNT_FIELD_NUMBER: _ClassVar[int]
    MIN_KEY_FIELD_NUMBER: _ClassVar[int]
    MAX_KEY_FIELD_NUMBER: _ClassVar[int]
    MIN_SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    MAX_SEQUENCE_NUMBER_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    LEVEL_FIELD_NUMBER: _ClassVar[int]
    DELETE_ROW_COUNT_FIELD_NUMBER: _ClassVar[int]
    CREATION_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    FILE_SOURCE_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FILES_FIELD_NUMBER: _ClassVar[int]
    EXTERNAL_FIELD_NUMBER: _ClassVar[int]
    FIRST_ROW_ID_FIELD_NUMBER: _ClassVar[int]
    WRITE_COLS_FIELD_NUMBER: _ClassVar[int]
    name: str
    path: str
    size: int
    row_count: int
    min_key: bytes
    max_key: bytes
    min_sequence_number: int
    max_sequence_number: int
    schema_id: int
    level: int
    delete_row_count: int
    creation_time_ms: int
    file_source: int
    extra_files: _containers.RepeatedScalarFieldContainer[str]
    external: bool
    first_row_id: int
    write_cols: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, name: _Optional[str] = ..., path: _Optional[str] = ..., size: _Optional[int] = ..., row_count: _Optional[int] = ..., min_key: _Optional[bytes] = ..., max_key: _Optional[bytes] = ..., min_sequence_number: _Optional[int] = ..., max_sequence_number: _Optional[int] = ..., schema_id: _Optional[int] = ..., level: _Optional[int] = ..., delete_row_count: _Optional[int] = ..., creation_time_ms: _Optional[int] = ..., file_source: _Optional[int] = ..., extra_files: _Optional[_Iterable[str]] = ..., external: _Optional[bool] = ..., first_row_id: _Optional[int] = ..., write_cols: _Optional[_Iterable[str]] = ...) -> None: ...

class DeletionFile(_message.Message):
    __slots__ = ("path", "offset", "length", "cardinality")
    PATH_FIELD_NUMBER: _ClassVar[int]
    OFFSET_FIELD_NUMBER: _ClassVar[int]
    LENGTH_FIELD_NUMBER: _ClassVar[int]
    CARDINALITY_FIELD_NUMBER: _ClassVar[int]
    path: str
    offset: int
    length: int
    cardinality: int
    def __init__(self, path: _Optional[str] = ..., offset: _Optional[int] = ..., length: _Optional[int] = ..., cardinality: _Optional[int] = ...) -> None: ...

class BucketFiles(_message.Message):
    __slots__ = ("partition", "bucket", "files", "deletion_files")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    FILES_FIELD_NUMBER: _ClassVar[int]
    DELETION_FILES_FIELD_NUMBER: _ClassVar[int]
    partition: bytes
    bucket: int
    files: _containers.RepeatedCompositeFieldContainer[DataFile]
    deletion_files: _containers.RepeatedCompositeFieldContainer[DeletionFile]
    def __init__(self, partition: _Optional[bytes] = ..., bucket: _Optional[int] = ..., files: _Optional[_Iterable[_Union[DataFile, _Mapping]]] = ..., deletion_files: _Optional[_Iterable[_Union[DeletionFile, _Mapping]]] = ...) -> None: ...

class BucketChange(_message.Message):
    __slots__ = ("partition", "bucket", "adds", "deletes", "replace")
    PARTITION_FIELD_NUMBER: _ClassVar[int]
    BUCKET_FIELD_NUMBER: _ClassVar[int]
    ADDS_FIELD_NUMBER: _ClassVar[int]
    DELETES_FIELD_NUMBER: _ClassVar[int]
    REPLACE_FIELD_NUMBER: _ClassVar[int]
    partition: bytes
    bucket: int
    adds: _containers.RepeatedCompositeFieldContainer[DataFile]
    deletes: _containers.RepeatedCompositeFieldContainer[DataFile]
    replace: BucketFiles
    def __init__(self, partition: _Optional[bytes] = ..., bucket: _Optional[int] = ..., adds: _Optional[_Iterable[_Union[DataFile, _Mapping]]] = ..., deletes: _Optional[_Iterable[_Union[DataFile, _Mapping]]] = ..., replace: _Optional[_Union[BucketFiles, _Mapping]] = ...) -> None: ...

class TableFull(_message.Message):
    __slots__ = ("table", "snapshot_id", "commit_time_ms", "schema_id", "buckets")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    table: str
    snapshot_id: int
    commit_time_ms: int
    schema_id: int
    buckets: _containers.RepeatedCompositeFieldContainer[BucketFiles]
    def __init__(self, table: _Optional[str] = ..., snapshot_id: _Optional[int] = ..., commit_time_ms: _Optional[int] = ..., schema_id: _Optional[int] = ..., buckets: _Optional[_Iterable[_Union[BucketFiles, _Mapping]]] = ...) -> None: ...

class TableDelta(_message.Message):
    __slots__ = ("table", "snapshot_id", "commit_time_ms", "schema_id", "commit_kind", "changes")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    COMMIT_TIME_MS_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    COMMIT_KIND_FIELD_NUMBER: _ClassVar[int]
    CHANGES_FIELD_NUMBER: _ClassVar[int]
    table: str
    snapshot_id: int
    commit_time_ms: int
    schema_id: int
    commit_kind: str
    changes: _containers.RepeatedCompositeFieldContainer[BucketChange]
    def __init__(self, table: _Optional[str] = ..., snapshot_id: _Optional[int] = ..., commit_time_ms: _Optional[int] = ..., schema_id: _Optional[int] = ..., commit_kind: _Optional[str] = ..., changes: _Optional[_Iterable[_Union[BucketChange, _Mapping]]] = ...) -> None: ...

class Stop(_message.Message):
    __slots__ = ("reason", "rejoin", "coordinator")
    REASON_FIELD_NUMBER: _ClassVar[int]
    REJOIN_FIELD_NUMBER: _ClassVar[int]
    COORDINATOR_FIELD_NUMBER: _ClassVar[int]
    reason: str
    rejoin: bool
    coordinator: str
    def __init__(self, reason: _Optional[str] = ..., rejoin: _Optional[bool] = ..., coordinator: _Optional[str] = ...) -> None: ...

class ExecutorWork(_message.Message):
    __slots__ = ("welcome", "assignment", "full", "delta", "stop", "coordinators")
    WELCOME_FIELD_NUMBER: _ClassVar[int]
    ASSIGNMENT_FIELD_NUMBER: _ClassVar[int]
    FULL_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    COORDINATORS_FIELD_NUMBER: _ClassVar[int]
    welcome: Welcome
    assignment: Assignment
    full: TableFull
    delta: TableDelta
    stop: Stop
    coordinators: Coordinators
    def __init__(self, welcome: _Optional[_Union[Welcome, _Mapping]] = ..., assignment: _Optional[_Union[Assignment, _Mapping]] = ..., full: _Optional[_Union[TableFull, _Mapping]] = ..., delta: _Optional[_Union[TableDelta, _Mapping]] = ..., stop: _Optional[_Union[Stop, _Mapping]] = ..., coordinators: _Optional[_Union[Coordinators, _Mapping]] = ...) -> None: ...

class Value(_message.Message):
    __slots__ = ("int", "text", "real", "boolean", "binary")
    INT_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    REAL_FIELD_NUMBER: _ClassVar[int]
    BOOLEAN_FIELD_NUMBER: _ClassVar[int]
    BINARY_FIELD_NUMBER: _ClassVar[int]
    int: int
    text: str
    real: float
    boolean: bool
    binary: bytes
    def __init__(self, int: _Optional[int] = ..., text: _Optional[str] = ..., real: _Optional[float] = ..., boolean: _Optional[bool] = ..., binary: _Optional[bytes] = ...) -> None: ...

class LookupRequest(_message.Message):
    __slots__ = ("table", "keys_ipc", "buckets", "min_snapshot_id", "select", "protocol_version", "key", "row_values", "any_order")
    TABLE_FIELD_NUMBER: _ClassVar[int]
    KEYS_IPC_FIELD_NUMBER: _ClassVar[int]
    BUCKETS_FIELD_NUMBER: _ClassVar[int]
    MIN_SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    SELECT_FIELD_NUMBER: _ClassVar[int]
    PROTOCOL_VERSION_FIELD_NUMBER: _ClassVar[int]
    KEY_FIELD_NUMBER: _ClassVar[int]
    ROW_VALUES_FIELD_NUMBER: _ClassVar[int]
    ANY_ORDER_FIELD_NUMBER: _ClassVar[int]
    table: str
    keys_ipc: bytes
    buckets: _containers.RepeatedScalarFieldContainer[int]
    min_snapshot_id: int
    select: _containers.RepeatedScalarFieldContainer[str]
    protocol_version: int
    key: _containers.RepeatedCompositeFieldContainer[Value]
    row_values: bool
    any_order: bool
    def __init__(self, table: _Optional[str] = ..., keys_ipc: _Optional[bytes] = ..., buckets: _Optional[_Iterable[int]] = ..., min_snapshot_id: _Optional[int] = ..., select: _Optional[_Iterable[str]] = ..., protocol_version: _Optional[int] = ..., key: _Optional[_Iterable[_Union[Value, _Mapping]]] = ..., row_values: _Optional[bool] = ..., any_order: _Optional[bool] = ...) -> None: ...

class FailedKeys(_message.Message):
    __slots__ = ("positions", "reason", "retry")
    POSITIONS_FIELD_NUMBER: _ClassVar[int]
    REASON_FIELD_NUMBER: _ClassVar[int]
    RETRY_FIELD_NUMBER: _ClassVar[int]
    positions: _containers.RepeatedScalarFieldContainer[int]
    reason: str
    retry: bool
    def __init__(self, positions: _Optional[_Iterable[int]] = ..., reason: _Optional[str] = ..., retry: _Optional[bool] = ...) -> None: ...

class LookupResponse(_message.Message):
    __slots__ = ("snapshot_id", "rows_ipc", "found", "schema_id", "failed", "columns", "values")
    SNAPSHOT_ID_FIELD_NUMBER: _ClassVar[int]
    ROWS_IPC_FIELD_NUMBER: _ClassVar[int]
    FOUND_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_ID_FIELD_NUMBER: _ClassVar[int]
    FAILED_FIELD_NUMBER: _ClassVar[int]
    COLUMNS_FIELD_NUMBER: _ClassVar[int]
    VALUES_FIELD_NUMBER: _ClassVar[int]
    snapshot_id: int
    rows_ipc: bytes
    found: _containers.RepeatedScalarFieldContainer[int]
    schema_id: int
    failed: _containers.RepeatedCompositeFieldContainer[FailedKeys]
    columns: _containers.RepeatedScalarFieldContainer[str]
    values: _containers.RepeatedCompositeFieldContainer[Value]
    def __init__(self, snapshot_id: _Optional[int] = ..., rows_ipc: _Optional[bytes] = ..., found: _Optional[_Iterable[int]] = ..., schema_id: _Optional[int] = ..., failed: _Optional[_Iterable[_Union[FailedKeys, _Mapping]]] = ..., columns: _Optional[_Iterable[str]] = ..., values: _Optional[_Iterable[_Union[Value, _Mapping]]] = ...) -> None: ...
