import { createHash, timingSafeEqual } from 'node:crypto';

/**
 * Who may read the operational details (/metrics, and /health's dependency list): anyone when no
 * OPS_TOKEN is configured, else a caller sending `Authorization: Bearer <OPS_TOKEN>`. Liveness and
 * readiness stay open either way, because load balancers and orchestrators probe them without secrets.
 */
export type OpsAccess = (authorization: string | string[] | undefined) => boolean;

const digest = (value: string) => createHash('sha256').update(value).digest();

export function opsAccess(token: string | undefined): OpsAccess {
  if (token === undefined) return () => true;
  const expected = digest(token);
  return (authorization) => {
    if (typeof authorization !== 'string') return false;
    const match = /^Bearer\s+(\S+)\s*$/i.exec(authorization);
    // compared as fixed-length digests, so the comparison time says nothing about the token
    return match !== null && timingSafeEqual(digest(match[1]!), expected);
  };
}

export const OPS_TOKEN_REQUIRED = 'this needs the operator token: send Authorization: Bearer <OPS_TOKEN>';
