# syntax=docker/dockerfile:1
# salesync: a build stage (npm ci + tsc), then a slim runtime with production dependencies only.
#   docker build -t salesync .
#   docker run --rm -e SALES_API_BASE_URL=... -e SALES_API_KEY=... -v "$PWD/data:/data" salesync sync
# Commands are salesync's own (`sync`, `worker`, `schedule`, `status --check`...); the default is `worker`.

FROM node:20-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
# No scripts: `prepare` would build before the sources are here (the build is the step below).
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json ./
COPY scripts/copy-assets.mjs ./scripts/copy-assets.mjs
COPY src ./src
COPY jobs ./jobs
COPY bench ./bench
# What the benches share with the tests (the Redis starter, the limiter worker): part of the build's include graph.
COPY devtools ./devtools
# npm run build: tsc, then the files it does not emit (the limiter's Lua scripts) copied into dist/.
RUN npm run build && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM node:20-bookworm-slim AS runtime
ENV NODE_ENV=production \
    WAREHOUSE_PATH=/data/warehouse.duckdb \
    HOME=/tmp
WORKDIR /app
# What the built CLI reads at run time: package.json (its version, and the project root), the build (the Lua
# scripts included) and the fixed tables' DDL (schema/): what `npm pack` ships.
COPY --from=build /app/package.json ./package.json
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY schema ./schema
# Owner-only files (the warehouse is created 0600) belong to whoever runs the container: compose runs it as
# the host user (SALESYNC_UID), so the analysts' file on the host is theirs to read.
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000 9464
ENTRYPOINT ["node", "dist/src/cli/main.js"]
CMD ["worker"]
