package dev.riverbed.share;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.AlterShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.DeleteShareGroupOffsetsResult;
import org.apache.kafka.clients.admin.ListShareGroupOffsetsSpec;
import org.apache.kafka.clients.admin.SharePartitionOffsetInfo;
import org.apache.kafka.common.KafkaFuture;
import org.apache.kafka.common.TopicPartition;

/**
 * Kafka's Java Admin share group offsets calls, one scenario, one line per step on stdout:
 * {@code step<TAB>observation}.  Arguments: bootstrap servers, group id, topic (two
 * partitions, five records each), an unknown topic's name, an unknown group's id.  An
 * observation is "ok" or the failure's exception class (causes unwrapped), or for a
 * listing the partitions in name order as {@code topic-partition=start/epoch/lag}
 * ("-" for an absent epoch or lag).  Exits 0 once every step ran; a step that throws
 * anything else ends it with a stack trace (exit 1).
 */
public final class ShareAdminApp {
    private ShareAdminApp() {}

    public static void main(String[] args) throws Exception {
        String bootstrap = args[0], group = args[1], topic = args[2];
        String missing = args[3], noGroup = args[4];
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        props.put(AdminClientConfig.DEFAULT_API_TIMEOUT_MS_CONFIG, "60000");
        TopicPartition p0 = new TopicPartition(topic, 0), p1 = new TopicPartition(topic, 1);
        TopicPartition gone = new TopicPartition(missing, 0);
        try (Admin admin = Admin.create(props)) {
            AlterShareGroupOffsetsResult altered =
                admin.alterShareGroupOffsets(group, Map.of(p0, 2L, p1, 4L));
            print("alter " + topic + "-0", outcome(altered.partitionResult(p0)));
            print("alter " + topic + "-1", outcome(altered.partitionResult(p1)));
            print("alter all", outcome(altered.all()));
            print("list all", list(admin, group, null));
            print("list named", list(admin, group, List.of(p1, gone)));
            AlterShareGroupOffsetsResult bad = admin.alterShareGroupOffsets(group, Map.of(gone, 0L));
            print("alter unknown topic", outcome(bad.partitionResult(gone)));
            DeleteShareGroupOffsetsResult deleted =
                admin.deleteShareGroupOffsets(group, Set.of(topic, missing));
            print("delete " + topic, outcome(deleted.topicResult(topic)));
            print("delete unknown topic", outcome(deleted.topicResult(missing)));
            print("list after delete", list(admin, group, null));
            print("list named after delete", list(admin, group, List.of(p0)));
            print(
                "delete unknown group",
                outcome(admin.deleteShareGroupOffsets(noGroup, Set.of(topic)).all()));
            print("list unknown group", list(admin, noGroup, null));
        }
    }

    private static void print(String step, String observation) {
        System.out.println(step + "\t" + observation);
        System.out.flush();
    }

    private static String outcome(KafkaFuture<?> future) throws InterruptedException {
        try {
            future.get(90, TimeUnit.SECONDS);
            return "ok";
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            return cause.getClass().getSimpleName();
        } catch (java.util.concurrent.TimeoutException e) {
            return "TimeoutException";
        }
    }

    private static String list(Admin admin, String group, List<TopicPartition> partitions)
            throws InterruptedException {
        ListShareGroupOffsetsSpec spec = new ListShareGroupOffsetsSpec();
        if (partitions != null) {
            spec.topicPartitions(partitions);
        }
        KafkaFuture<Map<TopicPartition, SharePartitionOffsetInfo>> future =
            admin.listShareGroupOffsets(Map.of(group, spec)).partitionsToOffsetInfo(group);
        Map<TopicPartition, SharePartitionOffsetInfo> found;
        try {
            found = future.get(90, TimeUnit.SECONDS);
        } catch (ExecutionException e) {
            Throwable cause = e.getCause() == null ? e : e.getCause();
            return cause.getClass().getSimpleName();
        } catch (java.util.concurrent.TimeoutException e) {
            return "TimeoutException";
        }
        Map<String, String> sorted = new TreeMap<>();
        found.forEach((tp, info) -> sorted.put(tp.toString(), describe(info)));
        List<String> parts = new ArrayList<>();
        sorted.forEach((tp, info) -> parts.add(tp + "=" + info));
        return parts.isEmpty() ? "(none)" : String.join(" ", parts);
    }

    private static String describe(SharePartitionOffsetInfo info) {
        if (info == null) {
            return "null";
        }
        return info.startOffset()
            + "/" + info.leaderEpoch().map(String::valueOf).orElse("-")
            + "/" + info.lag().map(String::valueOf).orElse("-");
    }
}
