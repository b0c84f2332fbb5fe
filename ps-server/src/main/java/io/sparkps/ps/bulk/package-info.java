/**
 * Internal: the bulk data plane of a shard. Values skip HTTP/2 (whose 16 KiB frames and extra
 * copies cost most of the CPU on small machines) and go over a plain TCP stream per connection,
 * authenticated with the run's token, moving bytes between the socket and ND4J's off-heap buffers
 * with no user-space copy on the client and one on the server: dense transfers of any size (a
 * client's {@code optBulkMinBytes} may send small ones as gRPC frames) and embedding tables' rows.
 * A SYNC or SSP read, dense or of rows, waits on the shard within its request, on the connection's
 * own thread. Control calls stay on gRPC. A client in the shard's own JVM ({@link
 * io.sparkps.ps.bulk.LocalBulk}, found through {@code HelloReply.local_id} and the token) skips the
 * socket: one copy between ND4J's buffers and the shard's arrays, the same checks, locks and waits.
 *
 * <p>Wire format (big-endian lengths):
 * <pre>
 * hello    client: "SPKB" u32 version u32 tokenLength token   server: u8 status [u32 length message]
 * request  u8 kind (1 update, 2 read, 3 rows pull, 4 rows push) u32 headerLength header u64 payloadLength payload
 * response u8 status (a gRPC status code) u32 length body u64 payloadLength payload
 * </pre>
 * An update's header is a {@code FrameHeader} and its reply body an {@code UpdateReply}; a read's
 * header is a {@code PullRequest} and its body the {@code FrameHeader} describing the payload. A
 * rows pull's header is an {@code EmbeddingPullBatch}, answered by an {@code EmbeddingRowsBatch}
 * body; a rows push's an {@code EmbeddingPushBatch}, answered by an {@code UpdateReply}; neither
 * carries a payload. A non-zero status carries an error message as its body.
 */
package io.sparkps.ps.bulk;
