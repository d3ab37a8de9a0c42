# The production image: the service compiled to JavaScript (npm run build), run by node with the
# production dependencies only, as an unprivileged user. test/integration/artifact.test.ts starts
# the build with this file's ENV and CMD and runs its HEALTHCHECK. A deployment adds what production
# requires and no image can choose for it: OIDC_ISSUER, ADMIN_API_KEY, ERP_MODE (http, with
# ERP_BASE_URL) and DOCUMENT_STORE (s3, http, or local for one instance).
ARG NODE_IMAGE=node:24.21.0-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
COPY package.json package-lock.json ./
COPY client-sdk/package.json client-sdk/
RUN npm ci --no-audit --no-fund
COPY . .
RUN npm run build

FROM ${NODE_IMAGE} AS dependencies
WORKDIR /app
COPY package.json package-lock.json ./
COPY client-sdk/package.json client-sdk/
RUN npm ci --omit=dev --no-audit --no-fund && npm cache clean --force

FROM ${NODE_IMAGE}
WORKDIR /app
COPY --from=dependencies /app/node_modules node_modules
COPY --from=build /app/package.json ./
COPY --from=build /app/dist dist
RUN mkdir /data && chown node:node /data
USER node
ENV NODE_ENV=production
ENV PORT=3000
ENV DATA_DIR=/data
EXPOSE 3000
VOLUME /data
HEALTHCHECK --interval=10s --timeout=5s --start-period=60s --retries=3 CMD ["node", "-e", "fetch('http://127.0.0.1:' + process.env.PORT + '/livez').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Migrations as a job before a deploy: docker run --rm <image> node dist/server/cli/migrate.js
CMD ["node", "--v8-pool-size=0", "dist/server/main.js"]
