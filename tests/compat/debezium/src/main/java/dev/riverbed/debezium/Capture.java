package dev.riverbed.debezium;

import io.debezium.engine.ChangeEvent;
import io.debezium.engine.DebeziumEngine;
import io.debezium.engine.format.Json;

import java.io.BufferedWriter;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.Future;

import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;

/**
 * Runs Debezium's embedded engine with the connector configured by a properties file and
 * appends every change event to an output file as one JSON line
 * {@code {"topic": "<prefix>.<schema>.<table>", "key": <key JSON or null>,
 * "value": <value JSON or null>}} (the converter's output spliced verbatim; a tombstone has
 * {@code "value": null}; topic names never need JSON escaping).
 *
 * <p>Usage: {@code Capture <engine.properties> <out.jsonl> [<bootstrap servers>]}.  With a
 * bootstrap server, events go instead to a Kafka topic named by the event's destination
 * (key and value as the converter's strings; an idempotent producer with acks=all, every
 * batch flushed and acknowledged before it is marked processed), as Debezium Server's Kafka
 * sink does; the file then stays empty.  Lines are written per batch
 * in the engine's order and flushed before the batch is marked processed.  When the task
 * has started, the file {@code <out.jsonl>.started} is created.  SIGTERM closes the engine
 * (exit 0); an engine failure prints its cause to stderr and exits 1.
 */
public final class Capture {
    private Capture() {}

    public static void main(String[] args) throws Exception {
        if (args.length != 2 && args.length != 3) {
            System.err.println("usage: Capture <engine.properties> <out.jsonl> [<bootstrap>]");
            System.exit(2);
        }
        Properties props = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            props.load(in);
        }
        Path out = Path.of(args[1]);
        Path started = Path.of(args[1] + ".started");
        BufferedWriter writer = Files.newBufferedWriter(
                out, StandardCharsets.UTF_8, StandardOpenOption.CREATE, StandardOpenOption.APPEND);
        KafkaProducer<String, String> producer = null;
        if (args.length == 3) {
            Properties pp = new Properties();
            pp.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, args[2]);
            pp.put(ProducerConfig.ACKS_CONFIG, "all");
            pp.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
            pp.put(ProducerConfig.LINGER_MS_CONFIG, "5");
            producer = new KafkaProducer<>(pp, new StringSerializer(), new StringSerializer());
        }
        final KafkaProducer<String, String> kafka = producer;
        CountDownLatch done = new CountDownLatch(1);
        int[] exit = {0};
        DebeziumEngine<ChangeEvent<String, String>> engine = DebeziumEngine.create(Json.class)
                .using(props)
                .using(new DebeziumEngine.ConnectorCallback() {
                    @Override
                    public void taskStarted() {
                        try {
                            Files.writeString(started, "started\n");
                        } catch (IOException e) {
                            throw new RuntimeException(e);
                        }
                    }
                })
                .using((success, message, error) -> {
                    if (!success) {
                        System.err.println("engine failed: " + message);
                        if (error != null) {
                            error.printStackTrace();
                        }
                        exit[0] = 1;
                    }
                    done.countDown();
                })
                .notifying((List<ChangeEvent<String, String>> records,
                            DebeziumEngine.RecordCommitter<ChangeEvent<String, String>> committer) -> {
                    if (kafka != null) {
                        List<Future<?>> sent = new ArrayList<>();
                        for (ChangeEvent<String, String> record : records) {
                            sent.add(kafka.send(new ProducerRecord<>(
                                    record.destination(), record.key(), record.value())));
                        }
                        kafka.flush();
                        for (Future<?> future : sent) {
                            try {
                                future.get();
                            } catch (java.util.concurrent.ExecutionException e) {
                                throw new RuntimeException(e.getCause());
                            }
                        }
                    } else synchronized (writer) {
                        try {
                            for (ChangeEvent<String, String> record : records) {
                                writer.write("{\"topic\":\"" + record.destination()
                                        + "\",\"key\":" + record.key() + ",\"value\":"
                                        + record.value() + "}\n");
                            }
                            writer.flush();
                        } catch (IOException e) {
                            throw new UncheckedIOException(e);
                        }
                    }
                    for (ChangeEvent<String, String> record : records) {
                        committer.markProcessed(record);
                    }
                    committer.markBatchFinished();
                })
                .build();
        ExecutorService executor = Executors.newSingleThreadExecutor();
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                engine.close();
                done.await();
                synchronized (writer) {
                    writer.flush();
                }
            } catch (Exception e) {
                e.printStackTrace();
            }
        }));
        executor.execute(engine);
        done.await();
        executor.shutdown();
        synchronized (writer) {
            writer.close();
        }
        System.exit(exit[0]);
    }
}
