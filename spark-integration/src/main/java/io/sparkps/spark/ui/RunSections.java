package io.sparkps.spark.ui;

import io.sparkps.spark.ui.SparkPsEvents.RunUpdate;
import io.sparkps.spark.ui.SparkPsEvents.StepRow;
import java.util.List;
import java.util.Locale;

/** The sections of one run on the SparkPS tab: headline, curves, roles, shards, attempts, recoveries. */
final class RunSections {
  private RunSections() {}

  static String of(RunUpdate r, List<StepRow> steps) {
    StringBuilder b = new StringBuilder(8_192);
    b.append("<h4 id=\"sparkps-run\">Run ").append(Html.escape(r.runId)).append(" ").append(SparkPsPage.badge(r.status))
        .append("</h4><p>").append(Html.escape(r.name)).append(": ").append(r.numWorkers).append(r.numWorkers == 1
            ? " worker, " : " workers, ").append(r.numPs).append(" ps").append(r.evaluator ? ", an evaluator" : "")
        .append("; ").append(SparkPsPage.isDone(r.status) ? "ran " : "running for ")
        .append(SparkPsPage.duration(r.elapsedMillis)).append("; ").append(steps.size()).append(" records");
    if (r.recordsNotKept > 0) {
      b.append(" (").append(r.recordsNotKept).append(" steps not kept)");
    }
    b.append(".</p>");
    if (r.cause != null) {
      b.append("<p class=\"cause\" id=\"sparkps-cause\">").append(Html.escape(r.cause)).append("</p>");
    }
    b.append(SparkPsPage.charts(steps));
    b.append("<h4>Roles</h4><table class=\"table table-bordered table-sm\" id=\"sparkps-roles\"><thead><tr><th>Role</th>"
        + "<th>Index</th><th>Host</th><th>Executor</th><th>Attempt</th><th>Step</th><th>Last heard</th><th>State</th>"
        + "</tr></thead><tbody>");
    for (SparkPsEvents.RoleRow x : r.roles) {
      b.append("<tr><td>").append(Html.escape(x.role.toLowerCase(Locale.ROOT))).append("</td><td>").append(x.index)
          .append("</td><td>").append(Html.escape(x.host)).append("</td><td>").append(Html.escape(x.executor))
          .append("</td><td>").append(x.attempt).append("</td><td>").append(x.step).append("</td><td>")
          .append(SparkPsPage.duration(x.heardMillisAgo)).append(" ago</td><td>").append(Html.escape(x.state))
          .append("</td></tr>");
    }
    b.append("</tbody></table><h4>Parameter servers</h4><table class=\"table table-bordered table-sm\" "
        + "id=\"sparkps-shards\"><thead><tr><th>PS</th><th>Address</th><th>Variables</th><th>Parameter bytes</th>"
        + "<th>Version</th><th>Recoveries</th></tr></thead><tbody>");
    for (SparkPsEvents.ShardRow s : r.shards) {
      b.append("<tr><td>").append(s.index).append("</td><td>").append(Html.escape(s.address)).append("</td><td>")
          .append(s.variables).append("</td><td>").append(String.format(Locale.ROOT, "%,d", s.parameterBytes))
          .append("</td><td>").append(s.version).append("</td><td>").append(s.recoveries).append("</td></tr>");
    }
    b.append("</tbody></table><h4>Stage attempts</h4><table class=\"table table-bordered table-sm\" "
        + "id=\"sparkps-attempts\"><thead><tr><th>Attempt</th><th>Ended by</th></tr></thead><tbody>");
    for (SparkPsEvents.AttemptRow a : r.attempts) {
      b.append("<tr><td>").append(a.attempt).append("</td><td>").append(a.endedBy == null
          ? (SparkPsPage.isDone(r.status) ? "completed" : "running") : Html.escape(a.endedBy)).append("</td></tr>");
    }
    b.append("</tbody></table>");
    if (!r.recoveries.isEmpty()) {
      b.append("<h4>PS recoveries</h4><table class=\"table table-bordered table-sm\" id=\"sparkps-recoveries\"><thead><tr>"
          + "<th>PS</th><th>Lost at</th><th>Reason</th><th>At step</th><th>Replacement</th><th>Refilled from</th>"
          + "<th>Down for</th></tr></thead><tbody>");
      for (SparkPsEvents.RecoveryRow x : r.recoveries) {
        b.append("<tr><td>").append(x.ps).append("</td><td>").append(Html.escape(x.lostAddress)).append("</td><td>")
            .append(Html.escape(x.reason)).append("</td><td>").append(x.atStep).append("</td><td>")
            .append(Html.escape(x.replacement)).append("</td><td>").append(Html.escape(x.refilledFrom)).append("</td><td>")
            .append(SparkPsPage.duration(x.downtimeMillis)).append("</td></tr>");
      }
      b.append("</tbody></table>");
    }
    return b.toString();
  }
}
