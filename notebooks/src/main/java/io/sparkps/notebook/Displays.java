package io.sparkps.notebook;

import io.sparkps.ml.FitJob;
import io.sparkps.spark.TrainingJob;
import java.awt.image.RenderedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.Base64;
import javax.imageio.ImageIO;
import org.apache.spark.sql.Dataset;
import org.dflib.jjava.jupyter.kernel.display.DisplayData;
import org.dflib.jjava.jupyter.kernel.display.Renderer;
import org.dflib.jjava.jupyter.kernel.display.common.Image;
import org.dflib.jjava.jupyter.kernel.display.mime.MIMEType;

/**
 * How values look in a notebook: a {@code Dataset} as an HTML table of its first rows with the
 * schema, a {@link Chart} or image as a PNG, a SparkPS job as its progress; anything else as its
 * {@code toString()}. Every rendering has a {@code text/plain} form too.
 */
final class Displays {
  /** Rows of a Dataset shown when it is a cell's value. */
  static final int TABLE_ROWS = 20;
  private static final Renderer RENDERER = new Renderer();

  static {
    Image.registerAll(RENDERER);
  }

  private Displays() {}

  /** The display of {@code value}. */
  static DisplayData render(Object value) {
    if (value instanceof DisplayData d) {
      return d;
    } else if (value instanceof Dataset<?> ds) {
      return DatasetTable.render(ds, TABLE_ROWS);
    } else if (value instanceof Chart c) {
      return png(c.image(), c.toString());
    } else if (value instanceof FitJob f) {
      return ProgressDisplay.snapshot("fit " + f.runId(), f.status(), f.progress(), f.totalSteps());
    } else if (value instanceof TrainingJob<?> j) {
      return ProgressDisplay.snapshot("run " + j.runId(), j.status(), j.progress(), -1);
    }
    return RENDERER.render(value);
  }

  /** An image as PNG, with {@code text} as its plain form. */
  static DisplayData png(RenderedImage image, String text) {
    ByteArrayOutputStream bytes = new ByteArrayOutputStream();
    try {
      ImageIO.write(image, "png", bytes);
    } catch (IOException e) {
      throw new UncheckedIOException("cannot encode the image as PNG", e);
    }
    DisplayData d = new DisplayData(text);
    d.putData(MIMEType.IMAGE_PNG, Base64.getEncoder().encodeToString(bytes.toByteArray()));
    return d;
  }

  /** The plain-text form of a display. */
  static String text(DisplayData d) {
    Object text = d.getData(MIMEType.TEXT_PLAIN);
    return text == null ? "" : text.toString();
  }

  /** {@code s} safe inside HTML text and attributes. */
  static String escape(Object s) {
    return String.valueOf(s).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("\"", "&quot;");
  }
}
