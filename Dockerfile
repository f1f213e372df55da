# Build: the Bun image compiles dist/svc; run: a small non-root image with only the binary.
FROM oven/bun:1.4.5 AS build
WORKDIR /src
COPY package.json bun.lock ./
RUN bun install --frozen-lockfile
COPY . .
RUN bun run build

FROM debian:bookworm-slim
RUN useradd --system --uid 10001 --home /data svc && mkdir -p /data && chown svc /data
COPY --from=build /src/dist/svc /usr/local/bin/svc
USER svc
ENV SVC_HOST=0.0.0.0 \
    SVC_PORT=8080 \
    SVC_STATE_DIR=/data \
    SVC_JOIN_STATE_DB=/data/join_state.sqlite3
VOLUME ["/data"]
EXPOSE 8080
HEALTHCHECK --interval=30s --timeout=3s CMD ["svc", "health"]
ENTRYPOINT ["svc"]
CMD ["serve"]
