import { connect, createServer, type Server, type Socket } from 'node:net';
import { once } from 'node:events';

/**
 * A TCP relay on 127.0.0.1 in front of a server: `forward` passes bytes both ways, `stall` accepts
 * connections and reads requests but never answers (a store that is up but stuck). Switching mode
 * drops open connections, as a stuck server's clients would see.
 */
export class StallingRelay {
  private mode: 'forward' | 'stall' = 'forward';
  private readonly sockets = new Set<Socket>();

  private constructor(
    private readonly server: Server,
    readonly port: number,
  ) {}

  static async start(target: { host: string; port: number }): Promise<StallingRelay> {
    let relay: StallingRelay | undefined;
    const server = createServer((client) => relay!.accept(client, target));
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    relay = new StallingRelay(server, (server.address() as { port: number }).port);
    return relay;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  forward(): void {
    this.switchTo('forward');
  }

  stall(): void {
    this.switchTo('stall');
  }

  async close(): Promise<void> {
    this.dropConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private switchTo(mode: 'forward' | 'stall'): void {
    this.mode = mode;
    this.dropConnections();
  }

  private dropConnections(): void {
    for (const socket of this.sockets) socket.destroy();
    this.sockets.clear();
  }

  private track(socket: Socket): void {
    this.sockets.add(socket);
    socket.once('close', () => this.sockets.delete(socket));
    socket.on('error', () => socket.destroy());
  }

  private accept(client: Socket, target: { host: string; port: number }): void {
    this.track(client);
    if (this.mode === 'stall') {
      // read and drop: the client's request is sent, no answer ever comes
      client.on('data', () => {});
      return;
    }
    const upstream = connect(target.port, target.host);
    this.track(upstream);
    client.pipe(upstream);
    upstream.pipe(client);
    client.once('close', () => upstream.destroy());
    upstream.once('close', () => client.destroy());
  }
}
