// Kafka's Java producer (transaction version 2 against a 4.x cluster) running transactions
// for test_txn_kafka_reference.py.  Args: bootstrap topic transactional.id group.
// One transaction that also commits consumer offsets (AddOffsetsToTxn), then one aborted.
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.consumer.ConsumerGroupMetadata;
import org.apache.kafka.clients.consumer.OffsetAndMetadata;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public class TxnScenario {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, args[2]);
        props.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, 45000);
        props.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        props.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, ByteArraySerializer.class);
        try (KafkaProducer<byte[], byte[]> producer = new KafkaProducer<>(props)) {
            producer.initTransactions();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(args[1], 0, null, "v".getBytes())).get();
            producer.sendOffsetsToTransaction(
                Map.of(new TopicPartition(args[1], 0), new OffsetAndMetadata(1)),
                new ConsumerGroupMetadata(args[3]));
            producer.commitTransaction();
            producer.beginTransaction();
            producer.send(new ProducerRecord<>(args[1], 0, null, "w".getBytes())).get();
            producer.abortTransaction();
        }
        System.out.println("{\"done\": true}");
    }
}
