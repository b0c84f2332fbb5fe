package io.sparkps.ps;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.sparkps.ps.host.GrpcProvider;
import java.util.Collections;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The API finds its implementation through {@code META-INF/services}, and says what is wrong when it cannot. */
class ProvidersTest {
  @Test
  void theClassPathsProvider_isPsServersGrpcOne() {
    assertEquals(GrpcProvider.class, PsProvider.load().getClass());
    assertTrue(PsProvider.load() == PsProvider.load(), "looked up once");
  }

  @Test
  void noProvider_failsNamingTheServicesFileAndTheFix() {
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> Providers.find(Collections.emptyIterator()));
    assertTrue(e.getMessage().contains("META-INF/services/io.sparkps.ps.PsProvider"), e.getMessage());
    assertTrue(e.getMessage().contains("add ps-server's jar"), e.getMessage());
  }

  @Test
  void twoProviders_failNamingBoth() {
    PsProvider other = new PsProvider() {
      @Override
      public PsClient connect(ClientSettings settings) {
        throw new UnsupportedOperationException();
      }

      @Override
      public ParameterServer server(ServerSettings settings) {
        throw new UnsupportedOperationException();
      }
    };
    IllegalStateException e = assertThrows(IllegalStateException.class,
        () -> Providers.find(List.of(new GrpcProvider(), other).iterator()));
    assertTrue(e.getMessage().contains(GrpcProvider.class.getName()) && e.getMessage().contains("ProvidersTest$1"),
        e.getMessage());
  }

  @Test
  void aClientOfAnotherImplementation_isRefusedWhereSparkPsNeedsItsOwn() {
    PsClient foreign = (PsClient) java.lang.reflect.Proxy.newProxyInstance(getClass().getClassLoader(),
        new Class<?>[] {PsClient.class}, (proxy, method, args) -> null);
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> io.sparkps.ps.client.GrpcPsClient.of(foreign));
    assertTrue(e.getMessage().contains("gRPC parameter-server client"), e.getMessage());
  }
}
