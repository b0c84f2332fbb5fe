package io.sparkps.spark.yarn;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.yarn.api.records.NodeLabel;
import org.apache.hadoop.yarn.api.records.NodeReport;
import org.apache.hadoop.yarn.api.records.NodeState;
import org.apache.hadoop.yarn.api.records.QueueInfo;
import org.apache.hadoop.yarn.api.records.QueueState;
import org.apache.hadoop.yarn.api.records.Resource;
import org.apache.hadoop.yarn.client.api.YarnClient;

/**
 * Checks a submission against the cluster with {@code YarnClient} before anything is submitted:
 * the queue exists and runs, the node label exists, one executor container fits the cluster's
 * maximum allocation, and the cluster (the labelled nodes, with a label) can hold every executor
 * at once (the application master comes on top). Each failure is one
 * {@link IllegalArgumentException} naming the value asked and what the cluster offers.
 */
final class YarnPreflight {
  private YarnPreflight() {}

  static void check(Configuration conf, YarnSubmitter s) {
    YarnPlan plan = s.plan();
    try (YarnClient yarn = YarnClient.createYarnClient()) {
      yarn.init(conf);
      yarn.start();
      if (s.queue() != null) {
        QueueInfo queue = yarn.getQueueInfo(s.queue());
        if (queue == null) {
          Set<String> names = new TreeSet<>();
          yarn.getAllQueues().forEach(q -> names.add(q.getQueueName()));
          throw new IllegalArgumentException("YARN queue '" + s.queue() + "' does not exist; the cluster has "
              + names + ": set the queue to one of them");
        }
        if (queue.getQueueState() != QueueState.RUNNING) {
          throw new IllegalArgumentException("YARN queue '" + s.queue() + "' is " + queue.getQueueState()
              + ": it accepts no applications; use a running queue");
        }
      }
      if (plan.nodeLabel() != null) {
        Set<String> labels = new TreeSet<>();
        for (NodeLabel l : yarn.getClusterNodeLabels()) {
          labels.add(l.getName());
        }
        if (!labels.contains(plan.nodeLabel())) {
          throw new IllegalArgumentException("node label '" + plan.nodeLabel() + "' does not exist on the cluster; "
              + "it has " + (labels.isEmpty() ? "no labels" : labels) + ": fix the TaskSpec's nodeLabel");
        }
      }
      Resource max = yarn.createApplication().getNewApplicationResponse().getMaximumResourceCapability();
      if (plan.containerMb() > max.getMemorySize() || plan.executorCores() > max.getVirtualCores()) {
        throw new IllegalArgumentException("one executor container needs " + plan.containerMb() + " MiB and "
            + plan.executorCores() + " vcores, but the cluster's largest container is " + max.getMemorySize()
            + " MiB and " + max.getVirtualCores() + " vcores (yarn.scheduler.maximum-allocation-*): ask for less");
      }
      checkCapacity(yarn.getNodeReports(NodeState.RUNNING), plan);
    } catch (java.io.IOException | org.apache.hadoop.yarn.exceptions.YarnException e) {
      throw new IllegalStateException("could not ask YARN about the cluster: " + e.getMessage(), e);
    }
  }

  private static void checkCapacity(List<NodeReport> nodes, YarnPlan plan) {
    int fit = 0;
    List<String> offered = new ArrayList<>();
    for (NodeReport n : nodes) {
      boolean labelled = n.getNodeLabels() != null && n.getNodeLabels().contains(plan.nodeLabel());
      if (plan.nodeLabel() == null ? n.getNodeLabels() != null && !n.getNodeLabels().isEmpty() : !labelled) {
        continue;
      }
      long freeMb = n.getCapability().getMemorySize() - (n.getUsed() == null ? 0 : n.getUsed().getMemorySize());
      int freeCores = n.getCapability().getVirtualCores() - (n.getUsed() == null ? 0 : n.getUsed().getVirtualCores());
      fit += (int) Math.min(freeMb / plan.containerMb(), freeCores / plan.executorCores());
      offered.add(n.getNodeId() + ": " + freeMb + " MiB, " + freeCores + " vcores free");
    }
    if (fit < plan.executors()) {
      throw new IllegalArgumentException("the run needs " + plan.executors() + " executors of " + plan.containerMb()
          + " MiB and " + plan.executorCores() + " vcores at once (barrier mode starts all roles together), but the "
          + (plan.nodeLabel() == null ? "unlabelled" : "'" + plan.nodeLabel() + "'") + " nodes hold " + fit
          + " (" + offered + "): ask for smaller or fewer tasks, or add nodes");
    }
  }
}
