# For those with Docker; `make images` builds the same images without it.
#   docker build --target installer -t shimkit-installer:dev .
#   docker build --target operator  -t shimkit-operator:dev .
FROM golang:1.26-bookworm AS build
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/shimkit-installer ./cmd/shimkit-installer && \
    CGO_ENABLED=0 go build -trimpath -ldflags "-s -w" -o /out/shimkit-operator ./cmd/shimkit-operator

FROM scratch AS installer
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/shimkit-installer /shimkit-installer
ENTRYPOINT ["/shimkit-installer"]

FROM scratch AS operator
COPY --from=build /etc/ssl/certs/ca-certificates.crt /etc/ssl/certs/ca-certificates.crt
COPY --from=build /out/shimkit-operator /shimkit-operator
USER 65532
ENTRYPOINT ["/shimkit-operator"]
