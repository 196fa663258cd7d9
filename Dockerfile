FROM node:20-bookworm
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
COPY bin ./bin
COPY scripts ./scripts
COPY catalogue ./catalogue
# `npm install` runs the build (prepare: server, operator tool and the dashboard's web app).
RUN npm install --no-audit --no-fund && npm prune --omit=dev --ignore-scripts
# Not root: the service writes only its data directory.
RUN mkdir -p /data && chown node:node /data
USER node
ENV NODE_ENV=production
EXPOSE 8080
# V8 collects garbage on the main thread: see the README (benchmarks) for why.
CMD ["node", "--single-threaded-gc", "--heap-growing-percent=100", "dist/src/main.js"]
