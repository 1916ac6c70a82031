// Column pruning for the `lance` Python data source, compiled and installed by
// lance_adapter_spark/pruning.py into a session's extra optimizer rules.
//
// Spark 4 does not tell a Python data source which columns a query uses: its scan always
// has the table's whole schema. After Spark's own optimizer has run, every scan of the
// source sits under a Project (and maybe a Filter) naming what the query uses; this rule
// rebuilds such a scan with only those columns (and those of the filters pushed to it,
// which Spark resolves in the scan's columns when it pushes them again), so the source's
// reader is made for them. The rebuilt scan reuses the source instance made when the
// DataFrame was loaded (the table version it pinned) and the filters pushed to it.
// A vector column the query uses only through elements at literal indexes is read as
// those elements (columns named ELEMENT_PREFIX + index + ":" + column; elementsRead).
// A grouped count, min, max, sum or avg over the scan is computed partially by the read
// tasks, per group (columns named AGGREGATE_PREFIX + function + ":" + source), and the
// Aggregate merges those partial results (aggregatedInReader).
// A count of all rows, count() or COUNT(*) with no grouping, over a scan left with no
// columns is read from the reserved column ROWS_COLUMN, which the reader plans as one
// partition holding the table's row count from Lance's metadata (each fragment's rows
// less those its deletion file removes; ROW_COUNT_PARTITION): no column data is read.
// The rule plans that read at once, takes the number from the pickled partition and
// puts it in place of the aggregate, so that no task runs at all. Should the number not
// be there, the count runs as a sum over that column, a one-task job with the same answer.
// Where anything is not as expected (another Spark, another source), the plan is left
// as it was.
package lance.adapter.spark;

import java.lang.reflect.Field;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import net.razorvine.pickle.Unpickler;
import net.razorvine.pickle.objects.ClassDict;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Alias;
import org.apache.spark.sql.catalyst.expressions.Attribute;
import org.apache.spark.sql.catalyst.expressions.AttributeReference;
import org.apache.spark.sql.catalyst.expressions.AttributeSet;
import org.apache.spark.sql.catalyst.expressions.Cast$;
import org.apache.spark.sql.catalyst.expressions.Coalesce;
import org.apache.spark.sql.catalyst.expressions.Divide;
import org.apache.spark.sql.catalyst.expressions.EqualTo;
import org.apache.spark.sql.catalyst.expressions.If;
import org.apache.spark.sql.catalyst.expressions.ElementAt;
import org.apache.spark.sql.catalyst.expressions.ExprId;
import org.apache.spark.sql.catalyst.expressions.GetArrayItem;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.GenericInternalRow;
import org.apache.spark.sql.catalyst.expressions.Literal;
import org.apache.spark.sql.catalyst.expressions.NamedExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression;
import org.apache.spark.sql.catalyst.expressions.aggregate.AggregateExpression$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Average;
import org.apache.spark.sql.catalyst.expressions.aggregate.Complete$;
import org.apache.spark.sql.catalyst.expressions.aggregate.Count;
import org.apache.spark.sql.catalyst.expressions.aggregate.Max;
import org.apache.spark.sql.catalyst.expressions.aggregate.Min;
import org.apache.spark.sql.catalyst.expressions.aggregate.Sum;
import org.apache.spark.sql.catalyst.plans.logical.Aggregate;
import org.apache.spark.sql.catalyst.plans.logical.Filter;
import org.apache.spark.sql.catalyst.plans.logical.LocalRelation;
import org.apache.spark.sql.catalyst.plans.logical.LogicalPlan;
import org.apache.spark.sql.catalyst.plans.logical.Project;
import org.apache.spark.sql.catalyst.rules.Rule;
import org.apache.spark.sql.catalyst.types.DataTypeUtils;
import org.apache.spark.sql.connector.read.InputPartition;
import org.apache.spark.sql.connector.read.Scan;
import org.apache.spark.sql.execution.datasources.v2.DataSourceV2ScanRelation;
import org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2;
import org.apache.spark.sql.execution.datasources.v2.python.PythonInputPartition;
import org.apache.spark.sql.execution.datasources.v2.python.PythonScan;
import org.apache.spark.sql.execution.datasources.v2.python.PythonScanBuilder;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.Metadata;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;
import org.apache.spark.sql.util.CaseInsensitiveStringMap;
import scala.Function1;
import scala.Option;
import scala.jdk.javaapi.CollectionConverters;

public final class PruneLanceColumns extends Rule<LogicalPlan> {
  /** lance_adapter_spark/read.py's ROW_COUNT_COLUMN: the schema of a read that counts rows. */
  public static final String ROWS_COLUMN = "__lance_fragment_rows";
  /** lance_adapter_spark/read.py's TableRowCount, as a pickled partition names its class. */
  public static final String ROW_COUNT_PARTITION = "lance_adapter_spark.read.TableRowCount";
  /** lance_adapter_spark/read.py's ELEMENT_COLUMN_PREFIX: a column holding one element of a
   * vector, named ELEMENT_PREFIX + index + ":" + the vector's column. */
  public static final String ELEMENT_PREFIX = "__lance_element:";
  /** lance_adapter_spark/aggregates.py's AGGREGATE_COLUMN_PREFIX: a column holding a partial
   * aggregate per group and task, named AGGREGATE_PREFIX + function + ":" + its source. */
  public static final String AGGREGATE_PREFIX = "__lance_aggregate:";

  private final String sourceName;

  public PruneLanceColumns(String sourceName) {
    this.sourceName = sourceName;
  }

  /** Adds the rule to `session`'s extra optimizations unless a rule of this name is there. */
  public static void install(SparkSession session, String sourceName) {
    List<Rule<LogicalPlan>> rules =
        new ArrayList<>(CollectionConverters.asJava(session.experimental().extraOptimizations()));
    for (Rule<LogicalPlan> rule : rules) {
      if (rule.getClass().getName().equals(PruneLanceColumns.class.getName())) {
        return;
      }
    }
    rules.add(new PruneLanceColumns(sourceName));
    session.experimental().extraOptimizations_$eq(CollectionConverters.asScala(rules).toList());
  }

  @Override
  public LogicalPlan apply(LogicalPlan plan) {
    Function1<LogicalPlan, LogicalPlan> rewriteChild = this::apply;
    LogicalPlan rewritten = (LogicalPlan) plan.mapChildren(rewriteChild);
    if (rewritten instanceof Aggregate aggregate) {
      LogicalPlan counted = countedFromMetadata(aggregate);
      if (counted != aggregate) {
        return counted;
      }
      LogicalPlan read = elementsRead(aggregate);
      return read instanceof Aggregate withElements ? aggregatedInReader(withElements) : read;
    }
    if (!(rewritten instanceof Project project)) {
      return rewritten;
    }
    return elementsRead(columnsPruned(project));
  }

  /** `project` over its scan (maybe through a Filter) narrowed to the columns it uses. */
  private LogicalPlan columnsPruned(Project project) {
    LogicalPlan child = project.child();
    if (child instanceof DataSourceV2ScanRelation scan) {
      LogicalPlan pruned = pruned(scan, project.references(), null);
      return pruned == scan ? project : withChild(project, pruned);
    }
    if (child instanceof Filter filter && filter.child() instanceof DataSourceV2ScanRelation scan) {
      LogicalPlan pruned = pruned(scan, project.references(), filter.references());
      return pruned == scan ? project : withChild(project, withChild(filter, pruned));
    }
    return project;
  }

  /** `parent` (an Aggregate or Project over this source's scan, maybe through a Project
   * passing columns on and a Filter) reading single elements of vector columns in place of
   * the vectors, where it uses a vector only as `element_at(v, k)` or `v[k]` with literal
   * indexes; `parent` itself otherwise. Spark copies every element of an array into each
   * row it reads from a Python source, where a columnar reader (Parquet's) reads the one
   * element in place; reading the elements instead spares that copy. Only arrays without
   * null elements (vectors, docs/spark.md Types) qualify, and the reader checks each
   * index against the vector's fixed size while the rule plans the read, so the answer,
   * errors included, is the one the whole vector would give. */
  private LogicalPlan elementsRead(LogicalPlan parent) {
    if (parent.children().size() != 1) {
      return parent;
    }
    LogicalPlan node = parent.children().head();
    Project through = null;
    Filter filter = null;
    if (node instanceof Project project) {
      through = project;
      node = project.child();
    }
    if (node instanceof Filter found) {
      filter = found;
      node = found.child();
    }
    if (!(node instanceof DataSourceV2ScanRelation scan)
        || !(scan.scan() instanceof PythonScan pythonScan)
        || scan.relation().output().exists(column -> column.name().startsWith(ELEMENT_PREFIX))) {
      return parent;
    }
    try {
      if (!sourceName.equals(field(pythonScan, "shortName"))) {
        return parent;
      }
      List<String> filtered = pushedColumns(pythonScan);
      // For each vector read by element only: its elements' columns, by index.
      Map<ExprId, Map<Integer, AttributeReference>> elements = new LinkedHashMap<>();
      for (AttributeReference vector : CollectionConverters.asJava(scan.output())) {
        if (!(vector.dataType() instanceof ArrayType array)
            || array.containsNull()
            || filtered.contains(vector.name())
            || (filter != null && filter.references().contains(vector))
            || (through != null && !passedOn(through, vector))) {
          continue;
        }
        Set<Integer> indexes = new TreeSet<>();
        boolean onlyElements = true;
        for (Expression expression : CollectionConverters.asJava(parent.expressions())) {
          onlyElements &= elementsUsed(expression, vector.exprId(), indexes);
        }
        if (onlyElements && !indexes.isEmpty()) {
          Map<Integer, AttributeReference> columns = new LinkedHashMap<>();
          for (Integer index : indexes) {
            columns.put(index, elementColumn(vector, array, index));
          }
          elements.put(vector.exprId(), columns);
        }
      }
      if (elements.isEmpty()) {
        return parent;
      }
      return elementsPlanned(parent, through, filter, scan, pythonScan, elements);
    } catch (Exception error) { // Scala's exceptions are not declared: any of them
      logWarning(() -> "lance: vector elements not read apart for this scan: " + error);
      return parent;
    }
  }

  /** `parent` rebuilt over a scan reading `elements` in place of their vectors, planned
   * now so that the reader can refuse an index; `parent` itself when it does. */
  private static LogicalPlan elementsPlanned(
      LogicalPlan parent,
      Project through,
      Filter filter,
      DataSourceV2ScanRelation scan,
      PythonScan pythonScan,
      Map<ExprId, Map<Integer, AttributeReference>> elements)
      throws ReflectiveOperationException {
    List<AttributeReference> output = new ArrayList<>();
    for (AttributeReference column : CollectionConverters.asJava(scan.output())) {
      Map<Integer, AttributeReference> read = elements.get(column.exprId());
      output.addAll(read == null ? List.of(column) : read.values());
    }
    Scan rebuilt = plannedScan(pythonScan, output); // null: an index out of range
    if (rebuilt == null) {
      return parent;
    }
    LogicalPlan below = withScan(scan, rebuilt, output);
    if (filter != null) {
      below = withChild(filter, below);
    }
    if (through != null) {
      List<NamedExpression> passed = new ArrayList<>();
      for (NamedExpression column : CollectionConverters.asJava(through.projectList())) {
        Map<Integer, AttributeReference> read =
            column instanceof AttributeReference vector ? elements.get(vector.exprId()) : null;
        passed.addAll(read == null ? List.of(column) : read.values());
      }
      below = new Project(seq(passed), below);
    }
    Function1<Expression, Expression> readElements = expression -> withElements(expression, elements);
    return withChild((LogicalPlan) parent.mapExpressions(readElements), below);
  }

  /** `aggregate` (grouping by columns of this source's scan, maybe through a Project passing
   * columns on) merging partial aggregates that the read tasks compute per group, where each
   * of its aggregates has a partial form (partialForm); `aggregate` itself otherwise. Spark
   * hands every row a Python source reads to the JVM one at a time; this way a task sends
   * one row per group instead. The reader checks the partial aggregates while the rule plans
   * the read, and where it refuses them the plan stays as it was. */
  private LogicalPlan aggregatedInReader(Aggregate aggregate) {
    LogicalPlan node = aggregate.child();
    if (node instanceof Project project
        && project.projectList().forall(column -> column instanceof AttributeReference)) {
      node = project.child();
    }
    if (!(node instanceof DataSourceV2ScanRelation scan)
        || !(scan.scan() instanceof PythonScan pythonScan)
        || scan.output().exists(column -> column.name().startsWith(AGGREGATE_PREFIX))) {
      return aggregate;
    }
    try {
      if (!sourceName.equals(field(pythonScan, "shortName"))
          || pushedFilters(pythonScan).length > 0) { // their columns would be grouping ones
        return aggregate;
      }
      List<AttributeReference> output = new ArrayList<>();
      for (Expression grouping : CollectionConverters.asJava(aggregate.groupingExpressions())) {
        if (!(grouping instanceof AttributeReference key)
            || !scan.outputSet().contains(key)
            || !groupable(key.dataType())) {
          return aggregate;
        }
        if (!output.contains(key)) {
          output.add(key);
        }
      }
      int keys = output.size();
      Map<String, AttributeReference> partials = new LinkedHashMap<>();
      List<NamedExpression> merged = new ArrayList<>();
      for (NamedExpression column : CollectionConverters.asJava(aggregate.aggregateExpressions())) {
        Expression fromPartials = mergedPartials((Expression) column, output.subList(0, keys), scan, partials);
        if (fromPartials == null) {
          return aggregate;
        }
        merged.add((NamedExpression) fromPartials);
      }
      if (partials.isEmpty()) {
        return aggregate;
      }
      output.addAll(partials.values());
      Scan rebuilt = plannedScan(pythonScan, output);
      if (rebuilt == null) {
        return aggregate;
      }
      return withAggregates(aggregate, merged, withScan(scan, rebuilt, output));
    } catch (Exception error) { // Scala's exceptions are not declared: any of them
      logWarning(() -> "lance: aggregates not computed in the read for this scan: " + error);
      return aggregate;
    }
  }

  /** `expression` (a column of an Aggregate grouping by `keys`) with each aggregate in it
   * merging its partial form, whose columns it adds to `partials`; null when an aggregate
   * has no partial form or a column outside the aggregates is not a key. */
  private static Expression mergedPartials(
      Expression expression,
      List<AttributeReference> keys,
      DataSourceV2ScanRelation scan,
      Map<String, AttributeReference> partials) {
    if (expression instanceof AggregateExpression aggregate) {
      return partialForm(aggregate, scan, partials);
    }
    if (expression instanceof AttributeReference attribute) {
      return keys.contains(attribute) ? attribute : null;
    }
    List<Expression> children = new ArrayList<>();
    for (Expression child : CollectionConverters.asJava(expression.children())) {
      Expression merged = mergedPartials(child, keys, scan, partials);
      if (merged == null) {
        return null;
      }
      children.add(merged);
    }
    return (Expression) expression.withNewChildren(seq(children));
  }

  /** `aggregate` computed from the partial aggregates (added to `partials`) of the read
   * tasks, as Spark itself merges the partial results of `count`, `min`, `max`, `sum` and
   * `avg`; null for any other aggregate, a distinct or filtered one, or another type. */
  private static Expression partialForm(
      AggregateExpression aggregate,
      DataSourceV2ScanRelation scan,
      Map<String, AttributeReference> partials) {
    if (aggregate.isDistinct() || aggregate.filter().isDefined()
        || !(aggregate.mode() instanceof Complete$)) {
      return null;
    }
    Expression function = aggregate.aggregateFunction();
    if (function instanceof Count count) {
      if (count.children().forall(child -> child instanceof Literal literal && literal.value() != null)) {
        return countOf(partial(partials, "count", "*", DataTypes.LongType, false));
      }
      AttributeReference source = source(count.children(), scan, false);
      return source == null ? null : countOf(partial(partials, "count", source.name(), DataTypes.LongType, false));
    }
    boolean extreme = function instanceof Max || function instanceof Min;
    if (!extreme && !(function instanceof Sum) && !(function instanceof Average)) {
      return null;
    }
    AttributeReference source = source(function.children(), scan, !extreme);
    if (source == null) {
      return null;
    }
    if (extreme) {
      AttributeReference values = partial(
          partials, function instanceof Max ? "max" : "min", source.name(), source.dataType(), true);
      return aggregated(function instanceof Max ? new Max(values) : new Min(values));
    }
    Expression counted = aggregated(new Sum(partial(partials, "count", source.name(), DataTypes.LongType, false)));
    Expression summed = aggregated(new Sum(partial(partials, "sum", source.name(), DataTypes.DoubleType, true)));
    Expression value = function instanceof Sum
        ? summed
        : new Divide(summed, Cast$.MODULE$.apply(counted, DataTypes.DoubleType,
            Cast$.MODULE$.apply$default$3(), Cast$.MODULE$.apply$default$4()));
    // Spark's own sum and avg are null where no value is: as here, where the count is 0.
    return new If(new EqualTo(counted, Literal.create(Long.valueOf(0L), DataTypes.LongType)),
        Literal.create(null, DataTypes.DoubleType), value);
  }

  /** The one column of `scan` `arguments` names, when it has a type partial aggregates take:
   * a number, floating-point only when `summed` (integer sums would have to fail on
   * overflow as Spark's do); null otherwise. */
  private static AttributeReference source(
      scala.collection.immutable.Seq<Expression> arguments,
      DataSourceV2ScanRelation scan,
      boolean summed) {
    if (arguments.size() != 1
        || !(arguments.head() instanceof AttributeReference column)
        || !scan.outputSet().contains(column)) {
      return null;
    }
    org.apache.spark.sql.types.DataType type = column.dataType();
    boolean floating = type.equals(DataTypes.FloatType) || type.equals(DataTypes.DoubleType);
    return floating || (!summed && integral(type)) ? column : null;
  }

  /** Whether pyarrow groups values of `type` as Spark does: by exact equality, nulls
   * together (floating point is not: Spark groups NaNs and both zeros together). */
  private static boolean groupable(org.apache.spark.sql.types.DataType type) {
    return integral(type) || type.equals(DataTypes.BooleanType)
        || type.equals(DataTypes.DateType) || type.equals(DataTypes.StringType);
  }

  private static boolean integral(org.apache.spark.sql.types.DataType type) {
    return type.equals(DataTypes.ByteType) || type.equals(DataTypes.ShortType)
        || type.equals(DataTypes.IntegerType) || type.equals(DataTypes.LongType);
  }

  /** The column of the partial aggregate `function` of `source`, added to `partials`. */
  private static AttributeReference partial(
      Map<String, AttributeReference> partials,
      String function,
      String source,
      org.apache.spark.sql.types.DataType type,
      boolean nullable) {
    return partials.computeIfAbsent(AGGREGATE_PREFIX + function + ":" + source,
        name -> new AttributeReference(
            name, type, nullable, Metadata.empty(), NamedExpression.newExprId(), seq(List.of())));
  }

  /** A count merged from partial counts: their sum, 0 where there are none. */
  private static Expression countOf(AttributeReference partialCounts) {
    Expression sum = aggregated(new Sum(partialCounts));
    return new Coalesce(seq(List.of(sum, Literal.create(Long.valueOf(0L), DataTypes.LongType))));
  }

  private static Expression aggregated(
      org.apache.spark.sql.catalyst.expressions.aggregate.AggregateFunction function) {
    return AggregateExpression$.MODULE$.apply(function, Complete$.MODULE$, false, Option.empty());
  }

  /** A scan like `pythonScan` of the columns `output` (the table's, or ones the rule makes:
   * vector elements, partial aggregates), planned now so that the reader can refuse what it
   * cannot read; null when it refuses or the scan cannot be rebuilt. */
  private static Scan plannedScan(PythonScan pythonScan, List<AttributeReference> output)
      throws ReflectiveOperationException {
    StructType schema = pythonScan.readSchema();
    List<String> tableColumns = List.of(schema.fieldNames());
    List<StructField> fields = new ArrayList<>();
    for (AttributeReference column : output) {
      fields.add(tableColumns.contains(column.name())
          ? schema.apply(column.name())
          : new StructField(column.name(), column.dataType(), column.nullable(), Metadata.empty()));
    }
    Scan rebuilt = rebuiltScan(pythonScan, new StructType(fields.toArray(new StructField[0])));
    if (rebuilt == null) {
      return null;
    }
    try {
      rebuilt.toBatch().planInputPartitions();
    } catch (Exception refused) { // Scala's exceptions are not declared: any of them
      return null;
    }
    return rebuilt;
  }

  /** Whether `project` passes `vector` on as it is and uses it for nothing else. */
  private static boolean passedOn(Project project, AttributeReference vector) {
    boolean passed = false;
    for (NamedExpression column : CollectionConverters.asJava(project.projectList())) {
      if (column instanceof AttributeReference attribute && attribute.semanticEquals(vector)) {
        passed = true;
      } else if (((Expression) column).references().contains(vector)) {
        return false;
      }
    }
    return passed;
  }

  /** Whether `expression` uses `vector` only through elements at literal indexes, which
   * it adds to `indexes` (from 0, or from the end when negative). */
  private static boolean elementsUsed(
      Expression expression, ExprId vector, Set<Integer> indexes) {
    Integer index = elementIndex(expression, vector);
    if (index != null) {
      indexes.add(index);
      return true;
    }
    if (expression instanceof AttributeReference attribute) {
      return !attribute.exprId().equals(vector);
    }
    boolean onlyElements = true;
    for (Expression child : CollectionConverters.asJava(expression.children())) {
      onlyElements &= elementsUsed(child, vector, indexes);
    }
    return onlyElements;
  }

  /** The index `expression` takes from `vector` when it is `element_at(vector, k)` (k from 1,
   * or from the end when negative) or `vector[k]` (k from 0) with k a literal the read can
   * take; null otherwise. element_at's 0 is an error and a negative `[k]` never an element. */
  private static Integer elementIndex(Expression expression, ExprId vector) {
    if (expression instanceof ElementAt elementAt
        && elementAt.left() instanceof AttributeReference array
        && array.exprId().equals(vector)
        && elementAt.right() instanceof Literal literal
        && literal.value() instanceof Integer k
        && k != 0) {
      return k > 0 ? k - 1 : k;
    }
    if (expression instanceof GetArrayItem item
        && item.child() instanceof AttributeReference array
        && array.exprId().equals(vector)
        && item.ordinal() instanceof Literal literal
        && literal.value() instanceof Integer k
        && k >= 0) {
      return k;
    }
    return null;
  }

  /** The column of the scan holding element `index` of `vector` (read.py's VectorElement). */
  private static AttributeReference elementColumn(AttributeReference vector, ArrayType array, int index) {
    String name = ELEMENT_PREFIX + index + ":" + vector.name();
    return new AttributeReference(
        name, array.elementType(), true, Metadata.empty(), NamedExpression.newExprId(), seq(List.of()));
  }

  /** `expression` with each element it takes of a vector in `elements` read from its column. */
  private static Expression withElements(
      Expression expression,
      Map<ExprId, Map<Integer, AttributeReference>> elements) {
    for (Map.Entry<ExprId, Map<Integer, AttributeReference>> vector
        : elements.entrySet()) {
      Integer index = elementIndex(expression, vector.getKey());
      if (index != null) {
        return vector.getValue().get(index);
      }
    }
    List<Expression> children = new ArrayList<>();
    boolean changed = false;
    for (Expression child : CollectionConverters.asJava(expression.children())) {
      Expression replaced = withElements(child, elements);
      changed |= replaced != child;
      children.add(replaced);
    }
    return changed ? (Expression) expression.withNewChildren(seq(children)) : expression;
  }

  private static LogicalPlan withChild(LogicalPlan parent, LogicalPlan child) {
    return (LogicalPlan) parent.withNewChildren(seq(List.of(child)));
  }

  /** `scan` reading only the attributes in `used` or `alsoUsed`; `scan` itself when it is
   * not this source's, reads nothing it could drop, or cannot be rebuilt. */
  private LogicalPlan pruned(DataSourceV2ScanRelation scan, AttributeSet used, AttributeSet alsoUsed) {
    if (!(scan.scan() instanceof PythonScan pythonScan)) {
      return scan;
    }
    List<AttributeReference> output = CollectionConverters.asJava(scan.output());
    try {
      if (!sourceName.equals(field(pythonScan, "shortName"))) {
        return scan;
      }
      // Spark pushes the filters again to the new scan, and resolves their columns in it.
      List<String> filtered = pushedColumns(pythonScan);
      List<AttributeReference> kept = new ArrayList<>();
      for (AttributeReference attribute : output) {
        if (used.contains(attribute)
            || (alsoUsed != null && alsoUsed.contains(attribute))
            || filtered.contains(attribute.name())) {
          kept.add(attribute);
        }
      }
      if (kept.size() == output.size()) {
        return scan;
      }
      StructType schema = pythonScan.readSchema();
      List<StructField> fields = new ArrayList<>();
      for (AttributeReference attribute : kept) {
        fields.add(schema.apply(attribute.name()));
      }
      Scan rebuilt = rebuiltScan(pythonScan, new StructType(fields.toArray(new StructField[0])));
      return rebuilt == null ? scan : withScan(scan, rebuilt, kept);
    } catch (Exception error) { // Scala's exceptions are not declared: any of them
      logWarning(() -> "lance: column pruning skipped for this scan: " + error);
      return scan;
    }
  }

  /** `aggregate` with its counts taken from fragment metadata when it counts all the rows
   * of a scan of no columns of this source; `aggregate` itself otherwise. */
  private LogicalPlan countedFromMetadata(Aggregate aggregate) {
    LogicalPlan child = aggregate.child();
    if (child instanceof Project project && project.projectList().isEmpty()) {
      child = project.child();
    }
    if (!aggregate.groupingExpressions().isEmpty()
        || !(child instanceof DataSourceV2ScanRelation scan)
        || !scan.output().isEmpty()
        || !(scan.scan() instanceof PythonScan pythonScan)
        || scan.relation().output().exists(column -> column.name().equals(ROWS_COLUMN))) {
      return aggregate;
    }
    List<NamedExpression> counts = CollectionConverters.asJava(aggregate.aggregateExpressions());
    if (counts.isEmpty() || !counts.stream().allMatch(PruneLanceColumns::countsAllRows)) {
      return aggregate;
    }
    try {
      if (!sourceName.equals(field(pythonScan, "shortName"))) {
        return aggregate;
      }
      StructType schema = new StructType(new StructField[] {
          new StructField(ROWS_COLUMN, DataTypes.LongType, false, Metadata.empty())});
      Scan rowCounts = rebuiltScan(pythonScan, schema);
      if (rowCounts == null) {
        return aggregate;
      }
      Long planned = plannedRowCount(rowCounts);
      if (planned != null) {
        return counted(aggregate, planned);
      }
      List<AttributeReference> rows = CollectionConverters.asJava(DataTypeUtils.toAttributes(schema));
      List<NamedExpression> sums = new ArrayList<>();
      for (NamedExpression count : counts) {
        sums.add(summed((Alias) count, rows.get(0)));
      }
      return withAggregates(aggregate, sums, withScan(scan, rowCounts, rows));
    } catch (Exception error) {
      logWarning(() -> "lance: count from metadata skipped for this scan: " + error);
      return aggregate;
    }
  }

  /** The row count `rowCounts` was planned as, when it was planned as one TableRowCount
   * partition (an unfiltered count); null otherwise. Planning here does what Spark would
   * do for the scan a moment later, once. */
  private static Long plannedRowCount(Scan rowCounts) {
    InputPartition[] partitions = rowCounts.toBatch().planInputPartitions();
    if (partitions.length != 1 || !(partitions[0] instanceof PythonInputPartition partition)) {
      return null;
    }
    Object unpickled;
    try {
      unpickled = new Unpickler().loads(partition.pickedPartition());
    } catch (Exception notOurs) { // a pickle the unpickler cannot read: not a row count
      return null;
    }
    return unpickled instanceof ClassDict planned
            && ROW_COUNT_PARTITION.equals(planned.getClassName())
            && planned.get("rows") instanceof Number rows
        ? rows.longValue()
        : null;
  }

  /** One row of `aggregate`'s columns (each a count of all rows) holding `rows`. */
  private static LogicalPlan counted(Aggregate aggregate, long rows) {
    List<Attribute> output = CollectionConverters.asJava(aggregate.output());
    Object[] values = new Object[output.size()];
    Arrays.fill(values, rows);
    InternalRow row = new GenericInternalRow(values);
    return new LocalRelation(seq(output), seq(List.of(row)), false, Option.empty());
  }

  /** Whether `expression` is `count(1)` or `count(*)` (a count of every row), named. */
  private static boolean countsAllRows(NamedExpression expression) {
    return expression instanceof Alias alias
        && alias.child() instanceof AggregateExpression aggregate
        && !aggregate.isDistinct()
        && aggregate.filter().isEmpty()
        && aggregate.aggregateFunction() instanceof Count count
        && count.children().forall(
            argument -> argument instanceof Literal literal && literal.value() != null);
  }

  /** `count` (same name, same id) as the sum of the fragments' row counts, 0 for none. */
  private static NamedExpression summed(Alias count, AttributeReference rows) {
    AggregateExpression aggregate = (AggregateExpression) count.child();
    Expression sum = (Expression) aggregate.withNewChildren(seq(List.of(new Sum(rows))));
    Expression zeroIfNone = new Coalesce(seq(List.of(sum, Literal.create(Long.valueOf(0L), DataTypes.LongType))));
    return (NamedExpression) count.withNewChildren(seq(List.of(zeroIfNone)));
  }

  /** `aggregate` (same grouping) computing `columns` over `child`. */
  private static LogicalPlan withAggregates(
      Aggregate aggregate, List<NamedExpression> columns, LogicalPlan child) {
    List<Object> arguments = arguments(aggregate);
    arguments.set(1, seq(columns));
    arguments.set(2, child);
    return (LogicalPlan) aggregate.makeCopy(arguments.toArray());
  }

  private static LogicalPlan withScan(
      DataSourceV2ScanRelation relation, Scan scan, List<AttributeReference> output) {
    List<Object> arguments = arguments(relation);
    arguments.set(1, scan);
    arguments.set(2, CollectionConverters.asScala(output).toList());
    return (LogicalPlan) relation.makeCopy(arguments.toArray());
  }

  private static List<Object> arguments(scala.Product node) {
    List<Object> arguments = new ArrayList<>();
    node.productIterator().foreach(argument -> arguments.add(argument));
    return arguments;
  }

  private static <T> scala.collection.immutable.Seq<T> seq(List<T> items) {
    return CollectionConverters.asScala(items).toList();
  }

  /** A scan of the same source instance (its pinned table version) and the same pushed
   * filters, of `schema`; null when the filters would not all push again. */
  private static Scan rebuiltScan(PythonScan pythonScan, StructType schema)
      throws ReflectiveOperationException {
    PythonDataSourceV2 source = (PythonDataSourceV2) field(pythonScan, "ds");
    String shortName = (String) field(pythonScan, "shortName");
    CaseInsensitiveStringMap options = (CaseInsensitiveStringMap) field(pythonScan, "options");
    PythonDataSourceV2 fresh = new PythonDataSourceV2();
    fresh.setShortName(shortName);
    setField(fresh, "dataSourceInPython",
        source.getOrCreateDataSourceInPython(shortName, options, Option.apply(pythonScan.readSchema())));
    PythonScanBuilder builder = new PythonScanBuilder(fresh, shortName, schema, options);
    org.apache.spark.sql.sources.Filter[] pushed = pushedFilters(pythonScan);
    if (pushed.length > 0 && builder.pushFilters(pushed).length > 0) {
      return null;
    }
    return builder.build();
  }

  /** The columns the filters pushed to `pythonScan` name. */
  private static List<String> pushedColumns(PythonScan pythonScan) throws IllegalAccessException {
    List<String> columns = new ArrayList<>();
    for (org.apache.spark.sql.sources.Filter pushed : pushedFilters(pythonScan)) {
      columns.addAll(List.of(pushed.references()));
    }
    return columns;
  }

  private static org.apache.spark.sql.sources.Filter[] pushedFilters(PythonScan pythonScan)
      throws IllegalAccessException {
    try {
      return (org.apache.spark.sql.sources.Filter[]) field(pythonScan, "supportedFilters");
    } catch (NoSuchFieldException before41) {
      return new org.apache.spark.sql.sources.Filter[0];
    }
  }

  private static void setField(Object owner, String name, Object value)
      throws NoSuchFieldException, IllegalAccessException {
    Field found = owner.getClass().getDeclaredField(name);
    found.setAccessible(true);
    found.set(owner, value);
  }

  private static Object field(Object owner, String name)
      throws NoSuchFieldException, IllegalAccessException {
    Field found = owner.getClass().getDeclaredField(name);
    found.setAccessible(true);
    return found.get(owner);
  }
}
