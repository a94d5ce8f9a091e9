// Package deploy holds what runs iggo in containers, and its smoke test.
// It has no production code; the Go files here are the package doc and
// the test.
//
//   - Dockerfile: a FROM scratch image around static binaries built on the
//     host (make docker-image): iggo-server (entrypoint), iggo (the CLI;
//     `iggo ping` is the health check) and iggo-demo (package deploy/demo).
//     Configuration is IGGY_* variables only; /data is the volume.
//   - docker-compose.yml: three clustered nodes on a private bridge network
//     with static addresses, the roster entirely in IGGY_CLUSTER_*
//     variables, a demo pre-shared key, one named volume per node, client
//     ports published on the host, and the one-shot `demo` service
//     (profile "demo").
//   - docker-compose.single.yml: the same for one node.
//   - config/cluster.toml: the compose roster as a configuration file.
//
// config_test.go loads what the containers get (the Dockerfile's ENV, each
// compose file's environment, the example file) through the server's own
// loader, without Docker. The smoke test (compose_test.go) builds the image with the Makefile,
// starts a compose project under a unique name, subnet and free host
// ports, waits for the health checks, runs the demo service, kills a node
// and runs it again, and always removes the project, its volumes and the
// image. It needs a Docker engine with Compose and fails (never skips)
// without one.
package deploy
