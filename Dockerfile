# One image for both processes: the compose file runs it as the ingest worker and as the query service.
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts=false && npm cache clean --force
COPY tsconfig.json ./
COPY shared ./shared
COPY ingest ./ingest
COPY queries ./queries
COPY src ./src
COPY scripts ./scripts
USER node
ENV HOST=0.0.0.0 PORT=4000
EXPOSE 4000 4001
CMD ["node", "--import", "tsx", "src/main.ts"]
