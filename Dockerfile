# One Dockerfile, one image per service: docker-compose.yml builds each `target` (gateway is the default, last stage).
#   build    full workspace with development dependencies: pnpm install (from the manifests and lockfile only, so a
#            source change reuses its layer), pnpm build, then `pnpm deploy --prod` of each
#            service into /out/<service> (its dist/, the workspace libs' dist/ and its production dependencies only)
#   runtime  node slim, NODE_ENV=production, the non-root `node` user; no pnpm, no TypeScript, no sources
# The migrate step runs from the gateway image: node node_modules/@mdp/db/dist/migrate/cli.js deploy
# Every service runs `node <flags> dist/main.js` with scripts/service-command.ts's BUILT_SERVICE_NODE_FLAGS.
ARG NODE_IMAGE=node:20-bookworm-slim

FROM ${NODE_IMAGE} AS build
RUN npm install -g pnpm@12.18.0
WORKDIR /src
# Dependencies first, from what decides them alone: the workspace's manifests and lockfile, the bin the root links
# (`pnpm mdp`), and the Prisma schema @mdp/db's postinstall generates its client from. This layer is rebuilt only when
# one of them changes; a change to any other source reuses it and starts at `COPY . .`.
COPY package.json pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
COPY libs/core/package.json libs/core/
COPY libs/db/package.json libs/db/
COPY libs/metadata-tests/package.json libs/metadata-tests/
COPY libs/queues/package.json libs/queues/
COPY libs/schedules/package.json libs/schedules/
COPY libs/tasks/package.json libs/tasks/
COPY libs/webhooks/package.json libs/webhooks/
COPY services/evaluation-worker/package.json services/evaluation-worker/
COPY services/gateway/package.json services/gateway/
COPY services/truncation-worker/package.json services/truncation-worker/
COPY services/webhook-worker/package.json services/webhook-worker/
COPY bench/package.json bench/
COPY cli/package.json cli/
COPY cli/bin cli/bin
COPY prisma/schema.prisma prisma/
RUN pnpm install --frozen-lockfile
COPY . .
RUN pnpm build
# Sources and lockfiles pnpm deploy copies beside dist/ are not needed to run.
RUN for service in gateway truncation-worker evaluation-worker webhook-worker; do \
      pnpm --filter "$service" deploy --prod "/out/$service" \
      && rm -rf "/out/$service/src" "/out/$service/pnpm-lock.yaml" "/out/$service/pnpm-workspace.yaml" || exit 1; \
    done

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app
# Files stay owned by root: the services never write beside their code.
USER node
STOPSIGNAL SIGTERM

FROM runtime AS truncation-worker
COPY --from=build /out/truncation-worker /app
# The monitoring port: /health, /ready (PostgreSQL, Redis, the BullMQ worker) and Prometheus /metrics.
ENV HOST=0.0.0.0 TRUNCATION_WORKER_PORT=8081
EXPOSE 8081
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.TRUNCATION_WORKER_PORT + '/ready').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--max-semi-space-size=64", "--enable-source-maps", "--conditions=mdp-built", "dist/main.js"]

FROM runtime AS evaluation-worker
COPY --from=build /out/evaluation-worker /app
ENV HOST=0.0.0.0 EVALUATION_WORKER_PORT=8082
EXPOSE 8082
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.EVALUATION_WORKER_PORT + '/ready').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--max-semi-space-size=64", "--enable-source-maps", "--conditions=mdp-built", "dist/main.js"]

FROM runtime AS webhook-worker
COPY --from=build /out/webhook-worker /app
ENV HOST=0.0.0.0 WEBHOOK_WORKER_PORT=8083
EXPOSE 8083
HEALTHCHECK --interval=15s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.WEBHOOK_WORKER_PORT + '/ready').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--max-semi-space-size=64", "--enable-source-maps", "--conditions=mdp-built", "dist/main.js"]

FROM runtime AS gateway
COPY --from=build /out/gateway /app
ENV HOST=0.0.0.0 PORT=8080
EXPOSE 8080
HEALTHCHECK --interval=10s --timeout=5s --start-period=20s --retries=6 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/ready').then(r => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
CMD ["node", "--max-semi-space-size=64", "--enable-source-maps", "--conditions=mdp-built", "dist/main.js"]
