# The Joist manager image: `make docker-build` (needs a Docker engine).
# Stage 1 builds a static binary; stage 2 is distroless static, running as the nonroot user.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev

WORKDIR /workspace
# Modules first, so that a source edit does not download them again.
COPY go.mod go.sum ./
RUN go mod download

# Everything `go build ./cmd/joist` compiles; .dockerignore keeps tests' data, bench/ and docs out.
COPY . .
RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /joist ./cmd/joist

FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /joist /joist
USER 65532:65532
ENTRYPOINT ["/joist"]
