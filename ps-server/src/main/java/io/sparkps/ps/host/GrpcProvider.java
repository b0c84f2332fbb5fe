package io.sparkps.ps.host;

import io.sparkps.ps.ClientSettings;
import io.sparkps.ps.ParameterServer;
import io.sparkps.ps.PsClient;
import io.sparkps.ps.PsProvider;
import io.sparkps.ps.ServerSettings;
import io.sparkps.ps.client.GrpcPsClient;
import io.sparkps.ps.annotation.Internal;

/** ps-server's {@link PsProvider}: gRPC clients and servers, named in {@code META-INF/services}. */
@Internal
public final class GrpcProvider implements PsProvider {
  @Override
  public PsClient connect(ClientSettings settings) {
    return GrpcPsClient.connect(settings);
  }

  @Override
  public ParameterServer server(ServerSettings settings) {
    return new GrpcParameterServer(settings);
  }
}
