/**
 * Internal: the bulk data plane of a shard. Transfers of 1 MiB and more skip HTTP/2 (whose 16 KiB
 * frames and extra copies cost most of the CPU on small machines) and go over a plain TCP stream
 * per connection, authenticated with the run's token, moving bytes between the socket and ND4J's
 * off-heap buffers with no user-space copy on the client and one on the server. Control calls and
 * small transfers stay on gRPC. A client in the shard's own JVM ({@link io.sparkps.ps.bulk.LocalBulk},
 * found through {@code HelloReply.local_id} and the token) skips the socket for dense transfers of
 * any size: one copy between ND4J's buffers and the shard's arrays, the same checks and locks.
 *
 * <p>Wire format (big-endian lengths):
 * <pre>
 * hello    client: "SPKB" u32 version u32 tokenLength token   server: u8 status [u32 length message]
 * request  u8 kind (1 update, 2 read) u32 headerLength header u64 payloadLength payload
 * response u8 status (a gRPC status code) u32 length body u64 payloadLength payload
 * </pre>
 * An update's header is a {@code FrameHeader} and its reply body an {@code UpdateReply}; a read's
 * header is a {@code PullRequest} and its body the {@code FrameHeader} describing the payload. A
 * non-zero status carries an error message as its body.
 */
package io.sparkps.ps.bulk;
