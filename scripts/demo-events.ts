import type { SourceName } from '../shared/sources.ts';
import { formatMicros } from '../shared/stored-timestamp.ts';

/**
 * Realistic events for the nine sources, shaped like the samples in the Logflare samples (test/fixtures/logflare-samples), for
 * demos and benchmarks. Pure and seeded: the same options give the same events.
 */
export interface DemoEvent {
  source: SourceName;
  event: Record<string, unknown>;
}

export interface DemoOptions {
  count: number;
  from: Date;
  to: Date;
  projects: string[];
  seed?: number;
}

/** Share of events per source, roughly as a busy project produces them. */
const SOURCE_WEIGHTS: [SourceName, number][] = [
  ['edge_logs', 35],
  ['postgres_logs', 15],
  ['auth_logs', 10],
  ['function_edge_logs', 8],
  ['rest_api_logs', 8],
  ['function_logs', 7],
  ['connection_pooler_logs', 7],
  ['realtime_logs', 5],
  ['storage_logs', 5],
];
/** Recent activity is what people look at first: this share lands in the last hour of the range. */
const LAST_HOUR_SHARE = 0.1;

type Random = () => number;

/** mulberry32: small, fast, good enough for demo data; a seed gives the same numbers again (tests replay a failing case by it). */
export function seeded(seed: number): Random {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const pick = <T>(random: Random, items: readonly T[]): T => items[Math.floor(random() * items.length)]!;
const integer = (random: Random, min: number, max: number): number => min + Math.floor(random() * (max - min + 1));
const hex = (random: Random, length: number): string => Array.from({ length }, () => Math.floor(random() * 16).toString(16)).join('');
const uuid = (random: Random): string => `${hex(random, 8)}-${hex(random, 4)}-4${hex(random, 3)}-a${hex(random, 3)}-${hex(random, 12)}`;
const ipv4 = (random: Random): string => `${integer(random, 1, 223)}.${integer(random, 0, 255)}.${integer(random, 0, 255)}.${integer(random, 1, 254)}`;
const ipv6 = (random: Random): string => `2a02:${hex(random, 4)}:${hex(random, 4)}:${hex(random, 2)}00::${hex(random, 3)}`;
const clientIp = (random: Random): string => (random() < 0.25 ? ipv6(random) : ipv4(random));

const TABLES = ['todos', 'profiles', 'messages', 'orders', 'products', 'invoices'];
const FUNCTIONS = ['hello-world', 'send-email', 'stripe-webhook', 'resize-image', 'openai-chat'];
const BUCKETS = ['avatars', 'public', 'uploads'];
const USER_AGENTS = [
  'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/121.0.0.0 Safari/537.36',
  'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:122.0) Gecko/20100101 Firefox/122.0',
  'supabase-js/2.39.3',
  'Dart/3.2 (dart:io)',
  'PostgREST/11.2.2',
];
const CITIES = [
  { city: 'Berlin', country: 'DE', continent: 'EU', colo: 'TXL', timezone: 'Europe/Berlin' },
  { city: 'Ashburn', country: 'US', continent: 'NA', colo: 'IAD', timezone: 'America/New_York' },
  { city: 'Singapore', country: 'SG', continent: 'AS', colo: 'SIN', timezone: 'Asia/Singapore' },
  { city: 'São Paulo', country: 'BR', continent: 'SA', colo: 'GRU', timezone: 'America/Sao_Paulo' },
];

function edgeRequest(random: Random): { path: string; method: string; search: string; status: number } {
  const roll = random();
  if (roll < 0.55) {
    const method = pick(random, ['GET', 'GET', 'GET', 'POST', 'PATCH', 'DELETE']);
    const status = pick(random, method === 'GET' ? [200, 200, 200, 200, 206, 304, 401, 404] : [201, 204, 400, 409, 500]);
    return { path: `/rest/v1/${pick(random, TABLES)}`, method, search: method === 'GET' ? `?select=*&limit=${integer(random, 1, 100)}` : '', status };
  }
  if (roll < 0.7) {
    return {
      path: `/auth/v1/${pick(random, ['token', 'user', 'signup', 'logout', 'verify'])}`,
      method: pick(random, ['GET', 'POST']),
      search: roll < 0.6 ? '?grant_type=password' : '',
      status: pick(random, [200, 200, 200, 400, 401, 422, 429]),
    };
  }
  if (roll < 0.85) {
    const method = pick(random, ['GET', 'GET', 'POST', 'PUT']);
    return {
      path: `/storage/v1/object/${pick(random, ['public/', 'sign/', ''])}${pick(random, BUCKETS)}/${hex(random, 8)}.png`,
      method,
      search: '',
      status: pick(random, [200, 200, 200, 400, 404, 500]),
    };
  }
  if (roll < 0.95) return { path: '/realtime/v1/websocket', method: 'GET', search: '?apikey=<redacted>&vsn=1.0.0', status: pick(random, [101, 101, 101, 403]) };
  return { path: `/functions/v1/${pick(random, FUNCTIONS)}`, method: 'POST', search: '', status: pick(random, [200, 200, 500, 546]) };
}

function edgeEvent(random: Random, project: string, at: Date): Record<string, unknown> {
  const { path, method, search, status } = edgeRequest(random);
  const ip = clientIp(random);
  const ray = hex(random, 16);
  const place = pick(random, CITIES);
  const userAgent = pick(random, USER_AGENTS);
  const host = `${project}.supabase.co`;
  const url = `https://${host}${path}${search}`;
  return {
    event_message: `${method} | ${status} | ${ip} | ${ray} | ${url} | ${userAgent}`,
    project,
    metadata: {
      logflare_worker: { worker_id: hex(random, 6).toUpperCase() },
      request: {
        cf: {
          asn: integer(random, 1000, 60000),
          city: place.city,
          colo: place.colo,
          continent: place.continent,
          country: place.country,
          httpProtocol: pick(random, ['HTTP/1.1', 'HTTP/2', 'HTTP/3']),
          timezone: place.timezone,
          tlsVersion: 'TLSv1.3',
          botManagement: { score: integer(random, 1, 99), verifiedBot: false, staticResource: path.startsWith('/storage') },
        },
        headers: {
          accept: 'application/json',
          cf_connecting_ip: ip,
          cf_ipcountry: place.country,
          cf_ray: ray,
          host,
          user_agent: userAgent,
          x_client_info: pick(random, ['supabase-js/2.39.3', 'supabase-flutter/2.3.0', null]),
          x_forwarded_proto: 'https',
          x_real_ip: ip,
        },
        host,
        method,
        path,
        protocol: 'https:',
        search,
        url,
      },
      response: {
        headers: {
          cf_cache_status: pick(random, ['DYNAMIC', 'HIT', 'MISS']),
          cf_ray: `${ray}-${place.colo}`,
          content_length: String(integer(random, 0, 50000)),
          content_type: 'application/json',
          date: at.toUTCString(),
          sb_gateway_version: '1',
        },
        origin_time: integer(random, 3, status >= 500 ? 3000 : 400),
        status_code: status,
      },
    },
  };
}

function postgresEvent(random: Random, project: string): Record<string, unknown> {
  const severity = pick(random, ['LOG', 'LOG', 'LOG', 'LOG', 'WARNING', 'ERROR', 'FATAL']);
  const message =
    severity === 'ERROR'
      ? pick(random, [
          'relation "public.todo" does not exist',
          'duplicate key value violates unique constraint "profiles_pkey"',
          'permission denied for table orders',
        ])
      : severity === 'FATAL'
        ? `password authentication failed for user "postgres" from ${ipv4(random)}`
        : pick(random, [
            'connection received: host=10.0.0.12 port=53482',
            'checkpoint complete: wrote 312 buffers (1.9%)',
            'PgBouncer auth request: postgres',
            'statement: SELECT 1',
          ]);
  return {
    event_message: message,
    project,
    metadata: {
      host: `db-${project}`,
      parsed: {
        backend_type: 'client backend',
        command_tag: pick(random, ['SELECT', 'INSERT', 'UPDATE', 'idle']),
        connection_from: `${ipv4(random)}:${integer(random, 1024, 65535)}`,
        database_name: 'postgres',
        error_severity: severity,
        process_id: integer(random, 1000, 60000),
        session_id: `${hex(random, 8)}.${hex(random, 4)}`,
        sql_state_code: severity === 'ERROR' ? '42P01' : '00000',
        user_name: pick(random, ['postgres', 'authenticator', 'supabase_admin']),
      },
    },
  };
}

function functionEdgeEvent(random: Random, project: string): Record<string, unknown> {
  const name = pick(random, FUNCTIONS);
  const method = pick(random, ['POST', 'POST', 'GET', 'OPTIONS']);
  const status = pick(random, [200, 200, 200, 201, 400, 500]);
  const url = `https://${project}.functions.supabase.co/${name}`;
  return {
    event_message: `${method} | ${status} | ${url}`,
    metadata: {
      deployment_id: `${project}_${uuid(random)}_${integer(random, 1, 40)}`,
      execution_time_ms: integer(random, 2, 2000),
      function_id: uuid(random),
      project_ref: project,
      request: {
        headers: { accept: '*/*', host: `${project}.functions.supabase.co`, user_agent: pick(random, USER_AGENTS), x_forwarded_for: clientIp(random) },
        host: `${project}.functions.supabase.co`,
        method,
        pathname: `/${name}`,
        protocol: 'https:',
        url,
      },
      response: { headers: { content_type: 'application/json' }, status_code: status },
      version: String(integer(random, 1, 40)),
    },
  };
}

function functionEvent(random: Random, project: string, at: Date): Record<string, unknown> {
  const level = pick(random, ['info', 'info', 'info', 'log', 'warning', 'error']);
  return {
    event_message:
      level === 'error'
        ? `Error: request to ${ipv4(random)} timed out`
        : pick(random, ['booted (time: 23ms)', 'Listening on http://localhost:9999/', 'sending welcome email', 'shutdown']),
    metadata: {
      deployment_id: `${project}-${uuid(random)}`,
      event_type: pick(random, ['log', 'log', 'Boot', 'Shutdown']),
      execution_id: uuid(random),
      function_id: uuid(random),
      level,
      project_ref: project,
      region: pick(random, ['aws-eu-central-1', 'aws-us-east-1', 'aws-ap-southeast-1']),
      timestamp: at.toISOString(),
    },
  };
}

function authEvent(random: Random, project: string, at: Date): Record<string, unknown> {
  const path = pick(random, ['/token', '/user', '/signup', '/logout', '/verify']);
  const status = pick(random, [200, 200, 200, 400, 401, 422]);
  const remote = clientIp(random);
  const fields = {
    component: 'api',
    level: status >= 400 ? 'error' : 'info',
    method: pick(random, ['GET', 'POST']),
    msg: status >= 400 ? 'request failed' : 'request completed',
    path,
    remote_addr: remote,
    status,
    time: at.toISOString(),
  };
  return {
    event_message: JSON.stringify(fields),
    project,
    metadata: {
      ...fields,
      host: `db-${project}`,
      request_id: uuid(random),
      duration: integer(random, 1000, 900000),
      error: status >= 400 ? 'invalid login credentials' : undefined,
    },
  };
}

function realtimeEvent(random: Random, project: string): Record<string, unknown> {
  const level = pick(random, ['info', 'info', 'error', 'warning']);
  return {
    event_message:
      level === 'error'
        ? 'Subscribing to PostgreSQL failed: {:error, "Subscription insert failed with 0 rows"}'
        : pick(random, ['Connected to tenant database', 'Channel joined: realtime:public:messages', 'Billing metrics: 42 messages']),
    metadata: {
      context: {
        application: 'realtime',
        file: 'lib/realtime_web/channels/realtime_channel.ex',
        line: integer(random, 10, 600),
        pid: `<0.${integer(random, 100, 9999)}.0>`,
        vm: { node: `realtime-prod@${ipv6(random)}` },
      },
      external_id: project,
      level,
      project,
    },
  };
}

function storageEvent(random: Random, project: string): Record<string, unknown> {
  return {
    event_message: pick(random, ['content-type is image/png', 'Object uploaded', 'Object not found', 'Bucket created', 'signed url generated']),
    metadata: {
      context: {
        host: `ip-10-${integer(random, 0, 255)}-${integer(random, 0, 255)}-${integer(random, 0, 255)}.eu-central-1.compute.internal`,
        pid: integer(random, 1, 64),
      },
      level: pick(random, ['info', 'info', 'warn', 'error']),
      project,
      reqId: `${hex(random, 16)}-DUB`,
      tenantId: project,
    },
  };
}

function restApiEvent(random: Random, project: string): Record<string, unknown> {
  return {
    event_message: pick(random, [
      'Attempting to connect to the database...',
      'Connection successful',
      'Listening on port 3000',
      'Schema cache loaded',
      `${ipv4(random)} - - "GET /${pick(random, TABLES)} HTTP/1.1" 200 - "" "${pick(random, USER_AGENTS)}"`,
    ]),
    metadata: { host: project },
    project,
  };
}

function poolerEvent(random: Random, project: string): Record<string, unknown> {
  return {
    event_message: `S-0x${hex(random, 12)}: postgres/${pick(random, ['postgres', 'authenticator'])}@127.0.0.1:5432 ${pick(random, ['new connection to server', 'closing because: client close request', 'login attempt'])} (from ${ipv4(random)}:${integer(random, 1024, 65535)})`,
    metadata: { host: `db-${project}` },
    project,
  };
}

function eventFor(source: SourceName, random: Random, project: string, at: Date): Record<string, unknown> {
  switch (source) {
    case 'edge_logs':
      return edgeEvent(random, project, at);
    case 'postgres_logs':
      return postgresEvent(random, project);
    case 'function_edge_logs':
      return functionEdgeEvent(random, project);
    case 'function_logs':
      return functionEvent(random, project, at);
    case 'auth_logs':
      return authEvent(random, project, at);
    case 'realtime_logs':
      return realtimeEvent(random, project);
    case 'storage_logs':
      return storageEvent(random, project);
    case 'rest_api_logs':
      return restApiEvent(random, project);
    case 'connection_pooler_logs':
      return poolerEvent(random, project);
  }
}

export function* demoEvents(options: DemoOptions): Generator<DemoEvent> {
  if (options.projects.length === 0) throw new Error('demo data needs at least one project');
  const fromMs = options.from.getTime();
  const toMs = options.to.getTime();
  if (!(toMs > fromMs)) throw new Error(`demo data needs from (${options.from.toISOString()}) before to (${options.to.toISOString()})`);
  const random = seeded(options.seed ?? 20240101);
  const totalWeight = SOURCE_WEIGHTS.reduce((sum, [, weight]) => sum + weight, 0);
  const lastHourFrom = Math.max(fromMs, toMs - 3_600_000);
  for (let made = 0; made < options.count; made += 1) {
    let roll = random() * totalWeight;
    const source = SOURCE_WEIGHTS.find(([, weight]) => (roll -= weight) < 0)?.[0] ?? 'edge_logs';
    const startMs = random() < LAST_HOUR_SHARE ? lastHourFrom : fromMs;
    const micros = Math.floor((startMs + random() * (toMs - startMs)) * 1000);
    const at = new Date(Math.floor(micros / 1000));
    const event = eventFor(source, random, pick(random, options.projects), at);
    yield { source, event: { timestamp: formatMicros(micros), ...event } };
  }
}
