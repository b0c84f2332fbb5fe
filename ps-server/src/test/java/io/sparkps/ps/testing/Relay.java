package io.sparkps.ps.testing;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * A loopback TCP relay that records every byte it forwards, both ways: what a sniffer on the
 * network between a client and a server would see.
 */
public final class Relay implements AutoCloseable {
  private final ServerSocket listener;
  private final InetSocketAddress target;
  private final ByteArrayOutputStream seen = new ByteArrayOutputStream();
  private final List<Socket> sockets = new CopyOnWriteArrayList<>();

  /** Listens on {@code host:port} (0 for any) and forwards each connection to {@code target}. */
  public Relay(String host, int port, InetSocketAddress target) throws IOException {
    this.target = target;
    listener = new ServerSocket();
    listener.setReuseAddress(true);
    listener.bind(new InetSocketAddress(InetAddress.getByName(host), port));
    Thread accept = new Thread(this::accept, "relay-accept");
    accept.setDaemon(true);
    accept.start();
  }

  /** {@code host:port} to connect to instead of the target. */
  public String address() {
    return listener.getInetAddress().getHostAddress() + ":" + listener.getLocalPort();
  }

  private void accept() {
    while (!listener.isClosed()) {
      try {
        Socket in = listener.accept();
        Socket out = new Socket(target.getAddress(), target.getPort());
        sockets.add(in);
        sockets.add(out);
        pump(in, out);
        pump(out, in);
      } catch (IOException e) {
        return;
      }
    }
  }

  private void pump(Socket from, Socket to) throws IOException {
    InputStream in = from.getInputStream();
    OutputStream out = to.getOutputStream();
    Thread t = new Thread(() -> {
      byte[] buffer = new byte[64 << 10];
      try {
        for (int n = in.read(buffer); n >= 0; n = in.read(buffer)) {
          synchronized (seen) {
            seen.write(buffer, 0, n);
          }
          out.write(buffer, 0, n);
        }
      } catch (IOException e) {
        // one side closed
      } finally {
        closeQuietly(from);
        closeQuietly(to);
      }
    }, "relay-pump");
    t.setDaemon(true);
    t.start();
  }

  /** Every byte forwarded so far, both directions interleaved by arrival. */
  public byte[] seen() {
    synchronized (seen) {
      return seen.toByteArray();
    }
  }

  /** Whether {@code needle} occurs in what was forwarded. */
  public boolean saw(byte[] needle) {
    byte[] hay = seen();
    outer:
    for (int i = 0; i + needle.length <= hay.length; i++) {
      for (int j = 0; j < needle.length; j++) {
        if (hay[i + j] != needle[j]) {
          continue outer;
        }
      }
      return true;
    }
    return false;
  }

  private static void closeQuietly(Socket s) {
    try {
      s.close();
    } catch (IOException e) {
      // already closed
    }
  }

  @Override
  public void close() throws IOException {
    listener.close();
    sockets.forEach(Relay::closeQuietly);
  }
}
