/** Findings in order, as lines for an operator or JSON for a script, and the exit status they give. */
import { COMPONENTS } from '../tree.js';
import type { Finding } from './types.js';

/** A finding under a code and component: checks build theirs with it, so every field is given. */
export function finding(
  code: string,
  severity: Finding['severity'],
  component: string,
  instance: string,
  message: string,
  fix: string,
): Finding {
  return { code, severity, component, instance, message, fix };
}

const rank = (component: string) => {
  const at = (COMPONENTS as readonly string[]).indexOf(component);
  return at < 0 ? COMPONENTS.length : at;
};

const ORDER: Record<Finding['severity'], number> = { error: 0, warning: 1, notice: 2 };

/** Errors, warnings, notices; then by component in start order; within that, as the checks gave them. */
export function sortFindings(findings: readonly Finding[]): Finding[] {
  return findings
    .map((f, at) => ({ f, at }))
    .sort(
      (a, b) => ORDER[a.f.severity] - ORDER[b.f.severity] || rank(a.f.component) - rank(b.f.component) || a.at - b.at,
    )
    .map(({ f }) => f);
}

export interface DoctorReport {
  readonly findings: readonly Finding[];
  readonly errors: number;
  readonly warnings: number;
  readonly notices: number;
}

export function doctorReport(findings: readonly Finding[]): DoctorReport {
  const count = (severity: Finding['severity']) => findings.filter((f) => f.severity === severity).length;
  return { findings, errors: count('error'), warnings: count('warning'), notices: count('notice') };
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

/** "2 errors, 1 warning", "no findings", "no findings, 1 notice". */
export function countText(findings: readonly Finding[]): string {
  const { errors, warnings, notices } = doctorReport(findings);
  const faults = errors + warnings === 0 ? 'no findings' : `${plural(errors, 'error')}, ${plural(warnings, 'warning')}`;
  return notices === 0 ? faults : `${faults}, ${plural(notices, 'notice')}`;
}

export function renderFinding(f: Finding): string {
  const where = f.instance ? `${f.component}:${f.instance}` : f.component;
  return `${f.severity.toUpperCase()} ${f.code} ${where}: ${f.message} -> fix: ${f.fix}`;
}

/** One line per finding, then the counts. */
export function renderFindings(findings: readonly Finding[]): string {
  return [...findings.map(renderFinding), `doctor: ${countText(findings)}`].join('\n');
}

/** 0 clean (notices at most), 1 warnings only, 2 any error. */
export function exitStatus(findings: readonly Finding[]): 0 | 1 | 2 {
  if (findings.some((f) => f.severity === 'error')) return 2;
  return findings.some((f) => f.severity === 'warning') ? 1 : 0;
}
