package io.sparkps.spark;

import io.sparkps.spark.coord.Registry;
import io.sparkps.spark.coord.proto.HeldResource;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What Spark gave one registered task: cores and custom resources. With task resource profiles a
 * ps or evaluator task holds no GPU and its own cores, a worker its executor's GPUs (see {@code
 * docs/configuration.md}).
 *
 * @param role the task's role
 * @param index its index within the role
 * @param executor the Spark executor it runs in
 * @param cpus the cores Spark gave the task (0 when it did not say)
 * @param resources each custom resource the task holds (such as {@code gpu}) and its addresses
 */
public record TaskResources(Role role, int index, String executor, int cpus, Map<String, List<String>> resources) {
  static List<TaskResources> of(Registry registry) {
    return registry.registrations().stream().map(r -> {
      Map<String, List<String>> held = new LinkedHashMap<>();
      for (HeldResource h : r.getResourcesList()) {
        held.put(h.getName(), List.copyOf(h.getAddressesList()));
      }
      return new TaskResources(Role.valueOf(r.getRole().name()), r.getIndex(), r.getExecutorId(), r.getCpus(),
          Map.copyOf(held));
    }).toList();
  }

  @Override
  public String toString() {
    return role.name().toLowerCase() + " " + index + " on executor " + executor + ": " + cpus
        + (cpus == 1 ? " core" : " cores") + (resources.isEmpty() ? ", no custom resource" : ", " + resources);
  }
}
