/**
 * Who is calling: the resolved API key. The auth plugin sets request.principal on every /api/ route;
 * scope and project checks happen in the endpoint route, which knows the resolved endpoint.
 */
export interface Principal {
  keyId: string;
  account: string;
  /** 'all' or the endpoint names/ids this key may query. */
  endpoints: 'all' | string[];
  /** null = every project. */
  projects: string[] | null;
  /** Set (true) only for an operator credential: a key created with --admin, or OPS_TOKEN; it may manage the saved endpoints. */
  admin?: true;
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
    /** Milliseconds the API key's check took (Server-Timing's auth); undefined where no key was checked. */
    authMs: number | undefined;
  }
}
