import { describe } from 'node:test';
import { helpAndVersionTests } from '@cachemon/testkit';

// --check-config: exporter.test.ts.
describe('coordination-exporter --help, --version', () => {
  helpAndVersionTests('coordination-exporter');
});
