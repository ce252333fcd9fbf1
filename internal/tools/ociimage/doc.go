// Package ociimage builds container images from scratch, without a registry, a base image or a container
// engine: files of the build machine (static binaries, a CA bundle) become one layer, a configuration
// (entrypoint, command, user, environment, exposed ports, OCI labels org.opencontainers.image.*) is added,
// and the images of one or more platforms (linux/amd64, linux/arm64, ...) are written as one image index in
// an OCI image layout: a directory (WriteLayout) or an OCI archive, the layout in a tar file (WriteArchive).
//
// `ctr -n k8s.io images import ARCHIVE` (containerd), `podman load` and `skopeo copy oci-archive:...` read
// the archive; the reference it names is in the index's annotations io.containerd.image.name and
// org.opencontainers.image.ref.name. Images are reproducible: the same files, configuration and creation
// time give the same digests (file times are the creation time; owners are root).
//
// It is built on github.com/google/go-containerregistry. internal/tools/mkimage is its command line, for
// scripts (hack/node.sh's sandbox image, release images).
package ociimage
