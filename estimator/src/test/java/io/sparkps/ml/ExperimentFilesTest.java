package io.sparkps.ml;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayInputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.PosixFilePermissions;
import java.util.List;
import example.Gadget;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Experiment files: private, digest-checked, and read behind an allow-list that no gadget gets past. */
class ExperimentFilesTest {
  @TempDir
  Path dir;

  @BeforeEach
  void reset() {
    Gadget.READS.set(0);
  }

  private static Experiment experiment(InputFn input) {
    String network = new org.deeplearning4j.nn.conf.NeuralNetConfiguration.Builder().list()
        .layer(new org.deeplearning4j.nn.conf.layers.OutputLayer.Builder().nIn(2).nOut(2).build()).build().toJson();
    return Experiment.builder().setNetworkJson(network)
        .setTrainSpec(TrainSpec.builder().optInput(input).optBatchSize(16).build()).optCluster(2, 1).build();
  }

  /** What a forger writes: any object graph, with its true digest (as if the arguments were forged too). */
  private Path forged(Object o) throws IOException {
    Path file = dir.resolve("forged.bin");
    try (ObjectOutputStream out = new ObjectOutputStream(Files.newOutputStream(file))) {
      out.writeObject(o);
    }
    return file;
  }

  private static String digest(Path file) throws IOException {
    return ExperimentFiles.sha256(Files.readAllBytes(file));
  }

  @Test
  void builtInInputs_needNoExtraClass_roundTrip_andTheFileIsTheOwnersAlone() throws Exception {
    ExperimentFiles.Staged staged = ExperimentFiles.write(experiment(InputFn.parquet("hdfs:///d")), dir);
    assertEquals(List.of(), staged.extraClasses());
    assertEquals("rw-------", PosixFilePermissions.toString(Files.getPosixFilePermissions(staged.file())));
    Experiment read = ExperimentFiles.read(staged.file(), staged.sha256().toUpperCase(), List.of());
    assertEquals(16, read.trainSpec().batchSize());
    assertEquals(new InputFn.Files("parquet", "hdfs:///d", null).path(),
        ((InputFn.Files) read.trainSpec().input()).path());
  }

  @Test
  void aGadgetInPlaceOfTheExperiment_isRefusedBeforeItsReadObjectRuns() throws Exception {
    Path file = forged(new Gadget());
    IOException e = assertThrows(IOException.class, () -> ExperimentFiles.read(file, digest(file), List.of()));
    assertTrue(e.getMessage().contains("holds class example.Gadget, outside the experiment's allow-list"),
        e.getMessage());
    assertEquals(0, Gadget.READS.get(), "the gadget's readObject never ran");
    // The check can fail: read plainly, the same bytes run the gadget.
    try (ObjectInputStream plain = new ObjectInputStream(new ByteArrayInputStream(Files.readAllBytes(file)))) {
      plain.readObject();
    }
    assertEquals(1, Gadget.READS.get());
  }

  @Test
  void aGadgetInsideAnExperiment_isRefusedUnlessTheSubmissionNamesItsClass() throws Exception {
    Path file = forged(experiment(new Gadget()));
    IOException e = assertThrows(IOException.class, () -> ExperimentFiles.read(file, digest(file), List.of()));
    assertTrue(e.getMessage().contains("allow-list"), e.getMessage());
    assertEquals(0, Gadget.READS.get());
    // The submitter's own InputFn class, named in the submission, is read.
    ExperimentFiles.Staged staged = ExperimentFiles.write(experiment(new Gadget()), dir.resolve("own"));
    assertEquals(List.of(Gadget.class.getName()), staged.extraClasses());
    Gadget.READS.set(0);
    Experiment read = ExperimentFiles.read(staged.file(), staged.sha256(), staged.extraClasses());
    assertTrue(read.trainSpec().input() instanceof Gadget);
    assertEquals(1, Gadget.READS.get());
  }

  @Test
  void aFileOtherThanTheSubmittedOne_isNotEvenParsed() throws Exception {
    ExperimentFiles.Staged staged = ExperimentFiles.write(experiment(InputFn.parquet("p")), dir);
    Path swapped = forged(experiment(new Gadget()));
    Files.copy(swapped, staged.file(), java.nio.file.StandardCopyOption.REPLACE_EXISTING);
    IOException e = assertThrows(IOException.class,
        () -> ExperimentFiles.read(staged.file(), staged.sha256(), List.of(Gadget.class.getName())));
    assertTrue(e.getMessage().contains("SHA-256") && e.getMessage().contains("not the file that was submitted"),
        e.getMessage());
    assertEquals(0, Gadget.READS.get());
  }

  @Test
  void oversizedFiles_andBadClassNames_areRefusedByName() throws Exception {
    Path big = dir.resolve("big.bin");
    Files.write(big, new byte[(int) ExperimentFiles.MAX_BYTES + 1]);
    IOException e = assertThrows(IOException.class, () -> ExperimentFiles.read(big, "00", List.of()));
    assertTrue(e.getMessage().contains("at most " + ExperimentFiles.MAX_BYTES), e.getMessage());
    ExperimentFiles.Staged staged = ExperimentFiles.write(experiment(InputFn.parquet("p")), dir);
    IllegalArgumentException bad = assertThrows(IllegalArgumentException.class,
        () -> ExperimentFiles.read(staged.file(), staged.sha256(), List.of("*")));
    assertTrue(bad.getMessage().contains("'*' is not a class name"), bad.getMessage());
  }

  @Test
  void deepGraphs_hitTheDepthBound() throws Exception {
    Object chain = null;
    for (int i = 0; i < 100; i++) {
      chain = new java.util.ArrayList<>(java.util.Collections.singletonList(chain));
    }
    Path file = forged(chain);
    IOException e = assertThrows(IOException.class, () -> ExperimentFiles.read(file, digest(file), List.of()));
    assertTrue(e.getMessage().contains("a graph beyond the limits") && e.getMessage().contains("depth 33"),
        e.getMessage());
  }

  @Test
  void aUsersLambda_isReadWithItsClassNamed_andRefusedWithout() throws Exception {
    ExperimentFiles.Staged staged = ExperimentFiles.write(experiment(example.Inputs.parquet("hdfs:///x")), dir);
    assertEquals(List.of(example.Inputs.class.getName()), staged.extraClasses(), "the lambda's capturing class");
    Experiment read = ExperimentFiles.read(staged.file(), staged.sha256(), staged.extraClasses());
    assertTrue(read.trainSpec().input() != null);
    IOException e = assertThrows(IOException.class, () -> ExperimentFiles.read(staged.file(), staged.sha256(), List.of()));
    assertTrue(e.getMessage().contains("allow-list") && e.getMessage().contains("example.Inputs"), e.getMessage());
  }
}
