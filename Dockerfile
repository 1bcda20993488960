# kcm's image: a static binary on distroless, running as non-root 65532.
# Build with `make docker-build IMG=...` (needs a Docker engine): it passes KCM_VERSION, which is
# `git describe --tags --dirty` (the build context has no .git), v0.1.0-dev without a tag.

# Base images are pinned by digest (the tag says which it is), so that a rebuild of one commit
# uses the same compiler and the same base layer; bump tag and digest together.
FROM --platform=$BUILDPLATFORM golang:1.26@sha256:3aff6657219a4d9c14e27fb1d8976c49c29fddb70ba835014f477e1c70636647 AS builder
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

FROM gcr.io/distroless/static:nonroot@sha256:e2e927ec666bae08560abb3c55d0659eceabb657f56b6782ab500a9fc7f555e3
COPY --from=builder /kcm /kcm
USER 65532:65532
ENTRYPOINT ["/kcm"]
