/** Reading what the alert router delivered in the demo: webhook payloads, mails, and the texts' labels. */
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { decodeQuotedPrintable } from '@cachemon/testkit';
import { demoMails } from '../src/demo-stack.js';

export interface Notified {
  readonly status: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly annotations: Readonly<Record<string, string>>;
}

/** Every alert the demo's webhook heard, oldest first. */
export function webhookAlerts(dir: string): Notified[] {
  const file = join(dir, 'alerts.log');
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line !== '')
    .flatMap((line) => (JSON.parse(line.slice(line.indexOf(' ') + 1)) as { alerts: Notified[] }).alerts);
}

/** HTML text as read: Alertmanager's mail is HTML, its values escaped (`+` is `&#43;`). */
export function htmlText(html: string): string {
  return html
    .replace(/&#(\d+);/g, (_, n: string) => String.fromCodePoint(Number(n)))
    .replace(/&#x([0-9a-f]+);/gi, (_, n: string) => String.fromCodePoint(parseInt(n, 16)))
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&quot;/g, '"')
    .replace(/&amp;/g, '&');
}

/** The demo's mails as text (quoted-printable and HTML escapes undone). */
export const mailTexts = (dir: string): string[] =>
  demoMails(dir).map((file) => htmlText(decodeQuotedPrintable(readFileSync(file, 'utf8'))));

/** alert name -> its annotation templates, from the tree's alerts.yml. */
export function annotationTemplates(tree: string): Map<string, Record<string, string>> {
  const rules = parse(readFileSync(join(tree, 'rule_evaluator/conf/rules/alerts.yml'), 'utf8')) as {
    groups: Array<{ rules: Array<{ alert: string; annotations?: Record<string, string> }> }>;
  };
  return new Map(rules.groups.flatMap((g) => g.rules.map((r) => [r.alert, r.annotations ?? {}] as const)));
}

/**
 * Each annotation of a fired alert is rendered: no `<no value>`, and every label its template
 * names is on the alert (the expr keeps it) and its value is in the text.
 */
export function assertRendered(alert: Notified, templates: Record<string, string>): void {
  const name = alert.labels['alertname'];
  assert.ok(Object.keys(templates).length > 0, `${name}: no annotations`);
  for (const [key, template] of Object.entries(templates)) {
    const text = alert.annotations[key];
    assert.ok(text !== undefined, `${name}: annotation ${key} missing`);
    assert.ok(!text.includes('<no value>'), `${name} ${key}: ${text}`);
    for (const [, label] of template.matchAll(/\$labels\.(\w+)/g)) {
      const value = alert.labels[label!];
      assert.ok(
        value,
        `${name}: ${key} names $labels.${label}, which the alert has not: ${JSON.stringify(alert.labels)}`,
      );
      assert.ok(text.includes(value), `${name} ${key}: "${text}" lacks ${label} ${value}`);
    }
  }
}
