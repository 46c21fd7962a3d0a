/**
 * Waits until a service's health URL answers 2xx, for npm start. When it never does, the error says
 * the last failure (fetch's own reason included, e.g. "bad port"), not only that it timed out.
 */
export async function waitForHealth(url: string, name: string, options: { timeoutMs?: number; stopped?: () => boolean } = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 120_000;
  const deadline = Date.now() + timeoutMs;
  let lastFailure = 'no answer';
  while (Date.now() < deadline) {
    if (options.stopped?.()) throw new Error('stopped');
    try {
      const response = await fetch(url, { signal: AbortSignal.timeout(2000) });
      if (response.ok) return;
      lastFailure = `answered ${response.status}`;
    } catch (error) {
      // not listening yet, or a refusal that waiting does not cure
      lastFailure = failureReason(error);
    }
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  throw new Error(`${name} did not answer ${url} within ${timeoutMs / 1000} s (last: ${lastFailure})`);
}

/** fetch's "fetch failed" with the reason it keeps in the cause. */
function failureReason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
}
