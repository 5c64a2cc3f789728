import { escapeLabelValue } from '@cachemon/core';
import type { CacheNode } from '@cachemon/arcus';

/**
 * The label text every series of a node carries, without braces:
 * `ensemble="..",service_code="..",node="..",hostname=".."[,group="..",role=".."]`.
 * Cached per node object: topology objects live until the topology changes, and the same text is
 * reused by ~200 series of the node on every scrape.
 */
const cache = new WeakMap<CacheNode, { ensemble: string; text: string }>();

export function nodeLabelText(ensemble: string, node: CacheNode): string {
  const cached = cache.get(node);
  if (cached !== undefined && cached.ensemble === ensemble) return cached.text;
  let text =
    `ensemble="${escapeLabelValue(ensemble)}",service_code="${escapeLabelValue(node.serviceCode)}",` +
    `node="${escapeLabelValue(node.node)}",hostname="${escapeLabelValue(node.hostname)}"`;
  if (node.group !== undefined) {
    text += `,group="${escapeLabelValue(node.group)}",role="${node.role ?? ''}"`;
  }
  cache.set(node, { ensemble, text });
  return text;
}

/** `{extra="v",<base>}` for one extra label. */
export function withLabel(base: string, name: string, value: string): string {
  return `{${name}="${escapeLabelValue(value)}",${base}}`;
}
