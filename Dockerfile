# kcm's image: a static binary on distroless, running as non-root 65532.
# Build with `make docker-build IMG=...` (needs a Docker engine).

FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS
ARG TARGETARCH
ARG KCM_VERSION=v0.1.0-dev
WORKDIR /workspace

# Dependencies first, so that a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download

COPY main.go main.go
COPY internal/ internal/

RUN CGO_ENABLED=0 GOOS=${TARGETOS:-linux} GOARCH=${TARGETARCH} \
    go build -trimpath \
    -ldflags "-s -w -X github.com/kcm/kcm/internal/version.gitVersion=${KCM_VERSION}" \
    -o /kcm .

FROM gcr.io/distroless/static:nonroot
COPY --from=builder /kcm /kcm
USER 65532:65532
ENTRYPOINT ["/kcm"]
