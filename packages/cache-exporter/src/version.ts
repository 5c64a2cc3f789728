import { packageVersion } from '@cachemon/core';

/** The package version, read once from package.json next to dist/. */
export const VERSION: string = packageVersion(import.meta.url);
