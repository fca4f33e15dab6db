// Kafka's Java client against a SASL_SSL listener: args BOOTSTRAP MECHANISM USER PASSWORD
// CA_PEM TOPIC.  Produces one record and prints "OK offset=N", or prints the exception's
// class and message and exits 3 when authentication fails.
import java.util.Properties;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

public class SecureClient {
    public static void main(String[] args) throws Exception {
        Properties p = new Properties();
        p.put("bootstrap.servers", args[0]);
        p.put("security.protocol", "SASL_SSL");
        p.put("sasl.mechanism", args[1]);
        String module = args[1].equals("PLAIN")
            ? "org.apache.kafka.common.security.plain.PlainLoginModule"
            : "org.apache.kafka.common.security.scram.ScramLoginModule";
        p.put("sasl.jaas.config", module + " required username=\"" + args[2]
            + "\" password=\"" + args[3] + "\";");
        p.put("ssl.truststore.type", "PEM");
        p.put("ssl.truststore.location", args[4]);
        p.put("key.serializer", StringSerializer.class.getName());
        p.put("value.serializer", StringSerializer.class.getName());
        p.put("max.block.ms", "15000");
        p.put("delivery.timeout.ms", "15000");
        p.put("request.timeout.ms", "10000");
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            RecordMetadata md = producer.send(new ProducerRecord<>(args[5], "k", "v")).get();
            System.out.println("OK offset=" + md.offset());
        } catch (Exception e) {
            Throwable cause = e.getCause() != null ? e.getCause() : e;
            System.out.println(cause.getClass().getName() + ": " + cause.getMessage());
            System.exit(3);
        }
    }
}
