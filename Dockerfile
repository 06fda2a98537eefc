# A static image of the weir binary: docker build -t weir . && docker run
# --rm -v "$PWD:/work" weir run pipeline.yaml. It runs pipelines whose
# plugins are .wasm files; building plugins from source needs their
# toolchains, which this image leaves out (build them with weir plugin
# build on a machine that has them, or use a builder image of your own).
FROM golang:1.26 AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
ARG VERSION=devel
RUN CGO_ENABLED=0 go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION}" -o /out/weir ./cmd/weir \
 && mkdir -p /out/tmp /out/work /out/cache

FROM scratch
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/
COPY --from=build /out/weir /weir
COPY --from=build --chmod=1777 /out/tmp /tmp
COPY --from=build --chmod=1777 /out/cache /cache
COPY --from=build /out/work /work
ENV WEIR_CACHE_DIR=/cache
WORKDIR /work
USER 65534:65534
ENTRYPOINT ["/weir"]
CMD ["--help"]
