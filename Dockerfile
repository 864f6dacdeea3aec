# Build the joist binary: static, no cgo.
FROM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH

WORKDIR /workspace
# Cache dependencies before copying the source so source edits don't re-download modules.
COPY go.mod go.sum ./
RUN go mod download

COPY cmd/ cmd/
COPY api/ api/
COPY solver/ solver/
COPY cloudprovider/ cloudprovider/
COPY controllers/ controllers/
COPY webhooks/ webhooks/

RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} go build -trimpath -ldflags="-s -w" -o joist ./cmd/joist

# Distroless static image, non-root.
FROM gcr.io/distroless/static:nonroot
WORKDIR /
COPY --from=builder /workspace/joist /joist
USER 65532:65532

ENTRYPOINT ["/joist"]
