/** Writes stack/rule_evaluator/conf/rules/downsampling.yml (npm run rules:generate). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { renderDownsamplingRules } from './downsampling.js';
import { STACK_DIR } from './index.js';

const file = join(STACK_DIR, 'rule_evaluator', 'conf', 'rules', 'downsampling.yml');
writeFileSync(file, renderDownsamplingRules());
process.stdout.write(`wrote ${file}\n`);
