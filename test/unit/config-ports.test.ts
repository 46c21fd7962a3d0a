import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../shared/config.ts';
import { FETCH_BAD_PORTS } from '../../shared/fetch-bad-ports.ts';

function issuesOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.issues;
    throw error;
  }
}

describe('ports that fetch refuses', () => {
  it('are refused for the services at start-up, naming the port and why', () => {
    expect(issuesOf({ PORT: '4190' })).toEqual([
      expect.stringMatching(/^PORT: 4190 is on the Fetch standard's bad-port list: Node's fetch and browsers refuse/),
    ]);
    expect(issuesOf({ INGEST_PORT: '6000' })).toEqual([expect.stringMatching(/^INGEST_PORT: 6000 is on the Fetch standard's bad-port list/)]);
    expect(issuesOf({ PORT: '4191', INGEST_PORT: '0' })).toEqual([]);
  });

  it("are the ports Node's own fetch refuses", async () => {
    const reasons = await Promise.all(
      [...FETCH_BAD_PORTS].map((port) =>
        fetch(`http://127.0.0.1:${port}/`).then(
          () => 'answered',
          (error: Error) => (error.cause as Error | undefined)?.message,
        ),
      ),
    );
    expect(new Set(reasons)).toEqual(new Set(['bad port']));
    // a port beside one on the list is merely closed
    const neighbour = await fetch('http://127.0.0.1:4191/').then(
      () => 'answered',
      (error: Error) => (error.cause as Error | undefined)?.message,
    );
    expect(neighbour).not.toBe('bad port');
  });
});
