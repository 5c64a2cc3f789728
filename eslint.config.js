// Lint: eslint's and typescript-eslint's recommended rules, type-aware (each file checked with the
// types of the tsconfig.json that includes it), plus the promise and import rules below.
import js from '@eslint/js';
import { defineConfig } from 'eslint/config';
import globals from 'globals';
import tseslint from 'typescript-eslint';

export default defineConfig(
  { ignores: ['**/dist/', '**/node_modules/', 'bench/**/results/', 'demo/'] },
  js.configs.recommended,
  tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      globals: globals.node,
      parserOptions: {
        projectService: {
          // The JavaScript files (benchmarks, scripts, the query proxy's UI) are in no tsconfig.json.
          allowDefaultProject: [
            '*.js',
            'scripts/*.mjs',
            'bench/*/*.mjs',
            'bench/*/test/unit/*.mjs',
            'packages/*/test/*.mjs',
            'packages/*/test/*/*.mjs',
            'packages/query-proxy/ui/*.js',
          ],
          defaultProject: 'tsconfig.base.json',
          maximumDefaultProjectFileMatchCount_THIS_WILL_SLOW_DOWN_LINTING: 64,
        },
        tsconfigRootDir: import.meta.dirname,
      },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': [
        'error',
        {
          // node:test runs what describe() and it() register; their promises need no await.
          allowForKnownSafeCalls: [
            {
              from: 'package',
              package: 'node:test',
              name: ['describe', 'it', 'test', 'suite', 'before', 'after', 'beforeEach', 'afterEach'],
            },
          ],
        },
      ],
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': ['error', { fixStyle: 'inline-type-imports' }],
      // `const { dropped: _, ...rest } = o` is how a key is left out of a copy.
      '@typescript-eslint/no-unused-vars': ['error', { ignoreRestSiblings: true }],
      // Resolvers, test doubles and handlers implement promise-returning interfaces without awaiting.
      '@typescript-eslint/require-await': 'off',
      // Callback APIs (node-zookeeper-client, child processes) hand over errors not typed as Error;
      // a promise around them rejects with what they gave.
      '@typescript-eslint/prefer-promise-reject-errors': 'off',
    },
  },
  {
    // Plain JavaScript has no declared types: every value from JSON, argv or an untyped module is
    // `any`, so the no-unsafe-* rules would flag most lines, and the types inferred for arrays of
    // mixed tuples are unions the template rules misread.
    files: ['**/*.js', '**/*.mjs'],
    rules: {
      '@typescript-eslint/restrict-template-expressions': 'off',
      '@typescript-eslint/no-base-to-string': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
    },
  },
  {
    files: ['packages/query-proxy/ui/*.js'],
    languageOptions: { globals: globals.browser },
  },
);
