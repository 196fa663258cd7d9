FROM node:20-bookworm
WORKDIR /app
COPY package.json package-lock.json tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY bench ./bench
COPY bin ./bin
RUN npm ci && npm prune --omit=dev --ignore-scripts
ENV NODE_ENV=production
EXPOSE 8080
CMD ["node", "dist/src/main.js"]
