/**
 * The demo's ARCUS cluster, run in the background by `npm run demo`: ZooKeeper, three doubles, a
 * down node, light traffic, a webhook receiver writing the alerts to a file, and a mail server on a
 * free loopback port keeping every mail in <dir>/mail/. Writes <dir>/cluster.json once ready;
 * SIGTERM stops everything it started.
 *
 *   node packages/stack/dist/src/demo-cluster.js <demo dir> <webhook port>
 */
import { appendFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { connect } from 'node:net';
import { join } from 'node:path';
import { ArcusDouble, ArcusZk, freePort, startSmtpSink, startZooKeeper } from '@cachemon/testkit';

const [dir, webhookPort] = process.argv.slice(2);
if (!dir || !webhookPort) {
  process.stderr.write('usage: demo-cluster.js <demo dir> <webhook port>\n');
  process.exit(2);
}
const log = (message: string) => appendFileSync(join(dir, 'cluster.log'), `${new Date().toISOString()} ${message}\n`);

const zk = await startZooKeeper();
const arcus = await ArcusZk.connect(zk.address);
const nodes: ArcusDouble[] = [];
for (const svc of ['demo-a', 'demo-b']) await arcus.createServiceCode(svc);
for (const svc of ['demo-a', 'demo-a', 'demo-b']) {
  const node = await ArcusDouble.start({ detailEnabled: true });
  await arcus.mapServer(node.address, svc);
  await node.register(arcus, { hostname: 'localhost' });
  node.populate([{ key: `${svc}:user:1` }, { key: `${svc}:session:1` }, { key: `${svc}:list:1`, type: 'list' }]);
  nodes.push(node);
}
// A node mapped to demo-b that ran once and is gone: what a cache node that is down looks like on
// the dashboards, and the CacheNodeDown alert it raises. Its join in cache_server_log gives it the
// hostname it ran under, as a real server that stopped has.
const downNode = `127.0.0.1:${await freePort()}`;
await arcus.mapServer(downNode, 'demo-b');
await (await arcus.registerNode(downNode, 'demo-b', { hostname: 'localhost' })).unregister();

// Light traffic: a few gets (hits and misses) and sets per node every second.
let round = 0;
const traffic = setInterval(() => {
  round++;
  for (const node of nodes) {
    const [host, port] = [
      node.address.slice(0, node.address.lastIndexOf(':')),
      Number(node.address.slice(node.address.lastIndexOf(':') + 1)),
    ];
    const socket = connect(port, host, () => {
      const key = round % 3 === 0 ? 'missing' : 'user:1';
      socket.end(`get demo:${key}\r\nset demo:user:${round % 10} 0 0 1\r\nx\r\nget demo-a:user:1\r\nquit\r\n`);
    });
    socket.on('error', () => undefined);
    socket.resume();
  }
}, 1000);

const webhook = createServer((req, res) => {
  let body = '';
  req.on('data', (chunk: Buffer) => (body += chunk.toString()));
  req.on('end', () => {
    appendFileSync(join(dir, 'alerts.log'), `${new Date().toISOString()} ${body}\n`);
    res.end('ok');
  });
});
await new Promise<void>((resolve) => webhook.listen(Number(webhookPort), '127.0.0.1', resolve));
const mailDir = join(dir, 'mail');
const mail = await startSmtpSink({ dir: mailDir });

writeFileSync(
  join(dir, 'cluster.json'),
  JSON.stringify(
    {
      pid: process.pid,
      zookeeper: zk.address,
      nodes: nodes.map((n) => n.address),
      down: [downNode],
      webhook: `http://127.0.0.1:${webhookPort}/`,
      mail: mail.address,
      mailDir,
    },
    null,
    2,
  ),
);
log(`ready: ZooKeeper ${zk.address}, nodes ${nodes.map((n) => n.address).join(', ')}`);

let stopping = false;
const stop = async () => {
  if (stopping) return;
  stopping = true;
  clearInterval(traffic);
  webhook.close();
  await mail.stop();
  for (const node of nodes) await node.stop();
  await arcus.close();
  await zk.stop();
  log('stopped');
  process.exit(0);
};
process.on('SIGTERM', () => void stop());
process.on('SIGINT', () => void stop());
