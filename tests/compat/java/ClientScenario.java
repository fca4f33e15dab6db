// Drives Kafka's own Java client (kafka-clients) through one compatibility scenario.
//
// Input: one JSON object on stdin.  Output: JSON lines on stdout, one per observation.
//   {"op":"roundtrip","bootstrap":"h:p","topic":"t","codec":"zstd",
//    "records":[{"partition":0,"key":B64|null,"value":B64|null,"timestamp":ms,
//                "headers":[["name",B64|null],...]}]}
//     -> {"delivered":[partition,offset]} per record, in order, then
//        {"consumed":{"partition":p,"offset":o,"key":..,"value":..,"timestamp":ms,"headers":[..]}}
//        per record read back by assign/seek, up to the end offsets.
//   {"op":"offsets_for_times","bootstrap":..,"topic":..,"partition":p,"timestamps":[ms,..]}
//     -> {"timestamp":ms,"offset":o|null} per query.
// Compiled and run by riverbed.testing.scenarios.java against the jars of
// riverbed.testing.kafka_reference (kafka-clients + Jackson come from there).
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Base64;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.Future;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.consumer.OffsetAndTimestamp;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.serialization.ByteArrayDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class ClientScenario {
    private static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        JsonNode in = JSON.readTree(System.in);
        switch (in.get("op").asText()) {
            case "roundtrip" -> roundtrip(in);
            case "offsets_for_times" -> offsetsForTimes(in);
            default -> throw new IllegalArgumentException("unknown op " + in.get("op"));
        }
        System.out.flush();
    }

    private static byte[] bytes(JsonNode n) {
        return n == null || n.isNull() ? null : Base64.getDecoder().decode(n.asText());
    }

    private static String b64(byte[] b) {
        return b == null ? null : Base64.getEncoder().encodeToString(b);
    }

    private static void emit(String name, Object value) throws Exception {
        ObjectNode o = JSON.createObjectNode();
        o.set(name, JSON.valueToTree(value));
        System.out.println(JSON.writeValueAsString(o));
    }

    private static Properties common(JsonNode in) {
        Properties p = new Properties();
        p.put("bootstrap.servers", in.get("bootstrap").asText());
        p.put("client.id", "riverbed-compat-java");
        return p;
    }

    private static KafkaConsumer<byte[], byte[]> consumer(JsonNode in) {
        Properties p = common(in);
        p.put("key.deserializer", ByteArrayDeserializer.class.getName());
        p.put("value.deserializer", ByteArrayDeserializer.class.getName());
        p.put("enable.auto.commit", "false");
        p.put("auto.offset.reset", "earliest");
        return new KafkaConsumer<>(p);
    }

    private static Map<TopicPartition, Long> positions(
            KafkaConsumer<byte[], byte[]> consumer, List<TopicPartition> tps) {
        Map<TopicPartition, Long> out = new HashMap<>();
        for (TopicPartition tp : tps) out.put(tp, consumer.position(tp, Duration.ofSeconds(5)));
        return out;
    }

    private static void roundtrip(JsonNode in) throws Exception {
        String topic = in.get("topic").asText();
        Properties p = common(in);
        p.put("key.serializer", ByteArraySerializer.class.getName());
        p.put("value.serializer", ByteArraySerializer.class.getName());
        p.put("compression.type", in.get("codec").asText());
        p.put("acks", "all");
        p.put("linger.ms", "5");
        List<Integer> partitions = new ArrayList<>();
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(p)) {
            List<Future<RecordMetadata>> futures = new ArrayList<>();
            for (JsonNode r : in.get("records")) {
                int partition = r.get("partition").asInt();
                if (!partitions.contains(partition)) partitions.add(partition);
                JsonNode ts = r.get("timestamp");
                ProducerRecord<byte[], byte[]> rec = new ProducerRecord<>(topic, partition,
                        ts == null || ts.isNull() ? null : ts.asLong(),
                        bytes(r.get("key")), bytes(r.get("value")));
                for (JsonNode h : r.get("headers")) {
                    rec.headers().add(h.get(0).asText(), bytes(h.get(1)));
                }
                futures.add(producer.send(rec));
            }
            producer.flush();
            for (Future<RecordMetadata> f : futures) {
                RecordMetadata m = f.get();
                emit("delivered", List.of(m.partition(), m.offset()));
            }
        }
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(in)) {
            List<TopicPartition> tps = new ArrayList<>();
            for (int partition : partitions) tps.add(new TopicPartition(topic, partition));
            consumer.assign(tps);
            Map<TopicPartition, Long> end = consumer.endOffsets(tps);
            for (TopicPartition tp : tps) consumer.seek(tp, 0);
            Map<TopicPartition, Long> position = new HashMap<>();
            long deadline = System.currentTimeMillis() + 30_000;
            int polls = 0;
            while (tps.stream().anyMatch(tp -> position.getOrDefault(tp, 0L) < end.get(tp))) {
                if (System.currentTimeMillis() > deadline) {
                    // What was read of what: a stalled partition is told apart from a slow start.
                    throw new RuntimeException("timeout after " + polls + " polls: end offsets "
                            + end + ", read up to " + position + ", consumer positions "
                            + positions(consumer, tps));
                }
                polls++;
                for (ConsumerRecord<byte[], byte[]> r : consumer.poll(Duration.ofMillis(500))) {
                    ObjectNode o = JSON.createObjectNode();
                    o.put("partition", r.partition());
                    o.put("offset", r.offset());
                    o.put("key", b64(r.key()));
                    o.put("value", b64(r.value()));
                    o.put("timestamp", r.timestamp());
                    ArrayNode hs = o.putArray("headers");
                    for (Header h : r.headers()) {
                        ArrayNode pair = hs.addArray();
                        pair.add(h.key());
                        pair.add(b64(h.value()));
                    }
                    emit("consumed", o);
                    position.put(new TopicPartition(r.topic(), r.partition()), r.offset() + 1);
                }
            }
        }
    }

    private static void offsetsForTimes(JsonNode in) throws Exception {
        TopicPartition tp = new TopicPartition(in.get("topic").asText(), in.get("partition").asInt());
        try (KafkaConsumer<byte[], byte[]> consumer = consumer(in)) {
            for (JsonNode t : in.get("timestamps")) {
                Map<TopicPartition, OffsetAndTimestamp> found =
                        consumer.offsetsForTimes(Map.of(tp, t.asLong()));
                OffsetAndTimestamp ot = found.get(tp);
                ObjectNode o = JSON.createObjectNode();
                o.put("timestamp", t.asLong());
                if (ot == null) o.putNull("offset"); else o.put("offset", ot.offset());
                System.out.println(JSON.writeValueAsString(o));
            }
        }
    }
}
