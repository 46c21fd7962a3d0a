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
}

declare module 'fastify' {
  interface FastifyRequest {
    principal: Principal;
  }
}
