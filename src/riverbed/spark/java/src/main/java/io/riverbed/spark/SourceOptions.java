package io.riverbed.spark;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.Serializable;
import java.util.Iterator;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;
import org.apache.kafka.common.TopicPartition;

/**
 * The options of {@code format("riverbed-jvm")}: the batch options of the Python
 * {@code riverbed} source (riverbed/spark/options.py), with the same names, meaning and
 * error messages.  Spark hands them lower-cased; every {@code kafka.*} option except the
 * forbidden ones goes to the Kafka consumer.  Bad values raise a one-line
 * {@link IllegalArgumentException} at {@code load()}.
 *
 * <p>Offsets specs: {@code earliest}, {@code latest}, or JSON
 * {@code {"t":{"0":23,"1":-2}}} (-2 earliest, -1 latest); timestamps (epoch ms) by
 * {@code startingTimestamp}/{@code endingTimestamp} or per partition with
 * {@code startingOffsetsByTimestamp}/{@code endingOffsetsByTimestamp}.  Immutable and
 * serializable (it travels to the executors inside the reader factory).
 */
final class SourceOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  static final long EARLIEST = -2;
  static final long LATEST = -1;
  static final int DEFAULT_POLL_TIMEOUT_MS = 30_000;

  private static final Set<String> OWN =
      Set.of(
          "subscribe",
          "subscribepattern",
          "assign",
          "startingoffsets",
          "endingoffsets",
          "startingtimestamp",
          "endingtimestamp",
          "startingoffsetsbytimestamp",
          "endingoffsetsbytimestamp",
          "startingoffsetsbytimestampstrategy",
          "maxoffsetspertrigger",
          "failondataloss",
          "includeheaders",
          "kafkaconsumer.polltimeoutms");
  private static final Set<String> SPARK_OWNED = Set.of("checkpointlocation", "path", "queryname");
  private static final Set<String> FORBIDDEN_KAFKA =
      Set.of("auto.offset.reset", "enable.auto.commit", "enable.auto.offset.store");
  private static final Set<String> RAW_BYTES = Set.of("key.deserializer", "value.deserializer");

  /** What an offsets option says: a word, per-partition offsets or timestamps. */
  enum Kind {
    EARLIEST,
    LATEST,
    OFFSETS,
    GLOBAL_TIMESTAMP,
    PARTITION_TIMESTAMPS
  }

  static final class Spec implements Serializable {
    private static final long serialVersionUID = 1L;
    final Kind kind;
    final long timestamp;
    /** topic -> partition -> offset or timestamp (OFFSETS / PARTITION_TIMESTAMPS). */
    final TreeMap<String, TreeMap<Integer, Long>> values;

    Spec(Kind kind, long timestamp, TreeMap<String, TreeMap<Integer, Long>> values) {
      this.kind = kind;
      this.timestamp = timestamp;
      this.values = values;
    }
  }

  final TreeMap<String, String> kafkaParams;
  final String subscribeKind; // subscribe | subscribepattern | assign
  final String[] topics;
  final String pattern;
  final TreeMap<String, TreeSet<Integer>> assigned;
  final Spec starting;
  final Spec ending;
  final boolean timestampStrategyLatest;
  final boolean failOnDataLoss;
  final boolean includeHeaders;
  final int pollTimeoutMs;
  /** Streaming: at most this many records per micro-batch (all partitions), or null. */
  final Long maxOffsetsPerTrigger;
  private final boolean startingGiven;
  private final boolean endingGiven;

  private SourceOptions(Map<String, String> options) {
    TreeMap<String, String> kafka = new TreeMap<>();
    TreeMap<String, String> own = new TreeMap<>();
    for (Map.Entry<String, String> e : options.entrySet()) {
      String key = e.getKey().toLowerCase(java.util.Locale.ROOT);
      if (key.startsWith("kafka.")) {
        String name = key.substring("kafka.".length());
        if (FORBIDDEN_KAFKA.contains(name)) {
          throw bad(
              "option '"
                  + e.getKey()
                  + "' is not supported: the riverbed source tracks offsets itself (use"
                  + " startingOffsets / failOnDataLoss instead)");
        }
        if (RAW_BYTES.contains(name)) {
          throw bad(
              "option '"
                  + e.getKey()
                  + "' is not supported: the riverbed-jvm source reads keys and values as"
                  + " bytes (cast or decode them in Spark)");
        }
        kafka.put(name, e.getValue());
      } else if (OWN.contains(key)) {
        own.put(key, e.getValue());
      } else if (!SPARK_OWNED.contains(key)) {
        TreeSet<String> known = new TreeSet<>(OWN);
        known.add("kafka.*");
        throw bad(
            "unknown option '"
                + e.getKey()
                + "' for format 'riverbed-jvm' (known: "
                + String.join(", ", known)
                + ")");
      }
    }
    String servers = kafka.get("bootstrap.servers");
    if (servers == null || servers.isBlank()) {
      throw bad("option 'kafka.bootstrap.servers' is required");
    }
    kafkaParams = kafka;

    java.util.List<String> given = new java.util.ArrayList<>();
    for (String k : new String[] {"subscribe", "subscribepattern", "assign"}) {
      if (own.containsKey(k)) {
        given.add(k);
      }
    }
    if (given.size() != 1) {
      throw bad(
          "exactly one of 'subscribe', 'subscribePattern' or 'assign' is required"
              + (given.isEmpty() ? "" : ", got " + given));
    }
    subscribeKind = given.get(0);
    String value = own.get(subscribeKind);
    String[] topicList = null;
    String regex = null;
    TreeMap<String, TreeSet<Integer>> assign = null;
    switch (subscribeKind) {
      case "subscribe":
        topicList =
            java.util.Arrays.stream(value.split(","))
                .map(String::strip)
                .filter(s -> !s.isEmpty())
                .toArray(String[]::new);
        if (topicList.length == 0) {
          throw bad("option 'subscribe' names no topic: '" + value + "'");
        }
        break;
      case "subscribepattern":
        try {
          Pattern.compile(value);
        } catch (PatternSyntaxException ex) {
          throw bad(
              "option 'subscribePattern' '" + value + "' is not a regex: " + ex.getDescription());
        }
        regex = value;
        break;
      default:
        assign = parseAssign(value);
    }
    topics = topicList;
    pattern = regex;
    assigned = assign;

    Spec start = offsetSpec(own, "starting");
    Spec end = offsetSpec(own, "ending");
    endingGiven = end != null;
    startingGiven = start != null;
    starting = start == null ? new Spec(Kind.EARLIEST, 0, null) : start;
    ending = end == null ? new Spec(Kind.LATEST, 0, null) : end;
    String strategy =
        own.getOrDefault("startingoffsetsbytimestampstrategy", "error")
            .strip()
            .toLowerCase(java.util.Locale.ROOT);
    if (!strategy.equals("error") && !strategy.equals("latest")) {
      throw bad(
          "option 'startingOffsetsByTimestampStrategy' must be error or latest, got '"
              + strategy
              + "'");
    }
    timestampStrategyLatest = strategy.equals("latest");
    maxOffsetsPerTrigger = integer(own, "maxoffsetspertrigger", 1); // batch reads ignore it
    failOnDataLoss = bool(own, "failondataloss", true);
    includeHeaders = bool(own, "includeheaders", false);
    Long poll = integer(own, "kafkaconsumer.polltimeoutms", 1);
    pollTimeoutMs = poll == null ? DEFAULT_POLL_TIMEOUT_MS : (int) Math.min(poll, Integer.MAX_VALUE);
  }

  /**
   * The checks of a batch read (at planning: the table does not know the kind of query).
   */
  void checkBatch() {
    if (starting.kind == Kind.LATEST || contains(starting, LATEST)) {
      throw bad("startingOffsets 'latest' (-1) is not valid in batch queries");
    }
    if (ending.kind == Kind.EARLIEST || contains(ending, EARLIEST)) {
      throw bad("endingOffsets 'earliest' (-2) is not valid in batch queries");
    }
  }

  /**
   * The checks of a streaming read; its start spec (default {@code latest}, like the
   * Python and Kafka sources).
   */
  Spec streamStart() {
    if (endingGiven) {
      throw bad("endingOffsets/endingTimestamp are not valid in streaming queries");
    }
    return startingGiven ? starting : new Spec(Kind.LATEST, 0, null);
  }

  /** Parse and check {@code options}; raises IllegalArgumentException naming the bad one. */
  static SourceOptions parse(Map<String, String> options) {
    return new SourceOptions(options);
  }

  static IllegalArgumentException bad(String message) {
    return new IllegalArgumentException(message);
  }

  private static boolean contains(Spec spec, long sentinel) {
    if (spec.kind != Kind.OFFSETS) {
      return false;
    }
    for (TreeMap<Integer, Long> parts : spec.values.values()) {
      if (parts.containsValue(sentinel)) {
        return true;
      }
    }
    return false;
  }

  private static boolean bool(Map<String, String> own, String key, boolean dflt) {
    String v = own.get(key);
    if (v == null) {
      return dflt;
    }
    String w = v.strip().toLowerCase(java.util.Locale.ROOT);
    if (w.equals("true") || w.equals("false")) {
      return w.equals("true");
    }
    throw bad("option '" + key + "' must be true or false, got '" + v + "'");
  }

  private static Long integer(Map<String, String> own, String key, long minimum) {
    String v = own.get(key);
    if (v == null) {
      return null;
    }
    long n;
    try {
      n = Long.parseLong(v.strip());
    } catch (NumberFormatException ex) {
      throw bad("option '" + key + "' must be an integer, got '" + v + "'");
    }
    if (n < minimum) {
      throw bad("option '" + key + "' must be >= " + minimum + ", got " + n);
    }
    return n;
  }

  private static Spec offsetSpec(Map<String, String> own, String prefix) {
    Long ts = integer(own, prefix + "timestamp", 0);
    if (ts != null) {
      return new Spec(Kind.GLOBAL_TIMESTAMP, ts, null);
    }
    String byTs = own.get(prefix + "offsetsbytimestamp");
    if (byTs != null) {
      String option = prefix + "OffsetsByTimestamp";
      TreeMap<String, TreeMap<Integer, Long>> parsed = offsetsJson(byTs, option);
      for (Map.Entry<String, TreeMap<Integer, Long>> t : parsed.entrySet()) {
        for (Map.Entry<Integer, Long> p : t.getValue().entrySet()) {
          if (p.getValue() < 0) {
            throw bad(option + ": timestamp of " + t.getKey() + "-" + p.getKey() + " is negative");
          }
        }
      }
      return new Spec(Kind.PARTITION_TIMESTAMPS, 0, parsed);
    }
    String value = own.get(prefix + "offsets");
    if (value == null) {
      return null;
    }
    String word = value.strip().toLowerCase(java.util.Locale.ROOT);
    if (word.equals("earliest")) {
      return new Spec(Kind.EARLIEST, 0, null);
    }
    if (word.equals("latest")) {
      return new Spec(Kind.LATEST, 0, null);
    }
    return new Spec(Kind.OFFSETS, 0, offsetsJson(value, prefix + "Offsets"));
  }

  private static JsonNode json(String text, String option, String expected) {
    try {
      return new ObjectMapper().readTree(text);
    } catch (java.io.IOException ex) {
      String msg = ex.getMessage() == null ? "" : ex.getMessage().split("\n")[0];
      throw bad(option + ": malformed JSON '" + text + "' (" + msg + "); expected " + expected);
    }
  }

  static TreeMap<String, TreeMap<Integer, Long>> offsetsJson(String text, String option) {
    JsonNode root =
        json(
            text,
            option,
            "'earliest', 'latest' or per-partition offsets like {\"topic\":{\"0\":23,\"1\":-2}}");
    if (root == null || !root.isObject()) {
      throw bad(option + ": expected a JSON object of topics, got " + text);
    }
    TreeMap<String, TreeMap<Integer, Long>> out = new TreeMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> t = it.next();
      if (!t.getValue().isObject()) {
        throw bad(
            option
                + ": topic '"
                + t.getKey()
                + "' must map to an object of partition -> offset, got "
                + t.getValue());
      }
      TreeMap<Integer, Long> parts = new TreeMap<>();
      for (Iterator<Map.Entry<String, JsonNode>> ps = t.getValue().fields(); ps.hasNext(); ) {
        Map.Entry<String, JsonNode> p = ps.next();
        int number;
        try {
          number = Integer.parseInt(p.getKey().strip());
        } catch (NumberFormatException ex) {
          throw bad(
              option
                  + ": partition '"
                  + p.getKey()
                  + "' of topic '"
                  + t.getKey()
                  + "' is not an integer");
        }
        if (!p.getValue().isIntegralNumber()) {
          throw bad(
              option
                  + ": offset "
                  + p.getValue()
                  + " of "
                  + t.getKey()
                  + "-"
                  + number
                  + " is not an integer");
        }
        long offset = p.getValue().asLong();
        if (number < 0 || offset < EARLIEST) {
          throw bad(
              option + ": invalid partition/offset " + t.getKey() + "-" + number + "=" + offset);
        }
        parts.put(number, offset);
      }
      out.put(t.getKey(), parts);
    }
    return out;
  }

  private static TreeMap<String, TreeSet<Integer>> parseAssign(String value) {
    JsonNode root = json(value, "assign", "like {\"topic\":[0,1]}");
    String shape = "assign: expected {\"topic\":[0,1]}, got '" + value + "'";
    if (root == null || !root.isObject()) {
      throw bad(shape);
    }
    TreeMap<String, TreeSet<Integer>> out = new TreeMap<>();
    for (Iterator<Map.Entry<String, JsonNode>> it = root.fields(); it.hasNext(); ) {
      Map.Entry<String, JsonNode> t = it.next();
      if (!t.getValue().isArray()) {
        throw bad(shape);
      }
      for (JsonNode p : t.getValue()) {
        if (!p.isIntegralNumber() || p.asLong() < 0) {
          throw bad(shape);
        }
        out.computeIfAbsent(t.getKey(), k -> new TreeSet<>()).add(p.asInt());
      }
    }
    if (out.isEmpty()) {
      throw bad("assign: names no partition: '" + value + "'");
    }
    return out;
  }

  /** The consumer's settings: the reader's defaults, then every kafka.* option. */
  java.util.Properties consumerConfig() {
    java.util.Properties props = new java.util.Properties();
    props.put("enable.auto.commit", "false");
    props.put("auto.offset.reset", "none");
    // Bulk reads: large fetches, many records per poll.
    props.put("max.poll.records", "20000");
    props.put("fetch.max.bytes", String.valueOf(64 << 20));
    props.put("max.partition.fetch.bytes", String.valueOf(16 << 20));
    props.put("receive.buffer.bytes", String.valueOf(1 << 20));
    // Ranges end at data already written: a fetch that finds nothing (the prefetch past a
    // range's end) should not hold a pooled consumer's connection for the default 500 ms.
    props.put("fetch.max.wait.ms", "10");
    props.put("check.crcs", "true");
    props.put("client.id", "riverbed-jvm");
    props.putAll(kafkaParams);
    String views = "org.apache.kafka.common.serialization.ByteBufferDeserializer";
    props.put("key.deserializer", views);
    props.put("value.deserializer", views);
    return props;
  }

  static TopicPartition tp(String topic, int partition) {
    return new TopicPartition(topic, partition);
  }
}
