import { createServer } from 'node:net';
import type { AddressInfo } from 'node:net';

/** A port that accepts connections and drops them at once, counting them: a ZooKeeper that is not serving. */
export async function droppingServer(): Promise<{
  address: string;
  port: number;
  connections: () => number;
  close: () => Promise<void>;
}> {
  let count = 0;
  const server = createServer((socket) => {
    count++;
    socket.destroy();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    address: `127.0.0.1:${port}`,
    port,
    connections: () => count,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
