package io.sparkps.ps;

import io.sparkps.ps.spec.PsToken;
import io.sparkps.ps.tls.PsTls;
import java.time.Duration;
import java.util.List;

/**
 * What a {@link PsClient.Builder} was given, checked: what a {@link PsProvider} connects a client
 * with (each option as {@link ClientOptions} describes it). {@code tls} and {@code recovery} may be
 * null (plaintext; a lost shard's failures thrown as they are); a density of 0 means dense transfers.
 */
public record ClientSettings(List<String> shards, PsToken token, PsTls tls, int worker, Duration callTimeout,
    Duration waitTimeout, long splitBytes, int chunkBytes, int flowControlWindow, boolean sameJvm, long bulkMinBytes,
    boolean rowsOverBulk, boolean bf16, double sparseDensity, double sparsePullDensity, ShardRecovery recovery) {}
