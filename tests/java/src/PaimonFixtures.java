/*
 * Test fixtures written and read by Apache Paimon Java 0.9 (the jar shipped in the
 * pypaimon 0.2.0 sdist). Compiled and run by tests/java/javafix.py; not part of the
 * paimon-tail package.
 *
 * Usage: java PaimonFixtures CMD ARGS [;; CMD ARGS ...]
 *   write  WAREHOUSE SCENARIO [STEP]      write a scenario (tables in database `db`)
 *   oracle WAREHOUSE TABLE [SNAPSHOT|-] [STREAM_FROM|earliest|-]
 *                                         batch read at SNAPSHOT (default latest) and,
 *                                         when STREAM_FROM is given, a Java streaming read
 *                                         (scan.mode=from-snapshot) per snapshot
 *   lookup WAREHOUSE TABLE KEYS_JSON [PARTITION_JSON|-] [SNAPSHOT]
 *                                         LocalTableQuery point lookups; KEYS_JSON is a
 *                                         list of trimmed primary keys (lists of values)
 *   compact WAREHOUSE TABLE               full compaction of an existing table
 *   incremental WAREHOUSE TABLE START END Java's incremental-between read (row kinds)
 *   stream WAREHOUSE TABLE OPTIONS_JSON LATEST
 *                                         Java's streaming read of TABLE (any table: a branch t$branch_b,
 *                                         a system table t$audit_log) with dynamic OPTIONS, per snapshot,
 *                                         up to snapshot LATEST of its base table
 *   batch WAREHOUSE TABLE OPTIONS_JSON    Java's batch read of TABLE (t$snapshots, scan.tag-name ...)
 * STREAM_FROM: earliest | N (from-snapshot) | full:N (from-snapshot-full) | ts:MILLIS
 * Every command prints exactly one JSON line to stdout.
 */

import org.apache.paimon.Snapshot;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.options.ExpireConfig;
import org.apache.paimon.options.Options;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.query.LocalTableQuery;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.table.source.TableScan;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DataTypeRoot;
import org.apache.paimon.types.DataTypes;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.JsonSerdeUtil;

import java.math.BigDecimal;
import java.nio.file.Files;
import java.time.Duration;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.format.DateTimeFormatter;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;

public class PaimonFixtures {

    static final String DB = "db";
    static final DateTimeFormatter TS = DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSSSSS");
    static IOManager ioManager;

    public static void main(String[] args) throws Exception {
        java.nio.file.Path tmp = Files.createTempDirectory("paimon-fixtures-io");
        ioManager = IOManager.create(tmp.toString());
        List<List<String>> commands = new ArrayList<>();
        List<String> cur = new ArrayList<>();
        for (String a : args) {
            if (a.equals(";;")) {
                commands.add(cur);
                cur = new ArrayList<>();
            } else {
                cur.add(a);
            }
        }
        commands.add(cur);
        try {
            for (List<String> c : commands) {
                if (c.isEmpty()) {
                    continue;
                }
                Object out = run(c);
                System.out.println(JsonSerdeUtil.toFlatJson(out));
                System.out.flush();
            }
        } finally {
            closeIoManager(tmp);
        }
        System.exit(0);
    }

    /**
     * The lookup changelog producer's spill files can still be closing in a compaction thread when the writer is
     * closed; the IOManager then fails to delete its directory (DirectoryNotEmptyException), after every table
     * was committed. Only the scratch directory is at stake: retry, then remove it ourselves.
     */
    static void closeIoManager(java.nio.file.Path tmp) throws Exception {
        for (int attempt = 0; ; attempt++) {
            try {
                ioManager.close();
                return;
            } catch (java.io.UncheckedIOException e) {
                if (attempt >= 5) {
                    org.apache.paimon.utils.FileIOUtils.deleteDirectoryQuietly(tmp.toFile());
                    return;
                }
                Thread.sleep(200);
            }
        }
    }

    static Object run(List<String> c) throws Exception {
        String cmd = c.get(0);
        String warehouse = c.get(1);
        try (Catalog catalog = catalog(warehouse)) {
            switch (cmd) {
                case "write":
                    write(catalog, c.get(2), c.size() > 3 ? Integer.parseInt(c.get(3)) : 0);
                    Map<String, Object> ok = new LinkedHashMap<>();
                    ok.put("ok", true);
                    return ok;
                case "oracle":
                    return oracle(
                            catalog,
                            c.get(2),
                            c.size() > 3 && !c.get(3).equals("-") ? Long.parseLong(c.get(3)) : null,
                            c.size() > 4 && !c.get(4).equals("-") ? c.get(4) : null);
                case "lookup":
                    return lookup(
                            catalog,
                            c.get(2),
                            c.get(3),
                            c.size() > 4 && !c.get(4).equals("-") ? c.get(4) : null,
                            c.size() > 5 && !c.get(5).equals("-") ? Long.parseLong(c.get(5)) : null);
                case "incremental":
                    return incremental(catalog, c.get(2), c.get(3), c.get(4));
                case "stream":
                    return stream(catalog, c.get(2), c.get(3), Long.parseLong(c.get(4)));
                case "batch":
                    return batch(catalog, c.get(2), c.get(3));
                case "compact":
                    compactOnly(catalog, c.get(2));
                    Map<String, Object> done = new LinkedHashMap<>();
                    done.put("ok", true);
                    return done;
                default:
                    throw new IllegalArgumentException("unknown command " + cmd);
            }
        }
    }

    static Catalog catalog(String warehouse) {
        Options o = new Options();
        o.set("warehouse", warehouse);
        return CatalogFactory.createCatalog(CatalogContext.create(o));
    }

    // ------------------------------------------------------------------ writing

    /** A streaming writer that commits with increasing identifiers, like a Flink job. */
    static class Writer implements AutoCloseable {
        final FileStoreTable table;
        final StreamTableWrite write;
        final StreamTableCommit commit;
        final String commitUser;
        long identifier = 0;

        Writer(Table t) {
            this.table = (FileStoreTable) t;
            StreamWriteBuilder b = t.newStreamWriteBuilder();
            this.commitUser = b.commitUser();
            this.write = b.newWrite();
            this.write.withIOManager(ioManager);
            this.commit = b.newCommit();
        }

        void write(GenericRow row) throws Exception {
            write.write(row);
        }

        void commit() throws Exception {
            commit(false);
        }

        /** With waitCompaction the commit also carries the compaction Java ran meanwhile. */
        void commit(boolean waitCompaction) throws Exception {
            commit.commit(identifier, write.prepareCommit(waitCompaction, identifier));
            identifier++;
        }

        /** Full compaction of every (partition, bucket) that has files; one COMPACT snapshot. */
        void fullCompact() throws Exception {
            Set<String> seen = new LinkedHashSet<>();
            for (Split s : table.newSnapshotReader().read().splits()) {
                DataSplit d = (DataSplit) s;
                if (seen.add(d.partition().toString() + "/" + d.bucket())) {
                    write.compact(d.partition(), d.bucket(), true);
                }
            }
            commit.commit(identifier, write.prepareCommit(true, identifier));
            identifier++;
        }

        @Override
        public void close() throws Exception {
            write.close();
            commit.close();
        }
    }

    static GenericRow row(RowKind kind, Object... values) {
        GenericRow r = GenericRow.of(values);
        r.setRowKind(kind);
        return r;
    }

    static BinaryString s(String v) {
        return v == null ? null : BinaryString.fromString(v);
    }

    /** Wide schema used by most primary-key scenarios: covers the common types. */
    static Schema.Builder wide() {
        return Schema.newBuilder()
                .column("id", DataTypes.INT().notNull())
                .column("name", DataTypes.STRING())
                .column("v", DataTypes.BIGINT())
                .column("price", DataTypes.DECIMAL(10, 2))
                .column("d", DataTypes.DATE())
                .column("ts", DataTypes.TIMESTAMP(6))
                .column("flag", DataTypes.BOOLEAN())
                .column("score", DataTypes.DOUBLE());
    }

    static GenericRow wideRow(RowKind kind, int id, int version) {
        return row(
                kind,
                id,
                id % 17 == 0 ? null : s("n" + id + "_v" + version),
                (long) id * 10 + version,
                Decimal.fromBigDecimal(
                        BigDecimal.valueOf(id * 125L + version * 100L, 2), 10, 2),
                19000 + id % 100,
                Timestamp.fromLocalDateTime(
                        LocalDateTime.of(2024, 1, 1, 0, 0)
                                .plusSeconds(id)
                                .plusNanos(version * 1000L)),
                id % 3 == 0 ? null : id % 2 == 0,
                id / 3.0 + version);
    }

    static Table create(Catalog catalog, String name, Schema schema) throws Exception {
        catalog.createDatabase(DB, true);
        Identifier ident = Identifier.create(DB, name);
        catalog.createTable(ident, schema, false);
        return catalog.getTable(ident);
    }

    static void write(Catalog catalog, String scenario, int step) throws Exception {
        switch (scenario) {
            case "pk_dedup":
                pkScenario(catalog, "pk_dedup", wide().primaryKey("id").option("bucket", "2"));
                break;
            case "pk_dv":
                dvScenario(catalog);
                break;
            case "pk_changelog_lookup":
                pkScenario(
                        catalog,
                        "pk_changelog_lookup",
                        wide().primaryKey("id")
                                .option("bucket", "2")
                                .option("changelog-producer", "lookup"));
                break;
            case "pk_orc":
                pkScenario(
                        catalog,
                        "pk_orc",
                        wide().primaryKey("id").option("bucket", "2").option("file.format", "orc"));
                break;
            case "pk_partitioned":
                partitioned(catalog);
                break;
            case "pk_first_row":
                firstRow(catalog);
                break;
            case "pk_partial_update":
                partialUpdate(catalog);
                break;
            case "pk_aggregation":
                aggregation(catalog);
                break;
            case "append_fixed":
                append(catalog, "append_fixed", "2");
                break;
            case "append_unaware":
                append(catalog, "append_unaware", "-1");
                break;
            case "types_parquet":
                types(catalog, "types_parquet", "parquet");
                break;
            case "types_orc":
                types(catalog, "types_orc", "orc");
                break;
            case "pk_schema_evolution":
                schemaEvolution(catalog);
                break;
            case "pk_expired":
                expired(catalog);
                break;
            case "mixed":
                mixed(catalog, step);
                break;
            case "pk_changelog_full":
                pkScenario(
                        catalog,
                        "pk_changelog_full",
                        wide().primaryKey("id")
                                .option("bucket", "2")
                                .option("changelog-producer", "full-compaction"));
                break;
            case "pk_backlog":
                backlog(catalog);
                break;
            case "pk_changelog_input":
                changelogInput(catalog);
                break;
            case "overwrite_append":
                overwriteAppend(catalog, "overwrite_append", true);
                break;
            case "overwrite_append_unpart":
                overwriteAppend(catalog, "overwrite_append_unpart", false);
                break;
            case "overwrite_pk":
                overwritePk(catalog, "overwrite_pk", true);
                break;
            case "overwrite_pk_unpart":
                overwritePk(catalog, "overwrite_pk_unpart", false);
                break;
            case "tagged":
                tagged(catalog);
                break;
            case "live_dedup":
            case "live_dv":
            case "live_partial_update":
            case "live_aggregation":
            case "live_first_row":
                live(catalog, scenario, step);
                break;
            case "pk_dv_parts":
                dvPartitioned(catalog);
                break;
            case "dyn_bucket":
                dynamicBucket(
                        catalog,
                        "dyn_bucket",
                        partitionedKv()
                                .primaryKey("dt", "id")
                                .option("bucket", "-1")
                                .option("dynamic-bucket.target-row-num", "30"));
                break;
            case "dyn_bucket_dv":
                dynamicBucket(
                        catalog,
                        "dyn_bucket_dv",
                        partitionedKv()
                                .primaryKey("dt", "id")
                                .option("bucket", "-1")
                                .option("dynamic-bucket.target-row-num", "30")
                                .option("deletion-vectors.enabled", "true"));
                break;
            case "cross_part":
                crossPartition(catalog);
                break;
            case "live_dyn":
            case "live_cross":
                liveKinds(catalog, scenario, step);
                break;
            default:
                throw new IllegalArgumentException("unknown scenario " + scenario);
        }
    }

    /**
     * Five snapshots (plus whatever compaction Java adds): insert 0..299, update 0..99,
     * delete 200..249, full compaction, insert 300..399 + update 250..259 + delete 5.
     */
    static void pkScenario(Catalog catalog, String name, Schema.Builder schema) throws Exception {
        Table t = create(catalog, name, schema.build());
        try (Writer w = new Writer(t)) {
            for (int i = 0; i < 300; i++) {
                w.write(wideRow(RowKind.INSERT, i, 0));
            }
            w.commit();
            for (int i = 0; i < 100; i++) {
                w.write(wideRow(RowKind.INSERT, i, 1));
            }
            w.commit();
            for (int i = 200; i < 250; i++) {
                w.write(wideRow(RowKind.DELETE, i, 0));
            }
            w.commit();
            w.fullCompact();
            for (int i = 300; i < 400; i++) {
                w.write(wideRow(RowKind.INSERT, i, 0));
            }
            for (int i = 250; i < 260; i++) {
                w.write(wideRow(RowKind.UPDATE_AFTER, i, 2));
            }
            w.write(wideRow(RowKind.DELETE, 5, 1));
            w.commit();
        }
    }

    /**
     * changelog-producer=input, written as a CDC source would: inserts, updates as -U (old image) +
     * +U (new image) pairs, deletes with the old image; the input is the changelog. Insert 0..299;
     * update 0..99; delete 200..249; full compaction; insert 300..399 + update 250..259 + delete 5.
     */
    static void changelogInput(Catalog catalog) throws Exception {
        Table t =
                create(
                        catalog,
                        "pk_changelog_input",
                        wide().primaryKey("id")
                                .option("bucket", "2")
                                .option("changelog-producer", "input")
                                .build());
        try (Writer w = new Writer(t)) {
            for (int i = 0; i < 300; i++) {
                w.write(wideRow(RowKind.INSERT, i, 0));
            }
            w.commit();
            for (int i = 0; i < 100; i++) {
                w.write(wideRow(RowKind.UPDATE_BEFORE, i, 0));
                w.write(wideRow(RowKind.UPDATE_AFTER, i, 1));
            }
            w.commit();
            for (int i = 200; i < 250; i++) {
                w.write(wideRow(RowKind.DELETE, i, 0));
            }
            w.commit();
            w.fullCompact();
            for (int i = 300; i < 400; i++) {
                w.write(wideRow(RowKind.INSERT, i, 0));
            }
            for (int i = 250; i < 260; i++) {
                w.write(wideRow(RowKind.UPDATE_BEFORE, i, 0));
                w.write(wideRow(RowKind.UPDATE_AFTER, i, 2));
            }
            w.write(wideRow(RowKind.DELETE, 5, 1));
            w.commit();
        }
    }

    /**
     * Deletion vectors are only produced when a lookup compaction rewrites level-0 files
     * into a level above older data: insert 0..299, full compaction (all at max level),
     * then update 0..99 + delete 200..249 and update 250..259 + insert 300..399 + delete 5
     * committed with waitCompaction (APPEND + COMPACT snapshots, with .index DV files), and
     * finally an uncompacted commit (level 0: invisible to batch reads of a DV table).
     */
    static void dvScenario(Catalog catalog) throws Exception {
        Table t =
                create(
                        catalog,
                        "pk_dv",
                        wide().primaryKey("id")
                                .option("bucket", "2")
                                .option("deletion-vectors.enabled", "true")
                                .build());
        try (Writer w = new Writer(t)) {
            for (int i = 0; i < 300; i++) {
                w.write(wideRow(RowKind.INSERT, i, 0));
            }
            w.commit();
            w.fullCompact();
            for (int i = 0; i < 100; i++) {
                w.write(wideRow(RowKind.INSERT, i, 1));
            }
            for (int i = 200; i < 250; i++) {
                w.write(wideRow(RowKind.DELETE, i, 0));
            }
            w.commit(true);
            for (int i = 300; i < 400; i++) {
                w.write(wideRow(RowKind.INSERT, i, 0));
            }
            for (int i = 250; i < 260; i++) {
                w.write(wideRow(RowKind.UPDATE_AFTER, i, 2));
            }
            w.write(wideRow(RowKind.DELETE, 5, 1));
            w.commit(true);
        }
        // write-only: a plain commit() still starts a compaction, and when it finishes before the
        // commit collects it one bucket's new rows leave level 0 (an extra COMPACT snapshot)
        Map<String, String> writeOnly = new HashMap<>();
        writeOnly.put("write-only", "true");
        try (Writer w = new Writer(((FileStoreTable) t).copy(writeOnly))) {
            for (int i = 400; i < 420; i++) {
                w.write(wideRow(RowKind.INSERT, i, 0));
            }
            w.write(wideRow(RowKind.DELETE, 7, 1));
            w.commit();
        }
    }

    static void partitioned(Catalog catalog) throws Exception {
        Schema schema =
                Schema.newBuilder()
                        .column("dt", DataTypes.STRING().notNull())
                        .column("id", DataTypes.INT().notNull())
                        .column("name", DataTypes.STRING())
                        .column("v", DataTypes.BIGINT())
                        .partitionKeys("dt")
                        .primaryKey("dt", "id")
                        .option("bucket", "2")
                        .build();
        Table t = create(catalog, "pk_partitioned", schema);
        String[] days = {"2024-01-01", "2024-01-02", "2024-01-03"};
        try (Writer w = new Writer(t)) {
            for (String dt : days) {
                for (int i = 0; i < 100; i++) {
                    w.write(row(RowKind.INSERT, s(dt), i, s("a" + i), (long) i));
                }
            }
            w.commit();
            for (int i = 0; i < 50; i++) {
                w.write(row(RowKind.UPDATE_AFTER, s(days[1]), i, s("b" + i), (long) i + 1000));
            }
            for (int i = 0; i < 20; i++) {
                w.write(row(RowKind.DELETE, s(days[2]), i, s("a" + i), (long) i));
            }
            w.commit();
            w.fullCompact();
            for (int i = 100; i < 120; i++) {
                w.write(row(RowKind.INSERT, s("2024-01-04"), i, s("c" + i), (long) i));
            }
            w.commit();
        }
    }

    static Schema.Builder narrow() {
        return Schema.newBuilder()
                .column("id", DataTypes.INT().notNull())
                .column("name", DataTypes.STRING())
                .column("v", DataTypes.BIGINT())
                .column("mx", DataTypes.INT());
    }

    static void firstRow(Catalog catalog) throws Exception {
        Table t =
                create(
                        catalog,
                        "pk_first_row",
                        narrow().primaryKey("id")
                                .option("bucket", "2")
                                .option("merge-engine", "first-row")
                                .build());
        try (Writer w = new Writer(t)) {
            for (int i = 0; i < 200; i++) {
                w.write(row(RowKind.INSERT, i, s("first" + i), (long) i, i));
            }
            w.commit();
            // duplicates: must be ignored by the merge; 200..249 are new
            for (int i = 100; i < 250; i++) {
                w.write(row(RowKind.INSERT, i, s("second" + i), (long) i * 2, i * 2));
            }
            w.commit();
            w.fullCompact();
            for (int i = 240; i < 260; i++) {
                w.write(row(RowKind.INSERT, i, s("third" + i), (long) i * 3, i * 3));
            }
            w.commit();
        }
    }

    static void partialUpdate(Catalog catalog) throws Exception {
        Table t =
                create(
                        catalog,
                        "pk_partial_update",
                        narrow().primaryKey("id")
                                .option("bucket", "2")
                                .option("merge-engine", "partial-update")
                                .build());
        try (Writer w = new Writer(t)) {
            for (int i = 0; i < 200; i++) {
                w.write(row(RowKind.INSERT, i, s("n" + i), null, null));
            }
            w.commit();
            for (int i = 0; i < 150; i++) {
                w.write(row(RowKind.INSERT, i, null, (long) i * 7, null));
            }
            w.commit();
            w.fullCompact();
            for (int i = 100; i < 250; i++) {
                w.write(row(RowKind.INSERT, i, i % 2 == 0 ? s("m" + i) : null, null, i));
            }
            w.commit();
        }
    }

    static void aggregation(Catalog catalog) throws Exception {
        Table t =
                create(
                        catalog,
                        "pk_aggregation",
                        narrow().primaryKey("id")
                                .option("bucket", "2")
                                .option("merge-engine", "aggregation")
                                .option("fields.name.aggregate-function", "last_non_null_value")
                                .option("fields.v.aggregate-function", "sum")
                                .option("fields.mx.aggregate-function", "max")
                                .build());
        try (Writer w = new Writer(t)) {
            for (int round = 0; round < 3; round++) {
                for (int i = 0; i < 150; i++) {
                    w.write(
                            row(
                                    RowKind.INSERT,
                                    i,
                                    round == 1 ? null : s("r" + round + "_" + i),
                                    (long) i + round,
                                    (i * 7 + round * 13) % 50));
                }
                w.commit();
                if (round == 1) {
                    w.fullCompact();
                }
            }
        }
    }

    static void append(Catalog catalog, String name, String bucket) throws Exception {
        Schema.Builder b =
                Schema.newBuilder()
                        .column("id", DataTypes.INT())
                        .column("name", DataTypes.STRING())
                        .column("v", DataTypes.BIGINT())
                        .option("bucket", bucket);
        if (!bucket.equals("-1")) {
            b.option("bucket-key", "id");
        }
        Table t = create(catalog, name, b.build());
        try (Writer w = new Writer(t)) {
            int next = 0;
            for (int c = 0; c < 4; c++) {
                for (int i = 0; i < 100 + c * 10; i++, next++) {
                    w.write(row(RowKind.INSERT, next % 150, s("a" + next), (long) next));
                }
                w.commit();
            }
            if (!bucket.equals("-1")) {
                w.fullCompact();
                for (int i = 0; i < 30; i++, next++) {
                    w.write(row(RowKind.INSERT, next, s("a" + next), (long) next));
                }
                w.commit();
            }
        }
    }

    /** Every type pypaimon maps, nested ones included; PK table, two commits (merge read). */
    static void types(Catalog catalog, String name, String format) throws Exception {
        Schema schema =
                Schema.newBuilder()
                        .column("id", DataTypes.INT().notNull())
                        .column("t8", DataTypes.TINYINT())
                        .column("t16", DataTypes.SMALLINT())
                        .column("t64", DataTypes.BIGINT())
                        .column("f32", DataTypes.FLOAT())
                        .column("f64", DataTypes.DOUBLE())
                        .column("b", DataTypes.BOOLEAN())
                        .column("c4", DataTypes.CHAR(4))
                        .column("vc", DataTypes.VARCHAR(20))
                        .column("bin", DataTypes.VARBINARY(10))
                        .column("dec_small", DataTypes.DECIMAL(5, 2))
                        .column("dec_big", DataTypes.DECIMAL(24, 4))
                        .column("d", DataTypes.DATE())
                        .column("ts3", DataTypes.TIMESTAMP(3))
                        .column("ts6", DataTypes.TIMESTAMP(6))
                        .column("ltz", DataTypes.TIMESTAMP_WITH_LOCAL_TIME_ZONE(3))
                        .column("arr", DataTypes.ARRAY(DataTypes.INT()))
                        .column("m", DataTypes.MAP(DataTypes.STRING(), DataTypes.BIGINT()))
                        .column(
                                "r",
                                DataTypes.ROW(
                                        DataTypes.FIELD(100, "a", DataTypes.INT()),
                                        DataTypes.FIELD(101, "s", DataTypes.STRING())))
                        .primaryKey("id")
                        .option("bucket", "1")
                        .option("file.format", format)
                        .build();
        Table t = create(catalog, name, schema);
        try (Writer w = new Writer(t)) {
            for (int version = 0; version < 2; version++) {
                for (int i = version * 30; i < 60 + version * 30; i++) {
                    boolean nul = i % 11 == 0;
                    Map<Object, Object> m = new LinkedHashMap<>();
                    m.put(s("k" + i), (long) i * version);
                    m.put(s("z"), null);
                    w.write(
                            row(
                                    RowKind.INSERT,
                                    i,
                                    nul ? null : (byte) (i - 64),
                                    nul ? null : (short) (i * 300 - 9000),
                                    nul ? null : (long) i * 1_000_000_007L * (i % 2 == 0 ? 1 : -1),
                                    nul ? null : i * 0.5f + version,
                                    nul ? null : i / 7.0 - version,
                                    nul ? null : i % 2 == 0,
                                    nul ? null : s("c" + (i % 10)),
                                    nul ? null : s("v" + i + "_" + version),
                                    nul ? null : new byte[] {(byte) i, (byte) version, (byte) 0xff},
                                    nul
                                            ? null
                                            : Decimal.fromBigDecimal(
                                                    BigDecimal.valueOf(i * 101L - 3000, 2), 5, 2),
                                    nul
                                            ? null
                                            : Decimal.fromBigDecimal(
                                                    new BigDecimal("12345678901234567890.1234")
                                                            .subtract(BigDecimal.valueOf(i * 1000L + version)),
                                                    24,
                                                    4),
                                    nul ? null : -1000 + i * 400,
                                    nul
                                            ? null
                                            : Timestamp.fromEpochMillis(
                                                    1_700_000_000_123L + i * 86_400_000L + version),
                                    nul
                                            ? null
                                            : Timestamp.fromLocalDateTime(
                                                    LocalDateTime.of(1969, 12, 31, 23, 59, 59)
                                                            .plusNanos(i * 1000L + version * 1000L)),
                                    nul ? null : Timestamp.fromEpochMillis(1_600_000_000_000L + i),
                                    nul
                                            ? null
                                            : new org.apache.paimon.data.GenericArray(
                                                    new Object[] {i, null, version}),
                                    nul ? null : new org.apache.paimon.data.GenericMap(m),
                                    nul ? null : GenericRow.of(i * 2, i % 3 == 0 ? null : s("r" + i))));
                }
                w.commit();
            }
        }
    }

    /**
     * Schema evolution by Java: commit with schema 0, add a column (schema 1), commit,
     * rename a column (schema 2), commit. Old files keep their schema ids, so a reader
     * must map them to the latest schema. (Widening INT to BIGINT is left out: Paimon
     * 0.9's own streaming read of the old files then fails with a ClassCastException
     * HeapIntVector -> LongColumnVector, so Java cannot serve as the oracle.)
     */
    static void schemaEvolution(Catalog catalog) throws Exception {
        Identifier ident = Identifier.create(DB, "pk_schema_evolution");
        Table t =
                create(
                        catalog,
                        "pk_schema_evolution",
                        Schema.newBuilder()
                                .column("id", DataTypes.INT().notNull())
                                .column("name", DataTypes.STRING())
                                .column("n", DataTypes.INT())
                                .primaryKey("id")
                                .option("bucket", "1")
                                .build());
        try (Writer w = new Writer(t)) {
            for (int i = 0; i < 100; i++) {
                w.write(row(RowKind.INSERT, i, s("a" + i), i));
            }
            w.commit();
        }
        catalog.alterTable(
                ident,
                Arrays.asList(
                        org.apache.paimon.schema.SchemaChange.addColumn(
                                "extra", DataTypes.STRING())),
                false);
        t = catalog.getTable(ident);
        try (Writer w = new Writer(t)) {
            for (int i = 50; i < 150; i++) {
                w.write(row(RowKind.INSERT, i, s("b" + i), i * 2, s("x" + i)));
            }
            w.commit();
        }
        catalog.alterTable(
                ident,
                Arrays.asList(
                        org.apache.paimon.schema.SchemaChange.renameColumn("name", "label")),
                false);
        t = catalog.getTable(ident);
        try (Writer w = new Writer(t)) {
            for (int i = 140; i < 160; i++) {
                w.write(row(RowKind.INSERT, i, s("c" + i), i * 3, null));
            }
            w.write(row(RowKind.DELETE, 60, null, null, null));
            w.commit();
        }
    }

    /** Eight commits; Java keeps only the last 3 snapshots (expired on commit and explicitly). */
    static void expired(Catalog catalog) throws Exception {
        Table t =
                create(
                        catalog,
                        "pk_expired",
                        narrow().primaryKey("id")
                                .option("bucket", "1")
                                .option("snapshot.num-retained.min", "1")
                                .option("snapshot.num-retained.max", "3")
                                .build());
        try (Writer w = new Writer(t)) {
            for (int c = 0; c < 8; c++) {
                for (int i = 0; i < 50; i++) {
                    w.write(row(RowKind.INSERT, c * 20 + i, s("c" + c), (long) c, i));
                }
                w.commit();
            }
        }
        t.newExpireSnapshots()
                .config(
                        ExpireConfig.builder()
                                .snapshotRetainMin(1)
                                .snapshotRetainMax(3)
                                .snapshotTimeRetain(Duration.ofDays(1))
                                .build())
                .expire();
    }

    /**
     * One step of a table written alternately by Java and pypaimon. Step 0 creates the
     * table; every Java step upserts ids [step*40, step*40+80) with version=step, deletes
     * id step, and on step 2 compacts everything.
     */
    static void mixed(Catalog catalog, int step) throws Exception {
        Identifier ident = Identifier.create(DB, "mixed");
        Table t;
        if (step == 0) {
            t =
                    create(
                            catalog,
                            "mixed",
                            narrow().primaryKey("id").option("bucket", "2").build());
        } else {
            t = catalog.getTable(ident);
        }
        try (Writer w = new Writer(t)) {
            for (int i = step * 40; i < step * 40 + 80; i++) {
                w.write(row(RowKind.INSERT, i, s("java" + step), (long) step, i));
            }
            w.write(row(RowKind.DELETE, step, null, null, null));
            w.commit();
            if (step == 2) {
                w.fullCompact();
            }
        }
    }

    /**
     * A backlog of 15 snapshots (more than pypaimon's lookahead of 10): 14 commits, each
     * upserting ids [10c, 10c+30) (odd commits as UPDATE_AFTER) and deleting id 10c-5,
     * with a full compaction after commit 7. Replaying it snapshot by snapshot and
     * diffing it in one plan give visibly different results.
     */
    static void backlog(Catalog catalog) throws Exception {
        Table t =
                create(
                        catalog,
                        "pk_backlog",
                        narrow().primaryKey("id").option("bucket", "2").build());
        try (Writer w = new Writer(t)) {
            for (int c = 0; c < 14; c++) {
                RowKind kind = c % 2 == 1 ? RowKind.UPDATE_AFTER : RowKind.INSERT;
                for (int i = c * 10; i < c * 10 + 30; i++) {
                    w.write(row(kind, i, s("c" + c), (long) c, i * c));
                }
                if (c > 0) {
                    w.write(row(RowKind.DELETE, c * 10 - 5, null, null, null));
                }
                w.commit();
                if (c == 7) {
                    w.fullCompact();
                }
            }
        }
    }

    /**
     * Tables a test keeps writing to while paimon-tail serves/follows them. Step 0 creates
     * the table and inserts 0..199; step s >= 1 upserts ids [40s, 40s+80) (name "s<s>"),
     * deletes id 3s (deduplicate engines only) and then fully compacts, so every step adds
     * an APPEND and a COMPACT snapshot (DV tables: APPEND + COMPACT with deletion vectors,
     * then the full compaction).
     */
    static void live(Catalog catalog, String name, int step) throws Exception {
        Identifier ident = Identifier.create(DB, name);
        boolean dedup = name.equals("live_dedup") || name.equals("live_dv");
        Table t;
        if (step == 0) {
            Schema.Builder b = narrow().primaryKey("id").option("bucket", "2");
            switch (name) {
                case "live_dv":
                    b.option("deletion-vectors.enabled", "true");
                    break;
                case "live_partial_update":
                    b.option("merge-engine", "partial-update");
                    break;
                case "live_aggregation":
                    b.option("merge-engine", "aggregation")
                            .option("fields.name.aggregate-function", "last_non_null_value")
                            .option("fields.v.aggregate-function", "sum")
                            .option("fields.mx.aggregate-function", "max");
                    break;
                case "live_first_row":
                    b.option("merge-engine", "first-row");
                    break;
                default:
                    break;
            }
            t = create(catalog, name, b.build());
        } else {
            t = catalog.getTable(ident);
        }
        try (Writer w = new Writer(t)) {
            if (step == 0) {
                for (int i = 0; i < 200; i++) {
                    w.write(row(RowKind.INSERT, i, s("s0"), (long) i, i % 50));
                }
                w.commit();
                return;
            }
            for (int i = step * 40; i < step * 40 + 80; i++) {
                boolean partialNull = name.equals("live_partial_update") && i % 3 == 0;
                w.write(
                        row(
                                RowKind.INSERT,
                                i,
                                partialNull ? null : s("s" + step),
                                partialNull ? null : (long) step,
                                (i * 7 + step) % 60));
            }
            if (dedup) {
                w.write(row(RowKind.DELETE, step * 3, null, null, null));
            }
            w.commit(name.equals("live_dv"));
            w.fullCompact();
        }
    }

    /** Full compaction of an existing table (one COMPACT snapshot). */
    // ------------------------------------------------------------- commit kinds, tags, branches

    /** An INSERT OVERWRITE of ROWS (of one partition, when PARTITION is given, else of the whole table). */
    static void overwrite(Table t, Map<String, String> partition, List<GenericRow> rows) throws Exception {
        org.apache.paimon.table.sink.BatchWriteBuilder b =
                t.newBatchWriteBuilder().withOverwrite(partition == null ? new HashMap<>() : partition);
        try (org.apache.paimon.table.sink.BatchTableWrite w = b.newWrite();
                org.apache.paimon.table.sink.BatchTableCommit c = b.newCommit()) {
            w.withIOManager(ioManager);
            for (GenericRow r : rows) {
                w.write(r);
            }
            c.commit(w.prepareCommit());
        }
    }

    /**
     * Append table (bucket -1), partitioned by dt or not: d1 1..5 + d2 6..8; an OVERWRITE of dt=d1 (of the
     * whole table, unpartitioned) with 100..102; 9 appended to d2; another OVERWRITE of d2 with 200, 9 (the
     * unpartitioned table: of everything again).
     */
    static void overwriteAppend(Catalog catalog, String name, boolean partitioned) throws Exception {
        Schema.Builder b = Schema.newBuilder()
                .column("id", DataTypes.INT())
                .column("dt", DataTypes.STRING())
                .column("v", DataTypes.STRING())
                .option("bucket", "-1");
        if (partitioned) {
            b.partitionKeys("dt");
        }
        Table t = create(catalog, name, b.build());
        try (Writer w = new Writer(t)) {
            for (int i = 1; i <= 8; i++) {
                w.write(row(RowKind.INSERT, i, s(i <= 5 ? "d1" : "d2"), s("a" + i)));
            }
            w.commit();
        }
        List<GenericRow> rows = new ArrayList<>();
        for (int i = 100; i <= 102; i++) {
            rows.add(row(RowKind.INSERT, i, s("d1"), s("o" + i)));
        }
        overwrite(t, partitioned ? partition("dt", "d1") : null, rows);
        try (Writer w = new Writer(catalog.getTable(Identifier.create(DB, name)))) {
            w.write(row(RowKind.INSERT, 9, s("d2"), s("a9")));
            w.commit();
        }
        rows = new ArrayList<>();
        rows.add(row(RowKind.INSERT, 200, s("d2"), s("o200")));
        rows.add(row(RowKind.INSERT, 9, s("d2"), s("a9")));
        overwrite(catalog.getTable(Identifier.create(DB, name)), partitioned ? partition("dt", "d2") : null, rows);
    }

    static Map<String, String> partition(String key, String value) {
        Map<String, String> p = new HashMap<>();
        p.put(key, value);
        return p;
    }

    /**
     * Primary-key table (dt, id), bucket 2, partitioned by dt or not: d1 0..19 + d2 20..29; d2 updated
     * (20..24) and, partitioned, 29 deleted; an OVERWRITE of dt=d1 (unpartitioned: of the whole table) with 0..4 (new
     * values) + 100..104; d2 upserted (25, 30). The overwritten partition's files hold one record per key (so
     * Java's unmerged before-records are the merged rows); the last OVERWRITE (of d2 / of everything) replaces
     * files with updates and a delete in them.
     */
    static void overwritePk(Catalog catalog, String name, boolean partitioned) throws Exception {
        Schema.Builder b = Schema.newBuilder()
                .column("dt", DataTypes.STRING().notNull())
                .column("id", DataTypes.INT().notNull())
                .column("v", DataTypes.STRING())
                .primaryKey("dt", "id")
                .option("bucket", "2");
        if (partitioned) {
            b.partitionKeys("dt");
        }
        Table t = create(catalog, name, b.build());
        try (Writer w = new Writer(t)) {
            for (int i = 0; i < 30; i++) {
                w.write(row(RowKind.INSERT, s(i < 20 ? "d1" : "d2"), i, s("a" + i)));
            }
            w.commit();
            for (int i = 20; i < 25; i++) {
                w.write(row(RowKind.UPDATE_AFTER, s("d2"), i, s("b" + i)));
            }
            if (partitioned) {  // Paimon 0.9 cannot stream an overwrite of files with a delete record in them
                w.write(row(RowKind.DELETE, s("d2"), 29, s("a29")));
            }
            w.commit();
        }
        List<GenericRow> rows = new ArrayList<>();
        for (int i : new int[] {0, 1, 2, 3, 4, 100, 101, 102, 103, 104}) {
            rows.add(row(RowKind.INSERT, s("d1"), i, s("o" + i)));
        }
        if (!partitioned) {
            for (int i = 20; i < 30; i++) {
                rows.add(row(RowKind.INSERT, s("d2"), i, s(i < 25 ? "b" + i : "a" + i)));
            }
        }
        overwrite(t, partitioned ? partition("dt", "d1") : null, rows);
        try (Writer w = new Writer(catalog.getTable(Identifier.create(DB, name)))) {
            w.write(row(RowKind.INSERT, s("d2"), 25, s("c25")));
            w.write(row(RowKind.INSERT, s("d2"), 30, s("c30")));
            w.commit();
        }
        if (partitioned) {
            rows = new ArrayList<>();
            rows.add(row(RowKind.INSERT, s("d2"), 20, s("z20")));
            rows.add(row(RowKind.INSERT, s("d2"), 40, s("z40")));
            overwrite(catalog.getTable(Identifier.create(DB, name)), partition("dt", "d2"), rows);
        }
    }

    /**
     * Primary-key table "tagged": 3 commits (inserts, an update, a delete), tag t1 on snapshot 2, tag t2 on
     * snapshot 3, 2 more commits; branch b1 created from t1 and written twice (its own snapshots 3 and 4).
     */
    static void tagged(Catalog catalog) throws Exception {
        Table t = create(catalog, "tagged", narrow().primaryKey("id").option("bucket", "2").build());
        try (Writer w = new Writer(t)) {
            for (int i = 0; i < 20; i++) {
                w.write(row(RowKind.INSERT, i, s("a" + i), (long) i, i));
            }
            w.commit();
            for (int i = 0; i < 5; i++) {
                w.write(row(RowKind.UPDATE_AFTER, i, s("b" + i), (long) i + 100, i));
            }
            w.commit();
            w.write(row(RowKind.DELETE, 7, s("a7"), 7L, 7));
            w.commit();
        }
        FileStoreTable table = (FileStoreTable) catalog.getTable(Identifier.create(DB, "tagged"));
        table.createTag("t1", 2);
        table.createTag("t2", 3);
        try (Writer w = new Writer(table)) {
            for (int i = 20; i < 25; i++) {
                w.write(row(RowKind.INSERT, i, s("c" + i), (long) i, i));
            }
            w.commit();
            w.write(row(RowKind.UPDATE_AFTER, 1, s("d1"), 1000L, 1));
            w.commit();
        }
        table.createBranch("b1", "t1");
        Table branch = catalog.getTable(Identifier.create(DB, "tagged$branch_b1"));
        try (Writer w = new Writer(branch)) {
            for (int i = 50; i < 55; i++) {
                w.write(row(RowKind.INSERT, i, s("br" + i), (long) i, i));
            }
            w.commit();
            w.write(row(RowKind.DELETE, 3, s("b3"), 103L, 3));
            w.write(row(RowKind.UPDATE_AFTER, 50, s("br50x"), 500L, 50));
            w.commit();
        }
    }

    static Map<String, String> jsonOptions(String json) throws Exception {
        Map<String, String> out = new HashMap<>();
        if (json == null || json.equals("-")) {
            return out;
        }
        Map<?, ?> parsed = JsonSerdeUtil.fromJson(json, LinkedHashMap.class);
        for (Map.Entry<?, ?> e : parsed.entrySet()) {
            out.put(String.valueOf(e.getKey()), String.valueOf(e.getValue()));
        }
        return out;
    }

    /** Java's streaming read of any table (a branch, a system table) with dynamic options, per snapshot. */
    static Object stream(Catalog catalog, String name, String optionsJson, long latest) throws Exception {
        Table table = catalog.getTable(Identifier.fromString(DB + "." + name)).copy(jsonOptions(optionsJson));
        RowType type = table.rowType();
        ReadBuilder rb = table.newReadBuilder();
        StreamTableScan scan = rb.newStreamScan();
        TableRead read = rb.newRead().withIOManager(ioManager);
        List<Map<String, Object>> plans = new ArrayList<>();
        int guard = 0;
        while (guard++ < 1000) {
            TableScan.Plan plan = scan.plan();
            Long after = scan.checkpoint();
            if (!plan.splits().isEmpty()) {
                Map<String, Object> p = new LinkedHashMap<>();
                p.put("snapshot", after == null ? null : after - 1);
                p.put("rows", readAll(type, read, plan.splits(), true));
                plans.add(p);
            }
            if (after != null && after > latest) {
                break;
            }
        }
        List<String> names = new ArrayList<>();
        for (DataField f : type.getFields()) {
            names.add(f.name());
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("fields", names);
        out.put("stream", plans);
        return out;
    }

    /** Java's batch read of any table (a system table, a tag with scan.tag-name, a branch). */
    static Object batch(Catalog catalog, String name, String optionsJson) throws Exception {
        Table table = catalog.getTable(Identifier.fromString(DB + "." + name)).copy(jsonOptions(optionsJson));
        RowType type = table.rowType();
        ReadBuilder rb = table.newReadBuilder();
        List<String> names = new ArrayList<>();
        for (DataField f : type.getFields()) {
            names.add(f.name());
        }
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("fields", names);
        out.put("rows", readAll(type, rb.newRead().withIOManager(ioManager), rb.newScan().plan().splits(), true));
        return out;
    }

    static void compactOnly(Catalog catalog, String name) throws Exception {
        Table t = catalog.getTable(Identifier.create(DB, name));
        try (Writer w = new Writer(t)) {
            w.fullCompact();
        }
    }

    // ------------------------------------------------------------------ table kinds (query service)

    /**
     * Writes a dynamic-bucket table (bucket = -1) as Paimon's Flink sink does: a HashBucketAssigner gives each
     * record the bucket of its key hash in its partition (restored from the table's HASH index, a new bucket when
     * the others hold dynamic-bucket.target-row-num keys) and the writer keeps the HASH index of each bucket.
     */
    static class DynamicWriter implements AutoCloseable {
        final Writer w;
        final org.apache.paimon.index.HashBucketAssigner assigner;
        final org.apache.paimon.table.sink.RowPartitionKeyExtractor extractor;

        DynamicWriter(Table t) {
            FileStoreTable ft = (FileStoreTable) t;
            this.w = new Writer(t);
            this.extractor = new org.apache.paimon.table.sink.RowPartitionKeyExtractor(ft.schema());
            this.assigner =
                    new org.apache.paimon.index.HashBucketAssigner(
                            ft.snapshotManager(),
                            w.commitUser,
                            ft.store().newIndexFileHandler(),
                            1,
                            1,
                            0,
                            ft.coreOptions().dynamicBucketTargetRowNum());
        }

        void write(GenericRow row) throws Exception {
            int bucket =
                    assigner.assign(
                            extractor.partition(row), extractor.trimmedPrimaryKey(row).hashCode());
            w.write.write(row, bucket);
        }

        void commit() throws Exception {
            assigner.prepareCommit(w.identifier);
            w.commit(true);
        }

        @Override
        public void close() throws Exception {
            w.close();
        }
    }

    /**
     * Writes a cross-partition table (bucket = -1, the primary key without the partition column) as Paimon's Flink
     * sink does: a GlobalIndexAssigner (RocksDB, bootstrapped from the table's rows) knows each key's partition and
     * bucket; a key that moves to another partition is deleted from its old one.
     */
    static class CrossPartitionWriter implements AutoCloseable {
        final Writer w;
        final org.apache.paimon.crosspartition.GlobalIndexAssigner assigner;

        CrossPartitionWriter(Table t) throws Exception {
            this.w = new Writer(t);
            this.assigner = new org.apache.paimon.crosspartition.GlobalIndexAssigner(t);
            assigner.open(
                    64L << 20,
                    ioManager,
                    1,
                    0,
                    (row, bucket) -> {
                        try {
                            w.write.write(row, bucket);
                        } catch (Exception e) {
                            throw new RuntimeException(e);
                        }
                    });
            new org.apache.paimon.crosspartition.IndexBootstrap(t)
                    .bootstrap(
                            1,
                            0,
                            row -> {
                                try {
                                    assigner.bootstrapKey(row);
                                } catch (java.io.IOException e) {
                                    throw new RuntimeException(e);
                                }
                            });
            assigner.endBoostrap(false);
        }

        void write(GenericRow row) throws Exception {
            assigner.processInput(row);
        }

        void commit() throws Exception {
            w.commit(true);
        }

        @Override
        public void close() throws Exception {
            assigner.close();
            w.close();
        }
    }

    static Schema.Builder partitionedKv() {
        return Schema.newBuilder()
                .column("dt", DataTypes.STRING().notNull())
                .column("id", DataTypes.INT().notNull())
                .column("name", DataTypes.STRING())
                .column("v", DataTypes.BIGINT())
                .partitionKeys("dt");
    }

    static GenericRow kv(RowKind kind, String dt, int id, int version) {
        return row(kind, s(dt), id, s("r" + id + "_v" + version), (long) id * 100 + version);
    }

    /**
     * The deletion-vector table of issue 34: two partitions x 4 buckets, six commits of upserts and deletes, a full
     * compaction at commit 4; commit 5 waits for its compaction, which marks the rows it replaces in the compacted
     * files' deletion vectors (so the files a batch read reads have deletion files), commit 6 only writes.
     */
    static void dvPartitioned(Catalog catalog) throws Exception {
        Table t =
                create(
                        catalog,
                        "pk_dv_parts",
                        partitionedKv()
                                .primaryKey("dt", "id")
                                .option("bucket", "4")
                                .option("deletion-vectors.enabled", "true")
                                .option("num-sorted-run.compaction-trigger", "5")
                                .build());
        String[] parts = {"p1", "p2"};
        try (Writer w = new Writer(t)) {
            for (String p : parts) {
                for (int i = 0; i < 200; i++) {
                    w.write(kv(RowKind.INSERT, p, i, 1));
                }
            }
            w.commit(true);
            for (String p : parts) {
                for (int i = 0; i < 100; i++) {
                    w.write(kv(RowKind.INSERT, p, i, 2));
                }
                for (int i = 150; i < 170; i++) {
                    w.write(kv(RowKind.DELETE, p, i, 1));
                }
            }
            w.commit(true);
            for (String p : parts) {
                for (int i = 50; i < 150; i++) {
                    w.write(kv(RowKind.UPDATE_AFTER, p, i, 3));
                }
                for (int i = 10; i < 20; i++) {
                    w.write(kv(RowKind.DELETE, p, i, 2));
                }
            }
            w.commit(true);
            w.fullCompact();
            for (String p : parts) {
                for (int i = 0; i < 60; i++) {
                    w.write(kv(RowKind.INSERT, p, i, 5));
                }
                for (int i = 120; i < 130; i++) {
                    w.write(kv(RowKind.DELETE, p, i, 3));
                }
            }
            w.commit(true);
        }
        // the last commit writes only (a compaction now would merge every run, deletion vectors gone): the
        // compacted files keep the deletion vectors of commit 5's compaction, the new rows wait in level 0
        Map<String, String> writeOnly = new HashMap<>();
        writeOnly.put("write-only", "true");
        try (Writer w = new Writer(((FileStoreTable) t).copy(writeOnly))) {
            for (String p : parts) {
                for (int i = 100; i < 180; i++) {
                    w.write(kv(RowKind.INSERT, p, i, 6));
                }
                for (int i = 30; i < 35; i++) {
                    w.write(kv(RowKind.DELETE, p, i, 5));
                }
            }
            w.commit();
        }
    }

    /**
     * A dynamic-bucket table written by Flink's bucket assigner, small buckets (30 keys): buckets are added as
     * keys arrive. Five commits: inserts, upserts that add keys, deletes, a full compaction, inserts again.
     */
    static void dynamicBucket(Catalog catalog, String name, Schema.Builder schema) throws Exception {
        Table t = create(catalog, name, schema.build());
        String[] parts = {"p1", "p2"};
        try (DynamicWriter d = new DynamicWriter(t)) {
            for (String p : parts) {
                for (int i = 0; i < 100; i++) {
                    d.write(kv(RowKind.INSERT, p, i, 1));
                }
            }
            d.commit();
            for (String p : parts) {
                for (int i = 50; i < 150; i++) {
                    d.write(kv(RowKind.INSERT, p, i, 2));
                }
            }
            d.commit();
            for (String p : parts) {
                for (int i = 0; i < 10; i++) {
                    d.write(kv(RowKind.DELETE, p, i, 1));
                }
                for (int i = 120; i < 125; i++) {
                    d.write(kv(RowKind.DELETE, p, i, 2));
                }
            }
            d.commit();
            d.w.fullCompact();
            for (String p : parts) {
                for (int i = 0; i < 20; i++) {
                    d.write(kv(RowKind.INSERT, p, i, 5));
                }
                for (int i = 150; i < 200; i++) {
                    d.write(kv(RowKind.INSERT, p, i, 5));
                }
            }
            d.commit();
        }
    }

    static String crossPart(int id, int move) {
        return "p" + ((id + move) % 3);
    }

    /**
     * A cross-partition table: primary key (id), partitioned by dt, dynamic buckets. Keys move between partitions
     * (the assigner deletes them from their old one), some are deleted, a full compaction.
     */
    static void crossPartition(Catalog catalog) throws Exception {
        Table t =
                create(
                        catalog,
                        "cross_part",
                        partitionedKv()
                                .primaryKey("id")
                                .option("bucket", "-1")
                                .option("dynamic-bucket.target-row-num", "40")
                                .build());
        try (CrossPartitionWriter c = new CrossPartitionWriter(t)) {
            for (int i = 0; i < 200; i++) {
                c.write(kv(RowKind.INSERT, crossPart(i, 0), i, 1));
            }
            c.commit();
            for (int i = 0; i < 100; i++) {
                c.write(kv(RowKind.INSERT, crossPart(i, 1), i, 2));
            }
            c.commit();
            for (int i = 150; i < 160; i++) {
                c.write(kv(RowKind.DELETE, crossPart(i, 0), i, 1));
            }
            c.commit();
            for (int i = 50; i < 80; i++) {
                c.write(kv(RowKind.INSERT, crossPart(i, 2), i, 4));
            }
            for (int i = 200; i < 240; i++) {
                c.write(kv(RowKind.INSERT, crossPart(i, 0), i, 4));
            }
            c.commit();
            c.w.fullCompact();
        }
    }

    /**
     * Dynamic-bucket and cross-partition tables written step by step while paimon-tail serves them: each step adds
     * keys (and buckets), moves some between partitions (cross_part) and deletes one.
     */
    static void liveKinds(Catalog catalog, String name, int step) throws Exception {
        Identifier ident = Identifier.create(DB, name);
        boolean cross = name.equals("live_cross");
        Table t;
        if (step == 0) {
            Schema.Builder b =
                    partitionedKv()
                            .option("bucket", "-1")
                            .option("dynamic-bucket.target-row-num", "25");
            t = create(catalog, name, (cross ? b.primaryKey("id") : b.primaryKey("dt", "id")).build());
        } else {
            t = catalog.getTable(ident);
        }
        if (cross) {
            try (CrossPartitionWriter c = new CrossPartitionWriter(t)) {
                for (int i = step * 30; i < step * 30 + 60; i++) {
                    c.write(kv(RowKind.INSERT, crossPart(i, step), i, step));
                }
                if (step > 0) {
                    c.write(kv(RowKind.DELETE, crossPart(step * 7, step - 1), step * 7, step));
                }
                c.commit();
            }
            return;
        }
        try (DynamicWriter d = new DynamicWriter(t)) {
            for (String p : new String[] {"p1", "p2"}) {
                for (int i = step * 30; i < step * 30 + 60; i++) {
                    d.write(kv(RowKind.INSERT, p, i, step));
                }
                if (step > 0) {
                    d.write(kv(RowKind.DELETE, p, step * 7, step));
                }
            }
            d.commit();
        }
    }

    // ------------------------------------------------------------------ reading

    @SuppressWarnings("unchecked")
    static Object value(DataType type, Object v) {
        if (v == null) {
            return null;
        }
        DataTypeRoot root = type.getTypeRoot();
        switch (root) {
            case CHAR:
            case VARCHAR:
                return v.toString();
            case DECIMAL:
                return ((Decimal) v).toBigDecimal().toPlainString();
            case DATE:
                return LocalDate.ofEpochDay((Integer) v).toString();
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return ((Timestamp) v).toLocalDateTime().format(TS);
            case BINARY:
            case VARBINARY:
                return java.util.Base64.getEncoder().encodeToString((byte[]) v);
            case FLOAT:
                return ((Float) v).doubleValue();
            case ARRAY:
                {
                    DataType et = ((org.apache.paimon.types.ArrayType) type).getElementType();
                    org.apache.paimon.data.InternalArray a = (org.apache.paimon.data.InternalArray) v;
                    org.apache.paimon.data.InternalArray.ElementGetter g =
                            org.apache.paimon.data.InternalArray.createElementGetter(et);
                    List<Object> out = new ArrayList<>();
                    for (int i = 0; i < a.size(); i++) {
                        out.add(value(et, g.getElementOrNull(a, i)));
                    }
                    return out;
                }
            case MAP:
                {
                    org.apache.paimon.types.MapType mt = (org.apache.paimon.types.MapType) type;
                    org.apache.paimon.data.InternalMap m = (org.apache.paimon.data.InternalMap) v;
                    List<Object> ks = (List<Object>) value(new org.apache.paimon.types.ArrayType(mt.getKeyType()), m.keyArray());
                    List<Object> vs = (List<Object>) value(new org.apache.paimon.types.ArrayType(mt.getValueType()), m.valueArray());
                    List<Object> out = new ArrayList<>();
                    for (int i = 0; i < ks.size(); i++) {
                        out.add(Arrays.asList(ks.get(i), vs.get(i)));
                    }
                    return out;
                }
            case ROW:
                return toJson((RowType) type, (InternalRow) v, false);
            default:
                return v;
        }
    }

    static List<Object> toJson(RowType type, InternalRow row, boolean withKind) {
        List<Object> out = new ArrayList<>();
        if (withKind) {
            out.add(row.getRowKind().shortString());
        }
        List<DataField> fields = type.getFields();
        for (int i = 0; i < fields.size(); i++) {
            DataType ft = fields.get(i).type();
            out.add(value(ft, InternalRow.createFieldGetter(ft, i).getFieldOrNull(row)));
        }
        return out;
    }

    static List<List<Object>> readAll(
            RowType type, TableRead read, List<Split> splits, boolean withKind) throws Exception {
        List<List<Object>> rows = new ArrayList<>();
        for (Split split : splits) {
            try (RecordReader<InternalRow> r = read.createReader(split)) {
                r.forEachRemaining(row -> rows.add(toJson(type, row, withKind)));
            }
        }
        return rows;
    }

    static Map<String, Object> oracle(Catalog catalog, String name, Long snapshot, String streamFrom)
            throws Exception {
        FileStoreTable table = (FileStoreTable) catalog.getTable(Identifier.create(DB, name));
        Map<String, Object> out = new LinkedHashMap<>();
        RowType type = table.rowType();
        List<String> names = new ArrayList<>();
        for (DataField f : type.getFields()) {
            names.add(f.name());
        }
        out.put("fields", names);
        Long latest = table.snapshotManager().latestSnapshotId();
        Long earliest = table.snapshotManager().earliestSnapshotId();
        out.put("latest_snapshot", latest);
        out.put("earliest_snapshot", earliest);
        List<Map<String, Object>> snaps = new ArrayList<>();
        if (latest != null) {
            for (long id = earliest; id <= latest; id++) {
                Snapshot s = table.snapshotManager().snapshot(id);
                Map<String, Object> m = new LinkedHashMap<>();
                m.put("id", id);
                m.put("commit_kind", s.commitKind().name());
                m.put("has_changelog", s.changelogManifestList() != null);
                snaps.add(m);
            }
        }
        out.put("snapshots", snaps);

        FileStoreTable at = table;
        if (snapshot != null) {
            Map<String, String> o = new HashMap<>();
            o.put("scan.snapshot-id", String.valueOf(snapshot));
            at = table.copy(o);
        }
        ReadBuilder rb = at.newReadBuilder();
        TableRead read = rb.newRead().withIOManager(ioManager);
        out.put("batch", latest == null ? new ArrayList<>() : readAll(type, read, rb.newScan().plan().splits(), false));

        if (streamFrom != null && latest != null) {
            // STREAM_FROM: earliest | N (from-snapshot) | full:N (from-snapshot-full)
            //              | ts:MILLIS (from-timestamp)
            Map<String, String> o = new HashMap<>();
            if (streamFrom.equals("earliest")) {
                o.put("scan.mode", "from-snapshot");
                o.put("scan.snapshot-id", String.valueOf(earliest));
            } else if (streamFrom.startsWith("full:")) {
                o.put("scan.mode", "from-snapshot-full");
                o.put("scan.snapshot-id", streamFrom.substring(5));
            } else if (streamFrom.startsWith("ts:")) {
                o.put("scan.mode", "from-timestamp");
                o.put("scan.timestamp-millis", streamFrom.substring(3));
            } else {
                o.put("scan.mode", "from-snapshot");
                o.put("scan.snapshot-id", streamFrom);
            }
            FileStoreTable st = table.copy(o);
            ReadBuilder srb = st.newReadBuilder();
            StreamTableScan scan = srb.newStreamScan();
            TableRead sread = srb.newRead().withIOManager(ioManager);
            List<Map<String, Object>> plans = new ArrayList<>();
            int guard = 0;
            while (guard++ < 1000) {
                Long before = scan.checkpoint();
                TableScan.Plan plan = scan.plan();
                Long after = scan.checkpoint();
                if (before != null && before.equals(after) && plan.splits().isEmpty()) {
                    if (after > latest) {
                        break;
                    }
                    continue;
                }
                if (plan.splits().isEmpty()) {
                    // (the first plan of a from-snapshot scan only positions it)
                    if (after != null && after > latest) {
                        break;
                    }
                    continue;
                }
                Map<String, Object> p = new LinkedHashMap<>();
                p.put("snapshot", after - 1);
                p.put("rows", readAll(type, sread, plan.splits(), true));
                plans.add(p);
                if (after > latest) {
                    break;
                }
            }
            out.put("stream", plans);
        }
        return out;
    }

    /**
     * Java's batch read of the changes between two snapshots (incremental-between=START,END:
     * START exclusive), with row kinds and deletes kept. On primary-key tables Paimon 0.9
     * diffs the merged buckets (IncrementalDiffSplitRead): -D for keys gone, the new row
     * for keys added or changed.
     */
    static Object incremental(Catalog catalog, String name, String start, String end)
            throws Exception {
        FileStoreTable table = (FileStoreTable) catalog.getTable(Identifier.create(DB, name));
        Map<String, String> o = new HashMap<>();
        o.put("incremental-between", start + "," + end);
        FileStoreTable at = table.copy(o);
        ReadBuilder rb = at.newReadBuilder();
        org.apache.paimon.table.source.InnerTableRead read =
                (org.apache.paimon.table.source.InnerTableRead) rb.newRead();
        read.forceKeepDelete();
        read.withIOManager(ioManager);
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("rows", readAll(table.rowType(), read, rb.newScan().plan().splits(), true));
        return out;
    }

    static Object lookup(
            Catalog catalog, String name, String keysJson, String partitionJson, Long snapshot)
            throws Exception {
        FileStoreTable table = (FileStoreTable) catalog.getTable(Identifier.create(DB, name));
        org.apache.paimon.table.source.snapshot.SnapshotReader snapshotReader =
                table.newSnapshotReader();
        if (snapshot != null) {
            snapshotReader = snapshotReader.withSnapshot(snapshot);
        }
        RowType type = table.rowType();
        List<?> keys = JsonSerdeUtil.fromJson(keysJson, List.class);
        List<String> pk = table.schema().trimmedPrimaryKeys();
        List<DataType> keyTypes = new ArrayList<>();
        for (String k : pk) {
            keyTypes.add(type.getTypeAt(type.getFieldIndex(k)));
        }
        List<?> wantPartition =
                partitionJson == null ? null : JsonSerdeUtil.fromJson(partitionJson, List.class);
        RowType partType = table.schema().logicalPartitionType();

        LocalTableQuery query = table.newLocalTableQuery().withIOManager(ioManager);
        Map<BinaryRow, List<Integer>> buckets = new LinkedHashMap<>();
        for (Split s : snapshotReader.read().splits()) {
            DataSplit d = (DataSplit) s;
            query.refreshFiles(d.partition(), d.bucket(), new ArrayList<>(), d.dataFiles());
            buckets.computeIfAbsent(d.partition(), x -> new ArrayList<>()).add(d.bucket());
        }
        List<Object> results = new ArrayList<>();
        for (Object k : keys) {
            List<?> kv = (List<?>) k;
            GenericRow key = new GenericRow(kv.size());
            for (int i = 0; i < kv.size(); i++) {
                key.setField(i, fromJson(keyTypes.get(i), kv.get(i)));
            }
            Object found = null;
            for (Map.Entry<BinaryRow, List<Integer>> e : buckets.entrySet()) {
                if (wantPartition != null
                        && !toJson(partType, e.getKey(), false).equals(wantPartition)) {
                    continue;
                }
                for (int bucket : e.getValue()) {
                    InternalRow r = query.lookup(e.getKey(), bucket, key);
                    if (r != null) {
                        found = toJson(type, r, false);
                        break;
                    }
                }
                if (found != null) {
                    break;
                }
            }
            results.add(found);
        }
        query.close();
        Map<String, Object> out = new LinkedHashMap<>();
        out.put("fields", type.getFieldNames());
        out.put("results", results);
        return out;
    }

    static Object fromJson(DataType type, Object v) {
        if (v == null) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.toString());
            case INTEGER:
                return ((Number) v).intValue();
            case BIGINT:
                return ((Number) v).longValue();
            case SMALLINT:
                return ((Number) v).shortValue();
            case TINYINT:
                return ((Number) v).byteValue();
            case DOUBLE:
                return ((Number) v).doubleValue();
            case DATE:
                return (int) LocalDate.parse(v.toString()).toEpochDay();
            case DECIMAL:
                DecimalType dt = (DecimalType) type;
                return Decimal.fromBigDecimal(
                        new BigDecimal(v.toString()), dt.getPrecision(), dt.getScale());
            default:
                return v;
        }
    }
}
