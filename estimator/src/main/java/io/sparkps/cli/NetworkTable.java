package io.sparkps.cli;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.sparkps.spark.ui.Html;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.deeplearning4j.nn.conf.ComputationGraphConfiguration;
import org.deeplearning4j.nn.conf.MultiLayerConfiguration;
import org.deeplearning4j.nn.conf.NeuralNetConfiguration;
import org.deeplearning4j.nn.conf.graph.GraphVertex;
import org.deeplearning4j.nn.conf.graph.LayerVertex;
import org.deeplearning4j.nn.conf.layers.FeedForwardLayer;
import org.deeplearning4j.nn.conf.layers.Layer;

/** A network's configuration as an HTML table of its layers: name, kind, inputs, outputs, activation, parameters. */
final class NetworkTable {
  private NetworkTable() {}

  private record Row(String name, String kind, long in, long out, String activation, long params) {}

  /** The table, or a line saying why there is none (no network, or one DL4J cannot read). */
  static String html(String networkJson) {
    if (networkJson == null || networkJson.isBlank()) {
      return "<p>No network configuration was recorded.</p>";
    }
    List<Row> rows;
    try {
      rows = rows(networkJson);
    } catch (RuntimeException | java.io.IOException e) {
      return "<p>The network configuration could not be read (" + Html.escape(e.getMessage()) + ").</p>";
    }
    StringBuilder b = new StringBuilder("<table class=\"layers\"><thead><tr><th>#</th><th>Layer</th><th>Kind</th>"
        + "<th>In</th><th>Out</th><th>Activation</th><th class=\"num\">Parameters</th></tr></thead><tbody>");
    long total = 0;
    for (int i = 0; i < rows.size(); i++) {
      Row r = rows.get(i);
      total += r.params();
      b.append("<tr><td>").append(i).append("</td><td>").append(Html.escape(r.name())).append("</td><td>")
          .append(Html.escape(r.kind())).append("</td><td>").append(r.in() < 0 ? "" : r.in()).append("</td><td>")
          .append(r.out() < 0 ? "" : r.out()).append("</td><td>").append(Html.escape(r.activation()))
          .append("</td><td class=\"num\">").append(String.format(Locale.ROOT, "%,d", r.params())).append("</td></tr>");
    }
    return b.append("</tbody><tfoot><tr><td></td><td colspan=\"5\">total</td><td class=\"num\">")
        .append(String.format(Locale.ROOT, "%,d", total)).append("</td></tr></tfoot></table>").toString();
  }

  private static List<Row> rows(String json) throws java.io.IOException {
    JsonNode tree = new ObjectMapper().readTree(json);
    List<Row> rows = new ArrayList<>();
    if (tree.has("vertices")) {
      ComputationGraphConfiguration conf = ComputationGraphConfiguration.fromJson(json);
      for (Map.Entry<String, GraphVertex> v : conf.getVertices().entrySet()) {
        if (v.getValue() instanceof LayerVertex lv) {
          rows.add(row(v.getKey(), lv.getLayerConf()));
        } else {
          rows.add(new Row(v.getKey(), v.getValue().getClass().getSimpleName(), -1, -1, "", v.getValue().numParams(false)));
        }
      }
    } else {
      MultiLayerConfiguration conf = MultiLayerConfiguration.fromJson(json);
      for (int i = 0; i < conf.getConfs().size(); i++) {
        NeuralNetConfiguration c = conf.getConf(i);
        String name = c.getLayer().getLayerName();
        rows.add(row(name == null ? "layer " + i : name, c));
      }
    }
    return rows;
  }

  private static Row row(String name, NeuralNetConfiguration c) {
    Layer layer = c.getLayer();
    long in = -1;
    long out = -1;
    String activation = "";
    if (layer instanceof FeedForwardLayer f) {
      in = f.getNIn();
      out = f.getNOut();
      if (f.getActivationFn() != null) {
        activation = f.getActivationFn().toString().replace("()", "").toLowerCase(Locale.ROOT);
      }
    }
    return new Row(name, layer.getClass().getSimpleName(), in, out, activation, layer.initializer().numParams(c));
  }
}
