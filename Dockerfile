# Two images from one file, both running the compiled JavaScript with plain node (no TypeScript
# loader) as the unprivileged user `node`:
#   docker build --target query .    the query service (the default target)
#   docker build --target ingest .   the ingest worker
# The compose file builds each with its target.

# build: every dependency, then `npm run build` into dist/
FROM node:20-bookworm-slim AS build
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY shared ./shared
COPY ingest ./ingest
COPY queries ./queries
COPY src ./src
COPY scripts ./scripts
COPY stack ./stack
RUN npm run build

# production dependencies only (prebuilt native modules for DuckDB, snappy, lz4 come with them)
FROM node:20-bookworm-slim AS production-dependencies
WORKDIR /build
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

# runtime: package.json (it makes dist/ ES modules), production node_modules and dist/, nothing else
FROM node:20-bookworm-slim AS runtime
WORKDIR /app
ENV NODE_ENV=production
COPY package.json ./
COPY --from=production-dependencies /build/node_modules ./node_modules
COPY --from=build /build/dist ./dist
USER node

FROM runtime AS ingest
# the start ingest/worker-start.ts gives npm start and the benchmarks: two malloc arenas, a 136 MB old generation, 8 MB semi-spaces
ENV INGEST_HOST=0.0.0.0 INGEST_PORT=4001 MALLOC_ARENA_MAX=2
EXPOSE 4001
# healthy while the worker is in its consumer group (its /health is 503 while starting or failed)
HEALTHCHECK --interval=15s --timeout=5s --start-period=60s --retries=3 CMD ["node", "dist/scripts/healthcheck.js", "ingest"]
CMD ["node", "--enable-source-maps", "--max-old-space-size=136", "--max-semi-space-size=8", "dist/ingest/main.js"]

FROM runtime AS query
# the start shared/query-service-start.ts gives npm start and the benchmarks: two malloc arenas, a 4 MB semi-space, V8 optimized for size
ENV HOST=0.0.0.0 PORT=4000 MALLOC_ARENA_MAX=2
EXPOSE 4000
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 CMD ["node", "dist/scripts/healthcheck.js", "query"]
CMD ["node", "--enable-source-maps", "--max-semi-space-size=4", "--optimize-for-size", "dist/src/main.js"]
