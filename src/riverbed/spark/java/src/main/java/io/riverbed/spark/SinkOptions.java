package io.riverbed.spark;

import java.io.Serializable;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;

/**
 * The options of a {@code riverbed-jvm} write: {@code topic} (overrides a {@code topic}
 * column), {@code deliveryGuarantee} (only {@code at_least_once}), and {@code kafka.*}
 * producer settings ({@code kafka.bootstrap.servers} required; serializers and
 * {@code transactional.id} refused).  Bad values raise a one-line
 * {@link IllegalArgumentException}.  Immutable and serializable (sent to the executors).
 */
final class SinkOptions implements Serializable {
  private static final long serialVersionUID = 1L;

  private static final Set<String> OWN = Set.of("topic", "deliveryguarantee");
  private static final Set<String> SPARK_OWNED = Set.of("checkpointlocation", "path", "queryname");
  private static final Set<String> REFUSED_KAFKA =
      Set.of("key.serializer", "value.serializer", "transactional.id");

  final TreeMap<String, String> kafkaParams = new TreeMap<>();
  final String topic;

  private SinkOptions(Map<String, String> options) {
    String topicOption = null;
    for (Map.Entry<String, String> e : options.entrySet()) {
      String key = e.getKey().toLowerCase(java.util.Locale.ROOT);
      if (key.startsWith("kafka.")) {
        String name = key.substring("kafka.".length());
        if (REFUSED_KAFKA.contains(name)) {
          throw SourceOptions.bad(
              "option '"
                  + e.getKey()
                  + "' is not supported: the riverbed-jvm sink writes keys and values as bytes"
                  + " with an idempotent, non-transactional producer");
        }
        kafkaParams.put(name, e.getValue());
      } else if (key.equals("topic")) {
        topicOption = e.getValue() == null || e.getValue().isBlank() ? null : e.getValue().strip();
      } else if (key.equals("deliveryguarantee")) {
        String v = e.getValue().strip().toLowerCase(java.util.Locale.ROOT);
        if (!v.equals("at_least_once")) {
          throw SourceOptions.bad(
              "option 'deliveryGuarantee' must be at_least_once for format 'riverbed-jvm', got '"
                  + e.getValue()
                  + "' (exactly_once: use format 'riverbed')");
        }
      } else if (!SPARK_OWNED.contains(key)) {
        throw SourceOptions.bad(
            "unknown option '"
                + e.getKey()
                + "' for writing format 'riverbed-jvm' (known: deliveryGuarantee, kafka.*, topic)");
      }
    }
    String servers = kafkaParams.get("bootstrap.servers");
    if (servers == null || servers.isBlank()) {
      throw SourceOptions.bad("option 'kafka.bootstrap.servers' is required");
    }
    topic = topicOption;
  }

  static SinkOptions parse(Map<String, String> options) {
    return new SinkOptions(options);
  }

  /** The producer's settings: idempotent, acks=all, then every kafka.* option. */
  Properties producerConfig() {
    Properties props = new Properties();
    props.put("enable.idempotence", "true");
    props.put("acks", "all");
    props.put("linger.ms", "5");
    props.put("client.id", "riverbed-jvm-sink");
    props.putAll(kafkaParams);
    String bytes = "org.apache.kafka.common.serialization.ByteArraySerializer";
    props.put("key.serializer", bytes);
    props.put("value.serializer", bytes);
    return props;
  }
}
