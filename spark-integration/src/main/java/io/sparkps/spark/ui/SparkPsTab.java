package io.sparkps.spark.ui;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.SparkConf;
import org.apache.spark.ui.JettyUtils;
import org.apache.spark.ui.SparkUI;
import org.apache.spark.ui.SparkUITab;
import org.apache.spark.ui.WebUITab;
import scala.runtime.AbstractFunction1;

/**
 * The SparkPS tab of a Spark UI (a live application's, or one the History Server shows): a tab in
 * Spark's header, and a handler at {@code /sparkps/} that renders {@link SparkPsPage} from the
 * application's status store. The handler is written without naming the servlet API (Spark 3.5
 * serves {@code javax.servlet}, Spark 4 {@code jakarta.servlet}): the request reaches it as an
 * object whose query parameters are read by name.
 */
public final class SparkPsTab {
  /** The tab's URL prefix. */
  public static final String PREFIX = "sparkps";

  private SparkPsTab() {}

  /** Adds the tab and its page to {@code ui}, showing what {@code store} holds. */
  @SuppressWarnings({"unchecked", "rawtypes"})
  public static void attach(SparkUI ui, RunStore store, SparkConf conf) {
    SparkUITab tab = new SparkUITab(ui, PREFIX) {
      @Override
      public String name() {
        return "SparkPS";
      }
    };
    ui.attachTab(tab);
    scala.Function1 responder = new AbstractFunction1<Object, String>() {
      @Override
      public String apply(Object request) {
        String run = parameter(request, "run");
        return "1".equals(parameter(request, "fragment")) ? SparkPsPage.content(store, run)
            : SparkPsPage.page(store, run, tabs(ui), ui.appName(), ui.appSparkVersion(), uiRoot(request));
      }
    };
    scala.Function1 asText = new AbstractFunction1<Object, String>() {
      @Override
      public String apply(Object html) {
        return (String) html;
      }
    };
    ui.attachHandler(JettyUtils.createServletHandler("/" + PREFIX,
        new JettyUtils.ServletParams(responder, "text/html;charset=utf-8", asText), conf, ui.getBasePath()));
  }

  private static List<SparkPsPage.Tab> tabs(SparkUI ui) {
    List<SparkPsPage.Tab> out = new ArrayList<>();
    scala.collection.Iterator<WebUITab> it = ui.getTabs().iterator();
    while (it.hasNext()) {
      WebUITab t = it.next();
      out.add(new SparkPsPage.Tab(t.name(), t.prefix()));
    }
    return out;
  }

  /**
   * Where Spark serves its UI's root for {@code request} ({@code UIUtils.uiRoot}: "" or a proxy's
   * base, such as YARN's), whose {@code /static/} holds Spark's styles and images.
   */
  private static String uiRoot(Object request) {
    for (java.lang.reflect.Method m : org.apache.spark.ui.UIUtils.class.getMethods()) {
      if (m.getName().equals("uiRoot") && m.getParameterCount() == 1 && m.getParameterTypes()[0].isInstance(request)) {
        try {
          return String.valueOf(m.invoke(null, request));
        } catch (ReflectiveOperationException e) {
          break;
        }
      }
    }
    return "";
  }

  /** The request's query parameter {@code name}, or null (the servlet API's getParameter, found by name). */
  private static String parameter(Object request, String name) {
    try {
      Object v = request.getClass().getMethod("getParameter", String.class).invoke(request, name);
      return v == null || ((String) v).isBlank() ? null : (String) v;
    } catch (ReflectiveOperationException e) {
      throw new IllegalStateException("cannot read the request's parameter '" + name + "'", e);
    }
  }
}
