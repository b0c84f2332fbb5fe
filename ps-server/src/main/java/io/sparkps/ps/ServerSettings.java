package io.sparkps.ps;

import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.tls.PsTls;
import java.time.Duration;

/**
 * What a {@link ParameterServer.Builder} was given, checked: what a {@link PsProvider} makes a
 * server of. {@code inProcessName} and {@code tls} may be null (on a socket; plaintext).
 */
public record ServerSettings(int shardIndex, PsToken token, String host, int port, String inProcessName, int threads,
    Duration maxWait, int chunkBytes, int flowControlWindow, int maxBulkConnections, PsTls tls,
    long maxVariableElements) {}
