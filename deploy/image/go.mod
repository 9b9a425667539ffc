// Module image builds and reads the kubectl-hpa container image (make image, the in-cluster
// end-to-end test) with go-containerregistry, so the product module does not depend on it.
module github.com/kubectl-hpa/kubectl-hpa/deploy/image

go 1.26.0

require (
	github.com/google/go-cmp v0.7.0
	github.com/google/go-containerregistry v0.22.1
)

require (
	github.com/klauspost/compress v1.19.2 // indirect
	github.com/opencontainers/go-digest v1.0.0 // indirect
	github.com/opencontainers/image-spec v1.1.1 // indirect
	golang.org/x/sync v0.22.0 // indirect
)
