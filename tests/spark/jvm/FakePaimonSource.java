package paimontail.fixture;

import java.io.Serializable;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;

import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.connector.catalog.SupportsRead;
import org.apache.spark.sql.connector.catalog.Table;
import org.apache.spark.sql.connector.catalog.TableCapability;
import org.apache.spark.sql.connector.catalog.TableProvider;
import org.apache.spark.sql.connector.expressions.Transform;
import org.apache.spark.sql.connector.read.Batch;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.PartitionReader;
import org.apache.spark.sql.connector.read.PartitionReaderFactory;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.connector.read.ScanBuilder;
import org.apache.spark.sql.sources.DataSourceRegister;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * A JVM data source registered as "paimon", as the paimon-spark connector is: one row {source: "jvm"}.
 * The tests put it on a Spark driver's class path to see paimon-tail's register() beside it.
 */
public class FakePaimonSource implements TableProvider, DataSourceRegister {
    static final StructType SCHEMA = new StructType().add("source", DataTypes.StringType);

    @Override
    public String shortName() {
        return "paimon";
    }

    @Override
    public StructType inferSchema(CaseInsensitiveStringMap options) {
        return SCHEMA;
    }

    @Override
    public Table getTable(StructType schema, Transform[] partitioning, Map<String, String> properties) {
        return new OneRowTable();
    }

    static class OneRowTable implements Table, SupportsRead {
        public String name() {
            return "fake-paimon";
        }

        public StructType schema() {
            return SCHEMA;
        }

        public Set<TableCapability> capabilities() {
            return EnumSet.of(TableCapability.BATCH_READ);
        }

        public ScanBuilder newScanBuilder(CaseInsensitiveStringMap options) {
            return new OneRowScan();
        }
    }

    static class OneRowScan implements ScanBuilder, Scan, Batch {
        public Scan build() {
            return this;
        }

        public StructType readSchema() {
            return SCHEMA;
        }

        public Batch toBatch() {
            return this;
        }

        public InputPartition[] planInputPartitions() {
            return new InputPartition[] {new OnePartition()};
        }

        public PartitionReaderFactory createReaderFactory() {
            return new OneRowReaderFactory();
        }
    }

    static class OnePartition implements InputPartition, Serializable {}

    static class OneRowReaderFactory implements PartitionReaderFactory, Serializable {
        public PartitionReader<InternalRow> createReader(InputPartition partition) {
            return new PartitionReader<InternalRow>() {
                private boolean done;

                public boolean next() {
                    boolean more = !done;
                    done = true;
                    return more;
                }

                public InternalRow get() {
                    return new GenericInternalRow(new Object[] {UTF8String.fromString("jvm")});
                }

                public void close() {}
            };
        }
    }
}
