import { escapeLabelValue } from '@cachemon/core';
import type { CacheNode } from '@cachemon/arcus';

/** A node's label text, unbraced: `ensemble="..",service_code="..",node="..",hostname=".."[,group,role]`. */
export function nodeLabelText(ensemble: string, node: CacheNode): string {
  const text =
    `ensemble="${escapeLabelValue(ensemble)}",service_code="${escapeLabelValue(node.serviceCode)}",` +
    `node="${escapeLabelValue(node.node)}",hostname="${escapeLabelValue(node.hostname)}"`;
  return node.group === undefined ? text : `${text},group="${escapeLabelValue(node.group)}",role="${node.role ?? ''}"`;
}

/** `{extra="v",<base>}` for one extra label. */
export function withLabel(base: string, name: string, value: string): string {
  return `{${name}="${escapeLabelValue(value)}",${base}}`;
}
