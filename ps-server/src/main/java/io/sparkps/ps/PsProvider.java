package io.sparkps.ps;

import java.util.ServiceLoader;

/**
 * Where the parameter server's implementation comes from: {@link PsClient.Builder#build()} and
 * {@link ParameterServer.Builder#build()} ask the one provider on the class path, found by
 * {@link ServiceLoader} ({@code META-INF/services/io.sparkps.ps.PsProvider}; ps-server's jar
 * carries its gRPC one). The API's packages name no class of the implementation.
 */
public interface PsProvider {
  /** A client of the shards {@code settings} lists, connected lazily (a call finds a shard down). */
  PsClient connect(ClientSettings settings);

  /** A server, not yet started. */
  ParameterServer server(ServerSettings settings);

  /** The provider on the class path; fails, naming the fix, when there is none or more than one. */
  static PsProvider load() {
    return Providers.get();
  }
}
