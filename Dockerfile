# One image for every service; docker-compose.yml picks the command.
FROM node:20-bookworm-slim
RUN npm install -g pnpm@12.18.0
WORKDIR /app
COPY . .
RUN pnpm install --frozen-lockfile
ENV NODE_ENV=production HOST=0.0.0.0
USER node
CMD ["pnpm", "--filter", "gateway", "start"]
