/**
 * Retries an assertion until it passes or the time is up (60 s unless told: generous, for a busy
 * machine); then throws its last error. The test kit's, for core's tests (core does not depend on it).
 */
export async function eventually<T>(
  check: () => Promise<T> | T,
  options: { timeoutMs?: number; intervalMs?: number } = {},
): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  for (;;) {
    try {
      return await check();
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((resolve) => setTimeout(resolve, options.intervalMs ?? 200));
    }
  }
}
